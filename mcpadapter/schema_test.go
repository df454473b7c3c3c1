package mcpadapter_test

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/mcpadapter"
	"github.com/llmtool/llmtool/sqlite"
)

type address struct {
	Street string `json:"street,omitempty"`
	City   string `json:"city,omitempty"`
}

type personIn struct {
	Name    string   `json:"name"`
	Address *address `json:"address,omitempty"`
}

// personSchema uses 2020-12 keywords the inference does not emit, and a
// constraint (minLength) that In's tags do not state.
const personSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string","minLength":2}}}},` +
	`"properties":{"name":{"type":"string","minLength":3},"address":{"$ref":"#/$defs/address"}},` +
	`"required":["name"],"additionalProperties":false}`

func TestInputSchema(t *testing.T) {
	t.Parallel()
	greet := llmtool.Read("greet", "Greet a person.",
		func(c *llmtool.ReadCtx, in personIn) (statusOut, error) {
			city := "nowhere"
			if in.Address != nil {
				city = in.Address.City
			}
			return statusOut{Status: "hello " + in.Name + " from " + city}, nil
		}, llmtool.InputSchema(json.RawMessage(personSchema)))

	db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Logger: slog.New(slog.DiscardHandler)}, llmtool.DefineTools("people", greet))
	require.NoError(t, err)
	srv := mcpadapter.New(reg, &mcpadapter.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c := &rpc{url: ts.URL}
	c.initialize(t)

	_, tools := byName(t, c.listAll(t, 100))
	require.Equal(t, personSchema, string(tools["greet"]["inputSchema"]), "the listing carries the schema byte for byte")

	tests := []struct {
		args, want string
	}{
		{`{"name":"Ada","address":{"city":"London"}}`, `{"content":[{"type":"text","text":"{\"status\":\"hello Ada from London\"}"}],"structuredContent":{"status":"hello Ada from London"}}`},
		{`{"name":"Al"}`, `{"content":[{"type":"text","text":"Error: /name: 2 characters is shorter than the minimum 3. Send a string."}],"isError":true}`},
		{`{"name":"Ada","address":{"city":"L"}}`, `{"content":[{"type":"text","text":"Error: /address/city: 1 character is shorter than the minimum 2. Send a string."}],"isError":true}`},
		{`{"name":"Ada","age":3}`, `{"content":[{"type":"text","text":"Error: /age: unknown parameter \"age\". Send only name, address (names are case-sensitive)."}],"isError":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			_, body := c.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":`+tt.args+`}}`)
			require.JSONEq(t, tt.want, string(result(t, body)))
		})
	}
}

func TestInputSchemaMustAgreeWithIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, panic string
	}{
		{"extra property", `{"type":"object","properties":{"name":{"type":"string"},"address":{},"age":{"type":"integer"}},"required":["name"]}`,
			`llmtool: tool "p": InputSchema: property "age" is not a JSON field of mcpadapter_test.personIn; add the field or remove the property`},
		{"missing property", `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
			`llmtool: tool "p": InputSchema: mcpadapter_test.personIn field "address" is missing from "properties"; describe it in the schema or remove the field`},
		{"required only in the schema", `{"type":"object","properties":{"name":{"type":"string"},"address":{}},"required":["name","address"]}`,
			`llmtool: tool "p": InputSchema: "address" is required by the schema but optional in mcpadapter_test.personIn (omitempty or a default); make the two agree`},
		{"required only in In", `{"type":"object","properties":{"name":{"type":"string"},"address":{}}}`,
			`llmtool: tool "p": InputSchema: "name" is required by mcpadapter_test.personIn (no omitempty, no default) but not by the schema; add it to "required" or make the field optional`},
		{"not an object schema", `{"type":"array"}`,
			`llmtool: tool "p": InputSchema: "type" must be "object", since arguments are a JSON object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.PanicsWithValue(t, tt.panic, func() {
				llmtool.Read("p", "P.", func(c *llmtool.ReadCtx, in personIn) (statusOut, error) { return statusOut{}, nil },
					llmtool.InputSchema(json.RawMessage(tt.schema)))
			})
		})
	}
}
