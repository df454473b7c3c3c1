package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
)

// Asking the person on the terminal: an approval is yes or no; a tool's
// question is its form, one line per field, a choice as numbered options.
// The end of the input cancels, and an empty line skips a choice.

// text is the message key in the session's locale.
func (s *session) text(key string, args ...string) string {
	return s.c.msgs.Message(key, s.c.local, args...)
}

// line reads the next line of input; false at its end.
func (s *session) line() (string, bool) {
	if !s.in.Scan() {
		fmt.Fprintln(s.stderr)
		return "", false
	}
	return strings.TrimSpace(s.in.Text()), true
}

// yes reads a line and reports whether it says yes in the locale.
func (s *session) yes() (yes, ok bool) {
	l, ok := s.line()
	return slices.Contains(strings.Split(s.text("chat.yes"), ","), strings.ToLower(l)), ok
}

// answer asks the person what p waits for.
func (s *session) answer(p *chatadapter.Pending) ask.ElicitResult {
	if p.Question == nil {
		fmt.Fprintln(s.stderr, s.text("chat.approval", "tool", p.FriendlyName, "args", string(p.Call.Args), "summary", p.Summary))
		if cs := p.Preview.Changeset; cs != nil { // the rows it changes, exactly (notes.Changesets)
			for _, row := range strings.Split(cs.String(), "\n") {
				fmt.Fprintln(s.stderr, "  "+row)
			}
		}
		fmt.Fprint(s.stderr, s.text("chat.approve"))
		if yes, _ := s.yes(); yes {
			return ask.ElicitResult{Action: ask.Accept}
		}
		return ask.ElicitResult{Action: ask.Decline}
	}
	fmt.Fprintln(s.stderr, p.Prompt)
	fields, err := formFields(p.Question.Schema)
	if err != nil || len(fields) == 0 { // a confirmation
		fmt.Fprint(s.stderr, s.text("chat.confirm"))
		switch yes, ok := s.yes(); {
		case !ok:
			return ask.ElicitResult{Action: ask.Cancel}
		case yes:
			return ask.ElicitResult{Action: ask.Accept}
		}
		return ask.ElicitResult{Action: ask.Decline}
	}
	form := map[string]any{}
	for _, f := range fields {
		v, action := s.field(f)
		if action != ask.Accept {
			return ask.ElicitResult{Action: action}
		}
		form[f.name] = v
	}
	content, _ := json.Marshal(form)
	return ask.ElicitResult{Action: ask.Accept, Content: content}
}

// field asks for one field's value.
func (s *session) field(f field) (any, string) {
	if len(f.options) > 0 {
		for i, o := range f.options {
			fmt.Fprintln(s.stderr, s.text("chat.option", "n", strconv.Itoa(i+1), "title", o.Title))
		}
		fmt.Fprint(s.stderr, s.text("chat.choose", "n", strconv.Itoa(len(f.options))))
		l, ok := s.line()
		n, err := strconv.Atoi(l)
		switch {
		case !ok:
			return nil, ask.Cancel
		case err != nil || n < 1 || n > len(f.options):
			return nil, ask.Decline
		}
		return f.options[n-1].Const, ask.Accept
	}
	fmt.Fprint(s.stderr, s.text("chat.field", "title", f.title))
	if f.typ == "boolean" {
		fmt.Fprint(s.stderr, s.text("chat.confirm"))
		yes, ok := s.yes()
		if !ok {
			return nil, ask.Cancel
		}
		return yes, ask.Accept
	}
	l, ok := s.line()
	if !ok {
		return nil, ask.Cancel
	}
	if f.typ == "integer" || f.typ == "number" {
		n, err := strconv.ParseFloat(l, 64)
		if err != nil {
			return nil, ask.Decline
		}
		return n, ask.Accept
	}
	return l, ask.Accept
}

// field is one property of a question's form.
type field struct {
	name, title, typ string
	options          []option // a choice: oneOf of {const, title}, or enum
}

type option struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// formFields reads the properties of a form's schema, in their order.
func formFields(schema json.RawMessage) ([]field, error) {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil || len(s.Properties) == 0 {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(s.Properties))
	if _, err := d.Token(); err != nil { // {
		return nil, err
	}
	var fields []field
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		var p struct {
			Type  string   `json:"type"`
			Title string   `json:"title"`
			OneOf []option `json:"oneOf"`
			Enum  []any    `json:"enum"`
		}
		if err := d.Decode(&p); err != nil {
			return nil, err
		}
		f := field{name: t.(string), title: p.Title, typ: p.Type, options: p.OneOf}
		if f.title == "" {
			f.title = f.name
		}
		for _, e := range p.Enum {
			f.options = append(f.options, option{Const: e, Title: fmt.Sprint(e)})
		}
		fields = append(fields, f)
	}
	return fields, nil
}
