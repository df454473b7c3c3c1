package mcpadapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmtool/llmtool/internal/text"
)

// structuredPointer is the text block of a structured result too large to
// copy (Options.TextCopyLimit): where the result is, its size, and the
// length of each top-level list, so that the text still says what came
// back: "The result is in structuredContent (48,213 bytes; notes: 1,240
// items)."
func structuredPointer(js []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The result is in structuredContent (%s bytes", text.Group(len(js)))
	d := json.NewDecoder(bytes.NewReader(js))
	if tok, err := d.Token(); err == nil && tok == json.Delim('{') {
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				break
			}
			var val json.RawMessage
			if err := d.Decode(&val); err != nil {
				break
			}
			if len(val) == 0 || val[0] != '[' {
				continue
			}
			var items []json.RawMessage
			if json.Unmarshal(val, &items) != nil {
				continue
			}
			fmt.Fprintf(&b, "; %s: %s item", tok, text.Group(len(items)))
			if len(items) != 1 {
				b.WriteString("s")
			}
		}
	}
	b.WriteString(").")
	return b.String()
}
