package outbox

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/cassdedup/cassdedup/internal/textcheck"
)

// Limits on what one run may stage.
const (
	MaxEvents      = 100       // events per run
	MaxNameLength  = 255       // bytes of an event type, key or header name
	MaxHeaders     = 32        // headers per event
	DefaultMaxSize = 256 << 10 // bytes of all events of a run, encoded; they ride in one Paxos round
)

// Event is what a run stages: it is published, once the run has committed, as a Message.
type Event struct {
	Type    string            // e.g. "order.placed"; required
	Key     string            // the broker's partitioning key; optional
	Payload []byte            // opaque to the outbox
	Headers map[string]string // passed to the broker as record headers; values must be UTF-8
}

// Message is a committed event as the relay publishes it. ID is stable: every publication of
// the event, a republication after a relay's crash or a replay included, carries the same ID, so
// a consumer dedups on it.
type Message struct {
	ID        string // EventID(Namespace, OperationKey, Sequence)
	Namespace string // the operation's record key
	OpKey     string
	Sequence  int   // the event's place among its run's events, from 0
	Fence     int64 // the fence of the claim that committed the run
	Type      string
	Key       string
	Payload   []byte
	Headers   map[string]string
	StagedAt  time.Time
}

// EventID is the id of the seq-th event of the operation (namespace, key): 32 hex digits of a
// SHA-256 over the length-prefixed fields. An operation commits once, so the id names one event.
func EventID(namespace, key string, seq int) string {
	h := sha256.New()
	for _, s := range []string{namespace, key} {
		_ = binary.Write(h, binary.BigEndian, uint32(len(s)))
		h.Write([]byte(s))
	}
	_ = binary.Write(h, binary.BigEndian, uint32(seq))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func (e Event) validate() error {
	if p := textcheck.Problem(e.Type, MaxNameLength); p != "" {
		return fmt.Errorf("%w: type: %s", ErrInvalidEvent, p)
	}
	if e.Key != "" {
		if p := textcheck.Problem(e.Key, MaxNameLength); p != "" {
			return fmt.Errorf("%w: key: %s", ErrInvalidEvent, p)
		}
	}
	if len(e.Headers) > MaxHeaders {
		return fmt.Errorf("%w: %d headers, limit %d", ErrInvalidEvent, len(e.Headers), MaxHeaders)
	}
	for k, v := range e.Headers {
		if p := textcheck.Problem(k, MaxNameLength); p != "" {
			return fmt.Errorf("%w: header name: %s", ErrInvalidEvent, p)
		}
		if len(v) > DefaultMaxSize {
			return fmt.Errorf("%w: header %q: %d bytes", ErrInvalidEvent, k, len(v))
		}
		// The events are stored as JSON, which would turn invalid bytes into U+FFFD: a value
		// published other than it was staged. Binary data belongs in the payload.
		if !utf8.ValidString(v) {
			return fmt.Errorf("%w: header %q: value is not UTF-8 (binary data belongs in the payload)", ErrInvalidEvent, k)
		}
	}
	return nil
}

// cell is the encoding of a run's events in the record's outbox column: versioned JSON, so an
// operator can read it and a later release can change it.
type cell struct {
	Version  int       `json:"v"`
	StagedAt time.Time `json:"staged_at"`
	Events   []Event   `json:"events"`
}

const cellVersion = 1

func encodeCell(c cell) ([]byte, error) {
	c.Version = cellVersion
	return json.Marshal(c)
}

func decodeCell(b []byte) (cell, error) {
	var c cell
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%w: %w", ErrMalformedEvents, err)
	}
	if c.Version != cellVersion {
		return c, fmt.Errorf("%w: version %d", ErrMalformedEvents, c.Version)
	}
	for i, e := range c.Events {
		if err := e.validate(); err != nil {
			return c, fmt.Errorf("%w: event %d: %w", ErrMalformedEvents, i, err)
		}
	}
	return c, nil
}

// messages turns a committed cell into the messages the relay publishes, in staging order.
func (c cell) messages(namespace, key string, fence int64) []Message {
	out := make([]Message, len(c.Events))
	for i, e := range c.Events {
		out[i] = Message{ID: EventID(namespace, key, i), Namespace: namespace, OpKey: key, Sequence: i, Fence: fence,
			Type: e.Type, Key: e.Key, Payload: e.Payload, Headers: e.Headers, StagedAt: c.StagedAt}
	}
	return out
}
