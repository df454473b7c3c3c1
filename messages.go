package llmtool

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
)

//go:embed locales/en.json
var embeddedEN []byte

// MessageKey returns the message catalog key of a tool's friendly name,
// "llm.tools.<name>".
//
// Chat UIs show what a tool is doing in the user's language ("Create note",
// "Notiz anlegen"), not its name. The labels come from a message catalog
// keyed "llm.tools.<name>" (MessageKey), per registry:
//
//   - English ships with llmtool (an embedded JSON file with the labels of
//     its own tools), and FriendlyName at definition fills a tool's English
//     entry;
//   - a host adds locales, or overrides English, with AddMessages,
//     AddMessagesJSON or AddLocales;
//   - a lookup tries the locale ("pt-BR"), its language ("pt"), then
//     English, then falls back to the tool's name.
func MessageKey(tool string) string { return "llm.tools." + tool }

const toolKeyPrefix = "llm.tools."

// messages is a registry's message catalog.
type messages struct {
	once    sync.Once
	builtin map[string]string // embedded English

	mu      sync.RWMutex
	locales map[string]map[string]string // added by the host
}

func (m *messages) base() map[string]string {
	m.once.Do(func() {
		if err := json.Unmarshal(embeddedEN, &m.builtin); err != nil {
			panic(fmt.Sprintf("llmtool: embedded locales/en.json: %v", err)) // a build defect
		}
	})
	return m.builtin
}

// normLocale turns "pt_BR" and "PT-br" into "pt-br".
func normLocale(l string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(l)), "_", "-")
}

// AddMessages adds messages for a locale (such as "de" or "pt-BR"),
// replacing entries with the same keys. Keys of friendly names are
// MessageKey(tool).
func (r *Registry) AddMessages(locale string, msgs map[string]string) {
	m := &r.msgs
	loc := normLocale(locale)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locales == nil {
		m.locales = make(map[string]map[string]string)
	}
	dst := m.locales[loc]
	if dst == nil {
		dst = make(map[string]string, len(msgs))
		m.locales[loc] = dst
	}
	for k, v := range msgs {
		dst[k] = v
	}
}

// AddMessagesJSON adds messages for a locale from a JSON object of
// key-message pairs, such as {"llm.tools.create_note": "Notiz anlegen"}.
func (r *Registry) AddMessagesJSON(locale string, data []byte) error {
	var msgs map[string]string
	if err := json.Unmarshal(data, &msgs); err != nil {
		return fmt.Errorf("llmtool: messages for %q: %w", locale, err)
	}
	r.AddMessages(locale, msgs)
	return nil
}

// AddLocales adds every <locale>.json file in dir of fsys (such as an
// embed.FS holding locales/de.json and locales/fr.json) with
// AddMessagesJSON.
func (r *Registry) AddLocales(fsys fs.FS, dir string) error {
	files, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return fmt.Errorf("llmtool: AddLocales: %w", err)
	}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return fmt.Errorf("llmtool: AddLocales: %w", err)
		}
		if err := r.AddMessagesJSON(strings.TrimSuffix(path.Base(f), ".json"), data); err != nil {
			return err
		}
	}
	return nil
}

// Message looks key up for locale: the locale, its language, then English
// (the host's English, the FriendlyName of the tool a MessageKey names,
// llmtool's embedded English). It reports false if no entry exists.
func (r *Registry) Message(key, locale string) (string, bool) {
	m := &r.msgs
	loc := normLocale(locale)
	chain := make([]string, 0, 3)
	if loc != "" && loc != "en" {
		chain = append(chain, loc)
		if lang, _, ok := strings.Cut(loc, "-"); ok && lang != "en" {
			chain = append(chain, lang)
		}
	}
	chain = append(chain, "en")
	m.mu.RLock()
	for _, l := range chain {
		if v, ok := m.locales[l][key]; ok && v != "" {
			m.mu.RUnlock()
			return v, true
		}
	}
	m.mu.RUnlock()
	if tool, ok := strings.CutPrefix(key, toolKeyPrefix); ok {
		r.mu.RLock()
		e := r.tools[tool]
		r.mu.RUnlock()
		if e != nil && e.tool.spec.FriendlyName != "" {
			return e.tool.spec.FriendlyName, true
		}
	}
	if v, ok := m.base()[key]; ok && v != "" {
		return v, true
	}
	return "", false
}

// FriendlyName returns the label a chat UI shows for a tool in locale, such
// as "Create note": the catalog entry MessageKey(tool), looked up as by
// Message, else the tool's name.
func (r *Registry) FriendlyName(tool, locale string) string {
	if v, ok := r.Message(MessageKey(tool), locale); ok {
		return v
	}
	return tool
}
