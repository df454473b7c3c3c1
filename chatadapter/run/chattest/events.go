package chattest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// argPiece is how many bytes of a tool call's arguments one chunk
// carries, so that the client has to put them together.
const argPiece = 7

// stream answers request n with rep as a streams it: server-sent events,
// or, for an API that streams from a path of its own without alt=sse
// (Gemini), a JSON array of the events' data.
func stream(w http.ResponseWriter, a api, n int, rep Reply, req Request) {
	sse := a.streamPath() == "" || req.Query.Get("alt") == "sse"
	e := &events{w: w, sse: sse}
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	a.stream(e, n, rep, req)
	e.close()
}

// events writes server-sent events, each flushed as it is written; or,
// without sse, a JSON array of their data.
type events struct {
	w     http.ResponseWriter
	sse   bool
	array []any
}

// send writes v as an event's data, under the event name if one is given.
func (e *events) send(name string, v any) {
	if !e.sse {
		e.array = append(e.array, v)
		return
	}
	b, _ := json.Marshal(v)
	if name != "" {
		_, _ = fmt.Fprintf(e.w, "event: %s\n", name) // an error: the client went away
	}
	_, _ = fmt.Fprintf(e.w, "data: %s\n\n", b)
	e.flush()
}

func (e *events) flush() {
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (e *events) close() {
	if !e.sse {
		b, _ := json.Marshal(orEmpty(e.array))
		_, _ = e.w.Write(b)
	}
}

// words splits text as the stream sends it: each word with the spaces
// before it, so that the pieces joined are text.
func words(text string) []string {
	var out []string
	for len(text) > 0 {
		i := len(text) - len(strings.TrimLeft(text, " \n"))
		j := strings.IndexAny(text[i:], " \n")
		if j < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+j])
		text = text[i+j:]
	}
	return out
}

// pieces cuts s in argPiece bytes, so that the client has to put them
// together.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		k := min(argPiece, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}
