// Package storeopt holds the options that the stores over one keyspace share (keyspace,
// consistencies, clock, observer), implemented once: each package embeds Common in its config
// and returns these options typed to its own constructor, so that one package's option does not
// compile as another's. It holds no state; its functions are safe for concurrent use.
//
// It is for packages built on lwt (events, guard), not for their users, who meet only each
// package's own With... options; it sits below lwt and imports only lwt/observe and schema.
package storeopt

import (
	"fmt"
	"reflect"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt/observe"
	"github.com/cassdedup/cassdedup/schema"
)

// Common is the shared part of a store's configuration.
type Common struct {
	Keyspace    string
	Consistency gocql.Consistency
	Serial      gocql.SerialConsistency
	Now         func() time.Time
	Observer    observe.Observer
}

// Defaults returns the shared defaults: the default keyspace, QUORUM, SERIAL and time.Now.
func Defaults() Common {
	return Common{Keyspace: schema.DefaultKeyspace, Consistency: gocql.Quorum, Serial: gocql.Serial, Now: time.Now}
}

// Base returns c: a config that embeds Common satisfies Config through it.
func (c *Common) Base() *Common { return c }

// SerialRead returns the serial consistency as a read consistency: a SELECT at SERIAL sees
// every committed Paxos write and completes one in flight.
func (c *Common) SerialRead() gocql.Consistency { return gocql.Consistency(c.Serial) }

// Config is a pointer to a package's config that embeds Common.
type Config[T any] interface {
	*T
	Base() *Common
}

// Keyspace names the keyspace of the tables.
func Keyspace[C Config[T], T any](name string) func(*T) error {
	return func(c *T) error {
		C(c).Base().Keyspace = name
		return nil
	}
}

// Consistency sets the consistency of plain writes, reads and Paxos commits.
func Consistency[C Config[T], T any](cl gocql.Consistency) func(*T) error {
	return func(c *T) error {
		C(c).Base().Consistency = cl
		return nil
	}
}

// SerialConsistency sets the Paxos consistency: SERIAL or LOCAL_SERIAL, else sentinel.
func SerialConsistency[C Config[T], T any](sentinel error, sc gocql.SerialConsistency) func(*T) error {
	return func(c *T) error {
		if sc != gocql.Serial && sc != gocql.LocalSerial {
			return optcheck.Bad(sentinel, optcheck.Call("WithSerialConsistency", sc), "must be SERIAL or LOCAL_SERIAL")
		}
		C(c).Base().Serial = sc
		return nil
	}
}

// Clock replaces time.Now; a nil clock is refused with sentinel.
func Clock[C Config[T], T any](sentinel error, now func() time.Time) func(*T) error {
	return func(c *T) error {
		if now == nil {
			return optcheck.Bad(sentinel, "WithClock(nil)", "needs a clock")
		}
		C(c).Base().Now = now
		return nil
	}
}

// Observer sets the hook called on every LWT and write; nil for none. A typed nil (a nil
// pointer in the interface) is refused with sentinel, as its calls would panic.
func Observer[C Config[T], T any](sentinel error, o observe.Observer) func(*T) error {
	return func(c *T) error {
		if o != nil && isNil(o) {
			return optcheck.Bad(sentinel, fmt.Sprintf("WithObserver(%T(nil))", o), "a typed nil: pass nil for none")
		}
		C(c).Base().Observer = o
		return nil
	}
}

// isNil reports whether v holds a nil pointer, map, func, channel or slice.
func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
