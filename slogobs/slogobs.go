// Package slogobs logs what cassdedup's stores do to a log/slog logger: call [New](logger, name)
// and pass the [Observer] to a store's WithObserver option. It is one lwt.Observer that every
// store takes (lwt.Store, events.Log and guard.Guard, counters.Store), each labelled with the
// name given to New, so one log shows them all.
//
// By default routine events (claims, completions, replays, every LWT) are logged at Debug,
// releases, failures, conflicts and resolved outcomes at Info, and what an operator should
// look at (takeovers, lost leases, unknown outcomes, unconfirmed increments, owned scopes
// superseded, failed or slow LWTs) at Warn, and an epoch that went back (lwt.ErrEpochRegressed:
// a scope nobody can own until an operator forgets its owners) at Error. Records below the handler's level cost one Enabled call.
//
// An Observer is safe for concurrent use; it starts no goroutines.
package slogobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
)

// ErrInvalidOption is returned by New for a nil logger, a nil option or one out of range.
var ErrInvalidOption = errors.New("slogobs: invalid option")

// DefaultSlowLWT is the latency above which an LWT is logged at Warn.
const DefaultSlowLWT = 500 * time.Millisecond

// Observer logs observations. Create it with New.
type Observer struct {
	logger *slog.Logger
	levels map[lwt.ObservationKind]slog.Level
	slow   time.Duration
	keys   bool
}

// Option configures an Observer. A bad one makes New fail with an error that names it.
type Option func(*Observer) error

// set is an option that applies apply, or refuses, named by call, when bad.
func set(bad bool, call, why string, apply func(*Observer)) Option {
	return optcheck.Set(ErrInvalidOption, bad, call, why, apply)
}

// WithLevel logs observations of kind at level instead of the default.
func WithLevel(kind lwt.ObservationKind, level slog.Level) Option {
	_, known := defaultLevels[kind]
	return set(!known, optcheck.Call("WithLevel", kind, level), "unknown observation kind", func(o *Observer) { o.levels[kind] = level })
}

// WithSlowLWT logs an LWT (and a plain write) at Warn when it took longer than d (default
// 500ms; 0 turns it off).
func WithSlowLWT(d time.Duration) Option {
	return set(d < 0, optcheck.Call("WithSlowLWT", d), "negative", func(o *Observer) { o.slow = d })
}

// WithoutKeys leaves the key out of every record, for keys that must not reach the logs.
// Default: keys are logged, so an operator can look the record up (cassdedup key get).
func WithoutKeys() Option {
	return set(false, "", "", func(o *Observer) { o.keys = false })
}

// defaultLevels is the level of each kind unless WithLevel says otherwise.
var defaultLevels = map[lwt.ObservationKind]slog.Level{
	lwt.ObservedLWT:             slog.LevelDebug,
	lwt.ObservedWrite:           slog.LevelDebug,
	lwt.ObservedClaim:           slog.LevelDebug,
	lwt.ObservedComplete:        slog.LevelDebug,
	lwt.ObservedReplay:          slog.LevelDebug,
	lwt.ObservedCacheHit:        slog.LevelDebug,
	lwt.ObservedFastPath:        slog.LevelDebug,
	lwt.ObservedRelease:         slog.LevelInfo,
	lwt.ObservedFail:            slog.LevelInfo,
	lwt.ObservedConflict:        slog.LevelInfo,
	lwt.ObservedKeyReuse:        slog.LevelInfo,
	lwt.ObservedOutcomeResolved: slog.LevelInfo,
	lwt.ObservedTakeover:        slog.LevelWarn,
	lwt.ObservedLeaseLost:       slog.LevelWarn,
	lwt.ObservedOutcomeUnknown:  slog.LevelWarn,
	lwt.ObservedUnconfirmed:     slog.LevelWarn,
	lwt.ObservedNoLease:         slog.LevelInfo,
	lwt.ObservedSuperseded:      slog.LevelWarn,
	lwt.ObservedEpochRegressed:  slog.LevelError,
}

// New returns an Observer that logs to logger with the attribute store=store on every record
// (name the table or the component: "idempotency_keys", "orders-consumer").
func New(logger *slog.Logger, store string, opts ...Option) (*Observer, error) {
	if logger == nil {
		return nil, fmt.Errorf("%w: nil logger", ErrInvalidOption)
	}
	o := &Observer{logger: logger.With(slog.String("store", store)), levels: map[lwt.ObservationKind]slog.Level{},
		slow: DefaultSlowLWT, keys: true}
	for k, l := range defaultLevels {
		o.levels[k] = l
	}
	if err := optcheck.Apply(ErrInvalidOption, o, opts); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe logs ob.
func (o *Observer) Observe(ob lwt.Observation) {
	level, ok := o.levels[ob.Kind]
	if !ok {
		level = slog.LevelInfo
	}
	timed := ob.Kind == lwt.ObservedLWT || ob.Kind == lwt.ObservedWrite
	if timed && (ob.Err != nil || (o.slow > 0 && ob.Latency > o.slow)) {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	if !o.logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	if o.keys && len(ob.Key) > 0 {
		attrs = append(attrs, slog.Any("key", []any(ob.Key)))
	}
	if ob.Op != "" {
		attrs = append(attrs, slog.String("op", ob.Op))
	}
	if ob.Kind == lwt.ObservedLWT {
		attrs = append(attrs, slog.Bool("applied", ob.Applied))
	}
	if timed {
		attrs = append(attrs, slog.Duration("latency", ob.Latency))
	}
	if ob.Err != nil {
		attrs = append(attrs, slog.String("error", ob.Err.Error()))
	}
	o.logger.LogAttrs(ctx, level, ob.Kind.String(), attrs...)
}
