// Package i18n holds the message catalog that gives tools their labels in
// the user's language: the friendly names a chat UI shows while a tool
// runs, such as "Create note" or "Notiz anlegen".
//
// # Keys
//
// A tool's friendly name is the message [ToolKey](tool),
// "llm.tools.<name>". A host ships its translations as JSON objects of
// key-message pairs, one file per locale (locales/de.json,
// locales/pt-BR.json), and adds them with [Catalog.AddFS].
//
// # Lookup
//
// A lookup tries the locale ("pt-BR"), its language ("pt"), then English:
// the host's English first, then the English embedded in this package (the
// labels of llmtool's own tools, such as the man tool). Locale names are
// normalized: "pt_BR", "PT-br" and "pt-BR" are one locale. For a friendly
// name, the tool's own English label (llmtool.FriendlyName) comes between
// the host's English and the embedded English, and the tool's name is the
// last resort: see [Catalog.FriendlyName].
//
// # Messages with values
//
// Other messages name the values they show in braces, such as
// "{tool}… done" or "{n} deleted"; [Catalog.Message] looks one up and puts
// the values in, so a translation may order them as its language needs.
// The chat adapter's own messages (keys "llm.chat.…": event lines,
// approval and question prompts, previews) are embedded in English like
// the labels of llmtool's tools, and a host translates them in the same
// files as its tools' names.
//
// The words of a changed row (keys "llm.change.…", such as "Delete
// {what}", embedded in English) and a host's nouns and columns for them
// ("llm.entities.<kind>", "llm.entities.<kind>.<column>": see
// llmtool.Entity.NameColumn) are in the same files.
//
// # Use with llmtool
//
// Friendly names and the chat's lines are for the people watching a chat,
// not for the model: a host builds one Catalog and passes it to the chat
// adapter (chatadapter.Options.Messages), which labels its events from it
// in each context's locale, and to the registry (llmtool.Options.Messages),
// which words the rows a call changes in the call's locale
// (llmtool.Call.Locale). The host may add locales to it later. This
// package imports nothing of llmtool's.
package i18n

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
)

// ToolKey returns the message key of a tool's friendly name,
// "llm.tools.<name>".
func ToolKey(tool string) string { return toolKeyPrefix + tool }

const toolKeyPrefix = "llm.tools."

//go:embed en.json
var embeddedEN []byte

// builtin is the embedded English.
var builtin = sync.OnceValue(func() map[string]string {
	var m map[string]string
	if err := json.Unmarshal(embeddedEN, &m); err != nil {
		panic(fmt.Sprintf("i18n: embedded en.json: %v", err)) // a build defect
	}
	return m
})

// Catalog holds messages per locale. The zero value is an empty catalog,
// ready to use; a nil *Catalog answers lookups from the embedded English
// alone. A Catalog is safe for concurrent use: a host may add locales
// while lookups run.
type Catalog struct {
	mu      sync.RWMutex
	locales map[string]map[string]string // normalized locale → key → message
}

// normLocale turns "pt_BR" and "PT-br" into "pt-br".
func normLocale(l string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(l)), "_", "-")
}

// Add adds messages for a locale (such as "de" or "pt-BR"), replacing
// entries with the same keys. Keys of friendly names are ToolKey(tool).
func (c *Catalog) Add(locale string, msgs map[string]string) {
	loc := normLocale(locale)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locales == nil {
		c.locales = make(map[string]map[string]string)
	}
	dst := c.locales[loc]
	if dst == nil {
		dst = make(map[string]string, len(msgs))
		c.locales[loc] = dst
	}
	for k, v := range msgs {
		dst[k] = v
	}
}

// AddJSON adds messages for a locale from a JSON object of key-message
// pairs, such as {"llm.tools.create_note": "Notiz anlegen"}.
func (c *Catalog) AddJSON(locale string, data []byte) error {
	var msgs map[string]string
	if err := json.Unmarshal(data, &msgs); err != nil {
		return fmt.Errorf("i18n: messages for %q: %w", locale, err)
	}
	c.Add(locale, msgs)
	return nil
}

// AddFS adds every <locale>.json file in dir of fsys (such as an embed.FS
// holding locales/de.json and locales/fr.json) with AddJSON. Other files
// are ignored.
func (c *Catalog) AddFS(fsys fs.FS, dir string) error {
	files, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return fmt.Errorf("i18n: AddFS: %w", err)
	}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return fmt.Errorf("i18n: AddFS: %w", err)
		}
		if err := c.AddJSON(strings.TrimSuffix(path.Base(f), ".json"), data); err != nil {
			return err
		}
	}
	return nil
}

// Lookup looks key up for locale: the locale, its language, the host's
// English, then the embedded English. It reports false if no entry
// exists.
func (c *Catalog) Lookup(key, locale string) (string, bool) {
	if v, ok := c.added(key, locale); ok {
		return v, true
	}
	return embedded(key)
}

// Message returns the message key in locale (looked up as Lookup does),
// with each "{name}" replaced by its value: args are names and values in
// pairs, such as Message("llm.chat.call.done", "de", "tool", "Notiz
// anlegen"). A key without an entry gives the key itself, so a missing
// translation shows where it is missing; a name without a value, or a
// placeholder without an argument, is left as it is.
func (c *Catalog) Message(key, locale string, args ...string) string {
	msg, ok := c.Lookup(key, locale)
	if !ok {
		return key
	}
	if len(args) < 2 || !strings.Contains(msg, "{") {
		return msg
	}
	pairs := make([]string, 0, len(args)&^1)
	for i := 0; i+1 < len(args); i += 2 {
		pairs = append(pairs, "{"+args[i]+"}", args[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(msg)
}

// Locales returns the locales the catalog has messages for, normalized
// ("pt-br") and sorted, "en" always among them: the embedded English
// answers every lookup that nothing else does. A host lists them to
// refuse a locale it has no messages for.
func (c *Catalog) Locales() []string {
	set := map[string]bool{"en": true}
	if c != nil {
		c.mu.RLock()
		for l, msgs := range c.locales {
			if len(msgs) > 0 {
				set[l] = true
			}
		}
		c.mu.RUnlock()
	}
	return slices.Sorted(maps.Keys(set))
}

// Has reports whether the catalog has messages for locale or its
// language ("de-AT" counts with messages for "de"); English always
// counts.
func (c *Catalog) Has(locale string) bool {
	loc := normLocale(locale)
	lang, _, _ := strings.Cut(loc, "-")
	return loc == "" || lang == "en" || slices.Contains(c.Locales(), loc) || slices.Contains(c.Locales(), lang)
}

// FriendlyName returns the label a chat UI shows for tool in locale: the
// entry ToolKey(tool) for the locale, its language or the host's English;
// else defined, the tool's own English label (its llmtool.FriendlyName,
// "" if it has none); else the embedded English; else the tool's name.
func (c *Catalog) FriendlyName(tool, defined, locale string) string {
	key := ToolKey(tool)
	if v, ok := c.added(key, locale); ok {
		return v
	}
	if defined != "" {
		return defined
	}
	if v, ok := embedded(key); ok {
		return v
	}
	return tool
}

// added looks key up among the host's messages: the locale, its language,
// then English.
func (c *Catalog) added(key, locale string) (string, bool) {
	if c == nil {
		return "", false
	}
	loc := normLocale(locale)
	var buf [3]string
	chain := buf[:0]
	if loc != "" && loc != "en" {
		chain = append(chain, loc)
		if lang, _, ok := strings.Cut(loc, "-"); ok && lang != "en" {
			chain = append(chain, lang)
		}
	}
	chain = append(chain, "en")
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, l := range chain {
		if v, ok := c.locales[l][key]; ok && v != "" {
			return v, true
		}
	}
	return "", false
}

func embedded(key string) (string, bool) {
	v, ok := builtin()[key]
	return v, ok && v != ""
}
