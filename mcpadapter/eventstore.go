package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// The SSE streams of Handler's sessions are resumable in the protocol
// revisions that have resumability (2025-03-26 through 2025-11-25):
// mcp-go's transport gives every event an ID from its event store and
// answers a GET with the Last-Event-ID header with what came after that
// event on its stream. mcp-go's own store (server.InMemoryEventStore) keeps
// every event of a session until the session ends; the adapter's keeps the
// recent ones of each stream, bounded by count and by age
// (Options.ReplayEvents, Options.ReplayAge).

// Defaults of the event store's bounds.
const (
	// defaultReplayEvents is how many events Handler keeps per SSE stream
	// for clients that reconnect with Last-Event-ID.
	defaultReplayEvents = 256
	// defaultReplayAge is how long Handler keeps an SSE event for clients
	// that reconnect with Last-Event-ID.
	defaultReplayAge = 5 * time.Minute
)

// Why a Last-Event-ID cannot be resumed from. Both wrap mcp-go's
// server.ErrUnknownEventID, which its transport answers with 400.
var (
	errEventUnknown = fmt.Errorf("mcpadapter: no such event in this session: %w", server.ErrUnknownEventID)
	errEventExpired = fmt.Errorf("mcpadapter: the events after this one are no longer kept: %w", server.ErrUnknownEventID)
)

// eventStore keeps the recent events of every SSE stream of a session,
// bounded per stream by count and by age. Event IDs are "<stream>-<seq>":
// the stream's number in its session and the event's number in its stream,
// so an ID names its stream and an ID of another session names nothing.
// It implements server.EventStore.
type eventStore struct {
	maxEvents int
	maxAge    time.Duration
	now       func() time.Time

	mu        sync.Mutex
	sessions  map[string]*sessionEvents
	lastSweep time.Time
}

type sessionEvents struct {
	byID  map[string]*streamEvents // by stream ID
	byNum map[uint64]*streamEvents // by the number in event IDs
	nums  uint64                   // stream numbers issued so far
}

type streamEvents struct {
	id     string
	num    uint64
	seq    uint64 // events numbered so far
	events []storedEvent
	last   time.Time // when the newest event was stored
}

type storedEvent struct {
	seq uint64
	at  time.Time
	msg json.RawMessage
}

func newEventStore(maxEvents int, maxAge time.Duration) *eventStore {
	return &eventStore{maxEvents: maxEvents, maxAge: maxAge, now: time.Now, sessions: make(map[string]*sessionEvents)}
}

// StoreEvent records message as the next event of a stream and returns
// its ID.
func (e *eventStore) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sweep(now)
	se := e.sessions[sessionID]
	if se == nil {
		se = &sessionEvents{byID: make(map[string]*streamEvents), byNum: make(map[uint64]*streamEvents)}
		e.sessions[sessionID] = se
	}
	st := se.byID[streamID]
	if st == nil {
		se.nums++
		st = &streamEvents{id: streamID, num: se.nums}
		se.byID[streamID], se.byNum[st.num] = st, st
	}
	st.seq++
	st.last = now
	msg := append(json.RawMessage(nil), message...) // the caller may reuse its buffer
	st.events = append(st.events, storedEvent{seq: st.seq, at: now, msg: msg})
	drop := 0
	for drop < len(st.events) && (len(st.events)-drop > e.maxEvents || now.Sub(st.events[drop].at) > e.maxAge) {
		drop++
	}
	if drop > 0 {
		st.events = append(st.events[:0:0], st.events[drop:]...)
	}
	return eventID(st.num, st.seq), nil
}

// eventID is the ID of event seq of stream num.
func eventID(num, seq uint64) string {
	return strconv.FormatUint(num, 10) + "-" + strconv.FormatUint(seq, 10)
}

// sweep forgets the streams whose newest event is older than the age
// bound, at most once per tenth of it; e.mu is held.
func (e *eventStore) sweep(now time.Time) {
	if now.Sub(e.lastSweep) < e.maxAge/10 {
		return
	}
	e.lastSweep = now
	for sid, se := range e.sessions {
		for id, st := range se.byID {
			if now.Sub(st.last) > e.maxAge {
				delete(se.byID, id)
				delete(se.byNum, st.num)
			}
		}
		if len(se.byID) == 0 {
			delete(e.sessions, sid)
		}
	}
}

// after returns the stream an event ID names and the events after it, or
// errEventUnknown or errEventExpired; e.mu is held.
func (e *eventStore) after(sessionID, lastEventID string) (*streamEvents, []storedEvent, error) {
	se := e.sessions[sessionID]
	numText, seqText, ok := strings.Cut(lastEventID, "-")
	num, err1 := strconv.ParseUint(numText, 10, 64)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	if se == nil || !ok || err1 != nil || err2 != nil || num == 0 || num > se.nums {
		return nil, nil, errEventUnknown
	}
	st := se.byNum[num]
	switch {
	case st == nil:
		return nil, nil, errEventExpired // the stream existed: it aged out
	case seq > st.seq:
		return nil, nil, errEventUnknown
	case len(st.events) == 0 && seq < st.seq, len(st.events) > 0 && seq+1 < st.events[0].seq:
		return nil, nil, errEventExpired
	}
	var tail []storedEvent
	for _, ev := range st.events {
		if ev.seq > seq {
			tail = append(tail, ev)
		}
	}
	return st, tail, nil
}

// ReplayEventsAfter calls send with every event after lastEventID on its
// stream, in order, and returns the stream's ID.
func (e *eventStore) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	e.mu.Lock()
	st, tail, err := e.after(sessionID, lastEventID)
	e.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("event %q: %w", lastEventID, err)
	}
	for _, ev := range tail {
		if err := send(eventID(st.num, ev.seq), ev.msg); err != nil {
			return "", err
		}
	}
	return st.id, nil // a stream's id and num never change
}

// PurgeSession forgets every event of a session: mcp-go calls it when the
// session ends.
func (e *eventStore) PurgeSession(_ context.Context, sessionID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.sessions, sessionID)
	return nil
}
