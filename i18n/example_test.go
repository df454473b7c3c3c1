package i18n_test

import (
	"fmt"
	"log"
	"testing/fstest"

	"github.com/llmtool/llmtool/i18n"
)

// Friendly names come from the catalog in the locale, its language or
// English, then from the tool's own label (llmtool.FriendlyName), then
// from llmtool's embedded English, and last from the tool's name.
func ExampleCatalog_FriendlyName() {
	msgs := new(i18n.Catalog)
	if err := msgs.AddJSON("de", []byte(`{"llm.tools.create_note": "Notiz anlegen"}`)); err != nil {
		log.Fatal(err)
	}
	for _, locale := range []string{"en", "de-CH", "fr"} {
		fmt.Printf("%s: %s\n", locale, msgs.FriendlyName("create_note", "Create note", locale))
	}
	fmt.Println(msgs.FriendlyName("man", "", "en"))
	fmt.Println(msgs.FriendlyName("get_time", "", "de"))
	// Output:
	// en: Create note
	// de-CH: Notiz anlegen
	// fr: Create note
	// Read the manual
	// get_time
}

// A host ships one JSON file per locale and adds them all at start-up;
// keys of friendly names are ToolKey(tool).
func ExampleCatalog_AddFS() {
	// In a host: //go:embed locales/*.json
	//            var locales embed.FS
	locales := fstest.MapFS{
		"locales/de.json":    {Data: []byte(`{"llm.tools.create_note": "Notiz anlegen"}`)},
		"locales/pt-BR.json": {Data: []byte(`{"llm.tools.create_note": "Criar nota"}`)},
	}
	msgs := new(i18n.Catalog)
	if err := msgs.AddFS(locales, "locales"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(i18n.ToolKey("create_note"))
	fmt.Println(msgs.Lookup(i18n.ToolKey("create_note"), "pt_BR"))
	// Output:
	// llm.tools.create_note
	// Criar nota true
}
