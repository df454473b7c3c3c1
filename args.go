package llmtool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/llmtool/llmtool/internal/jsonenc"
	"github.com/llmtool/llmtool/internal/schema"
)

// The arguments of a call on their way in, and its result on its way out.

// prepare turns the model's arguments into validated JSON for In and the
// set of top-level defaults to set on In after decoding it.
func (t *Tool) prepare(raw json.RawMessage) ([]byte, uint64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, 0, InvalidArgs("arguments: not valid JSON (%v). Send one JSON object, such as %s.", err, t.example())
		}
		raw = bytes.TrimSpace([]byte(s))
		if len(raw) > 0 && raw[0] != '{' {
			return nil, 0, InvalidArgs("arguments: expected a JSON object, got a string. Send one JSON object, such as %s.", t.example())
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, 0, InvalidArgs("arguments: expected a JSON object, got %s. Send one JSON object, such as %s.", jsonKind(raw), t.example())
	}
	v, err := schema.DecodeArguments(raw)
	if err != nil {
		return nil, 0, InvalidArgs("arguments: not valid JSON (%v). Send one JSON object, such as %s.", err, t.example())
	}
	// Models often send null for an optional parameter they mean to leave
	// out; where null is not a value the parameter takes, it means absent.
	dropped := t.in.Root().DropNulls(v)
	if err := t.in.Validate(v); err != nil {
		return nil, 0, invalidArgs(t.in.ValidationError(err))
	}
	if !t.in.NestedDefaults() {
		// A dropped null decodes as the zero value, as an absent field
		// does; absent fields with defaults are set on In by decodeIn.
		return raw, t.in.MissingDefaults(v), nil
	}
	if t.in.Root().ApplyDefaults(v) || dropped {
		b, err := jsonenc.Marshal(v)
		return b, 0, err
	}
	return raw, 0, nil
}

func jsonKind(raw []byte) string {
	switch raw[0] {
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// example builds an example argument object from the required parameters.
func (t *Tool) example() string { return t.in.Example() }

func (t *Tool) validateOutput(out []byte) error {
	v, err := schema.DecodeArguments(out)
	if err != nil {
		return fmt.Errorf("llmtool: tool %s: output is not JSON: %w", t.spec.Name, err)
	}
	if err := t.out.ValidateReference(v); err != nil {
		return fmt.Errorf("llmtool: tool %s: output does not match its output schema: %w", t.spec.Name, err)
	}
	return nil
}

// decodeArgs decodes validated arguments into a handler's In value.
func decodeArgs(args []byte, in any) error {
	if err := json.Unmarshal(args, in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return InvalidArgs("/%s: %s does not fit %s. Send a value in range for the parameter.", strings.ReplaceAll(te.Field, ".", "/"), te.Value, te.Type)
		}
		return InvalidArgs("arguments: %v. Send one JSON object that matches the tool's input schema.", err)
	}
	return nil
}

// encodeOut encodes a handler's result, inside its transaction.
func encodeOut(out any) ([]byte, error) {
	v := reflect.ValueOf(out)
	if v.Kind() == reflect.Map {
		if v.IsNil() {
			return []byte("{}"), nil
		}
		if v.MapIndex(reflect.ValueOf("error").Convert(v.Type().Key())).IsValid() {
			return nil, errors.New("llmtool: result map has an \"error\" key, which is reserved for failed calls")
		}
	}
	return jsonenc.Marshal(out)
}

// invalidArgs turns a schema refusal into the InvalidArgs error the model
// sees, keeping its cause.
func invalidArgs(e *schema.Invalid) *Error {
	return &Error{Kind: KindInvalidArgs, Message: e.Message, err: e.Err}
}
