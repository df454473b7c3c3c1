package chatadapter_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/llmtool/llmtool"
	"github.com/llmtool/llmtool/ask"
	"github.com/llmtool/llmtool/chatadapter"
	"github.com/llmtool/llmtool/chatadapter/run/chattest"
	"github.com/stretchr/testify/require"
)

// The refusals of a sealed form.
const (
	sealBroken = "chatadapter: restore: the saved turn was changed since it was sealed, or sealed with another Options.SealKey: start the turn again, sending the person's last message to the model anew"
	unsealed   = "chatadapter: restore: the saved turn is not sealed, and this adapter restores only sealed turns (Options.SealKey): start the turn again, sending the person's last message to the model anew"
	noSealKey  = "chatadapter: restore: the saved turn is sealed: restore it with an adapter that has the Options.SealKey that sealed it"
)

// startSealed is start with an adapter that seals its paused turns with
// key (nil: plain).
func startSealed(t *testing.T, path string, key []byte) *process {
	t.Helper()
	p := start(t, path, nil)
	reg, err := llmtool.NewRegistry(p.db, &llmtool.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ApprovalKey: approvalKey}, askingShop)
	require.NoError(t, err)
	p.a = chatadapter.New(reg, &chatadapter.Options{SealKey: key})
	return p
}

var sealKey = []byte("chatadapter-test-seal-key-0123456789")

// A sealed paused turn resumes in another process with the same key, and
// is refused when changed in any byte, when sealed with another key, by
// an adapter without a key, and saved plain to an adapter that seals.
func TestSealedTurn(t *testing.T) {
	t.Parallel()
	path := newShop(t)
	first := startSealed(t, path, sealKey)
	r, err := first.a.Dispatch(first.ctx, chatadapter.Anthropic, []byte(`[`+
		`{"type":"tool_use","id":"t1","name":"list_items","input":{}},`+
		`{"type":"tool_use","id":"t2","name":"pick_item","input":{"name":"apple"}}]`))
	require.NoError(t, err)
	require.Equal(t, "t2", r.Pending.Call.ID)
	sealed, err := json.Marshal(r.Pending)
	require.NoError(t, err)
	require.Equal(t, byte('"'), sealed[0], "a sealed turn is a JSON string")

	second := startSealed(t, path, sealKey)
	replacements := []byte{'A', 'b', '0', '_', '.', '"', '\\', ' ', 0xff}
	for i := range sealed {
		b := replacements[i%len(replacements)] // every byte, edited in turn into each of these
		if sealed[i] == b {
			b = 'B'
		}
		edited := append([]byte(nil), sealed...)
		edited[i] = b
		_, err := second.a.Restore(edited)
		require.Error(t, err, "byte %d as %q", i, b)
		var s string
		if json.Unmarshal(edited, &s) == nil {
			require.EqualError(t, err, sealBroken, "byte %d as %q", i, b)
		}
	}

	other := startSealed(t, path, nil)
	r, err = other.a.Dispatch(other.ctx, chatadapter.Anthropic, []byte(`[{"type":"tool_use","id":"t2","name":"pick_item","input":{"name":"apple"}}]`))
	require.NoError(t, err)
	plain, err := json.Marshal(r.Pending)
	require.NoError(t, err)
	require.Equal(t, byte('{'), plain[0])
	for _, tc := range []struct {
		name  string
		a     *chatadapter.Adapter
		saved []byte
		want  string
	}{
		{name: "another key", a: startSealed(t, path, []byte("another-seal-key-0123456789abcdef")).a, saved: sealed, want: sealBroken},
		{name: "no key", a: startSealed(t, path, nil).a, saved: sealed, want: noSealKey},
		{name: "plain where sealed is expected", a: second.a, saved: plain, want: unsealed},
	} {
		_, err := tc.a.Restore(tc.saved)
		require.EqualError(t, err, tc.want, tc.name)
	}

	p, err := second.a.Restore(sealed)
	require.NoError(t, err)
	r, err = p.Resume(second.ctx, ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"id":2}`)})
	require.NoError(t, err)
	require.Nil(t, r.Pending)
	require.Len(t, r.Outcomes, 2)
	done, err := json.Marshal(r)
	require.NoError(t, err)
	require.Equal(t, byte('{'), done[0], "a complete reply has no turn to seal: plain data")
	_, err = json.Marshal(p)
	require.ErrorContains(t, err, "the pending call was resumed already", "a pause answered is not saved again")
}

// A transcript's paused turn is sealed as a reply's is; the conversation
// before it is not.
func TestSealedTranscript(t *testing.T) {
	t.Parallel()
	path := newShop(t)
	first := startSealed(t, path, sealKey)
	shape := chatadapter.Anthropic
	srv := chattest.NewServer(shape,
		chattest.Reply{Calls: []chattest.Call{{Name: "pick_item", Args: `{"name":"apple"}`}}},
		chattest.Reply{Text: "Done."})
	defer srv.Close()
	tr, err := first.runner(t, srv, nil).Run(first.ctx, user(shape, "Pick the apple."))
	require.NoError(t, err)
	require.NotNil(t, tr.Pending)
	saved, err := json.Marshal(tr)
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(saved, &fields))
	var turn string
	require.NoError(t, json.Unmarshal(fields["turn"], &turn), "the turn is sealed")

	second := startSealed(t, path, sealKey)
	edited := []byte(turn)
	edited[len(edited)/2] ^= 1
	fields["turn"], err = json.Marshal(string(edited))
	require.NoError(t, err)
	changed, err := json.Marshal(fields)
	require.NoError(t, err)
	_, err = second.runner(t, srv, nil).Restore(changed)
	require.EqualError(t, err, sealBroken)

	tr, err = second.runner(t, srv, nil).Restore(saved)
	require.NoError(t, err)
	tr, err = second.runner(t, srv, nil).Resume(second.ctx, tr, ask.ElicitResult{Action: ask.Accept, Content: json.RawMessage(`{"id":2}`)})
	require.NoError(t, err)
	require.Nil(t, tr.Pending)
	require.Equal(t, "Done.", tr.Answer)
}

// New refuses a key short enough to be found by trying every value.
func TestSealKeyTooShort(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.PanicsWithValue(t, "chatadapter: Options.SealKey is too short (5 of at least 16 bytes): a short key is found by trying every value against one token it signed; make one of 32 random bytes (crypto/rand.Read), kept secret and the same on every replica",
		func() { chatadapter.New(f.reg, &chatadapter.Options{SealKey: []byte("short")}) })
}
