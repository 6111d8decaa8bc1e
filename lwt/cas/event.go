package cas

import "time"

// EventKind names what an Event reports.
type EventKind int

// Event kinds.
const (
	Ran      EventKind = iota + 1 // a conditional write or a serial read ran; Op, Applied, Latency, Err set
	Unknown                       // the write's outcome was unknown; Err is the driver's error
	Resolved                      // a serial read settled the unknown outcome
)

// Event is what Resolve and ResolveBatch report to a Conditional's Observe function: the
// caller turns it into its own log line or metric (package lwt into an lwt.Observation).
type Event struct {
	Kind    EventKind
	Op      string // the Conditional's Op, or "read" for a serial read
	Applied bool   // for Ran: the write applied, or the read found a row
	Latency time.Duration
	Err     error
}
