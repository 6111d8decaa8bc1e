// Package observe is the observation port of the stores built on Cassandra's conditional writes:
// the Observer that a store of package lwt, events, counters or outbox reports to, the
// Observation it receives, ObserveCAS, which turns package cas's events into observations, and
// the Key an observation names. It also holds the two sentinel errors those stores share with
// lwt's executor (ErrInProgress, ErrInvalidArgument), so that a package can report them without
// importing the executor's state machine.
//
// Package lwt re-exports every name of this package (lwt.Observer is observe.Observer, and so
// on): a user adapts a logger or a metrics library to lwt.Observer and never needs to import
// this package. It holds no state; an ObserverFunc is as safe for concurrent use as its function.
package observe
