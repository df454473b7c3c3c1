package chatadapter

import (
	"encoding/json"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/chatadapter/internal/ordered"
)

// Gemini: one tool holding functionDeclarations (a function without
// parameters has none), functionCall parts, functionResponse parts in
// one user content (inline data for a rich result).
type gemini struct{}

func (gemini) definition(name, desc json.RawMessage, params any, _ bool) object {
	def := object{{"name", name}, {"description", desc}}
	if params != nil {
		def = append(def, member{"parameters", params})
	}
	return def
}

// parameters are the schema in the OpenAPI 3.0 subset Gemini accepts;
// a function without parameters has none.
func (gemini) parameters(c *converter, schema []byte, _ bool) (any, error) {
	o, err := c.object(schema)
	if err != nil {
		return nil, err
	}
	params, err := c.gemini(o, "")
	if p, _ := o.Get("properties"); err == nil && len(asObject(p)) == 0 {
		return nil, nil
	}
	return params, err
}

func (gemini) tools(defs []any) any { return []any{object{{"functionDeclarations", defs}}} }

func (gemini) forms() string { return `a response, its content or its parts array` }

func (gemini) searchTool() (json.RawMessage, string, string) { return nil, "", "" }

func (gemini) parse(turn []byte) ([]ToolCall, error) { return parseGemini(turn) }

func (gemini) results(outcomes []Outcome) []json.RawMessage {
	shape := Gemini
	parts := make([]any, len(outcomes))
	for i, o := range outcomes {
		fr := object{}
		if o.Call.ID != "" {
			fr = append(fr, member{"id", o.Call.ID})
		}
		fr = append(fr, member{"name", o.Call.Name})
		if rich(o.Result) {
			fr = append(fr, member{"response", object{{"output", richText(o.Result.Content, shape, inResults)}}})
			if media := geminiParts(o.Result.Content); len(media) > 0 {
				fr = append(fr, member{"parts", media})
			}
		} else {
			fr = append(fr, member{"response", json.RawMessage(resultJSON(o.Result))})
		}
		parts[i] = object{{"functionResponse", fr}}
	}
	return []json.RawMessage{ordered.Append(nil, object{{"role", json.RawMessage(`"user"`)}, {"parts", parts}})}
}

func (gemini) message(role string, parts []llmtool.Content) json.RawMessage {
	where := role + " messages"
	if role != "user" {
		role = "model"
	}
	gparts := make([]any, 0, len(parts))
	for _, p := range parts {
		if p.Data != nil {
			gparts = append(gparts, object{{"inlineData", object{{"mimeType", p.MIMEType}, {"data", p.Data}}}})
		} else {
			gparts = append(gparts, object{{"text", richText([]llmtool.Content{p}, Gemini, where)}})
		}
	}
	return ordered.Append(nil, object{{"role", role}, {"parts", gparts}})
}

func parseGemini(turn []byte) ([]ToolCall, error) {
	type part struct {
		FunctionCall *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
	}
	var parts []part
	if turn[0] == '[' {
		if err := json.Unmarshal(turn, &parts); err != nil {
			return nil, err
		}
	} else {
		var r struct {
			Candidates []struct {
				Content struct {
					Parts []part `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
			Parts []part `json:"parts"`
		}
		if err := json.Unmarshal(turn, &r); err != nil {
			return nil, err
		}
		parts = r.Parts
		if len(r.Candidates) > 0 {
			parts = r.Candidates[0].Content.Parts
		}
	}
	var calls []ToolCall
	for _, p := range parts {
		if fc := p.FunctionCall; fc != nil {
			calls = append(calls, ToolCall{ID: fc.ID, Name: fc.Name, Args: fc.Args})
		}
	}
	return calls, nil
}

// geminiParts renders the binary parts of a rich result as a
// functionResponse's inline data parts; richText names them in the output.
func geminiParts(parts []llmtool.Content) []any {
	var out []any
	for _, p := range parts {
		if p.Data != nil {
			out = append(out, object{{"inlineData", object{{"mimeType", p.MIMEType}, {"data", p.Data}}}})
		}
	}
	return out
}
