package lwt

import (
	"context"
	"fmt"
)

// SpanObserver is an Observer that also traces the phases of ExecuteOnce, which observations
// alone cannot delimit. A store whose observer implements it (checked with a type assertion)
// calls StartSpan when a phase begins:
//
//   - "execute": the whole ExecuteOnce call;
//   - "claim": one Begin within it (the claim LWT, and its read-back if its outcome was unknown);
//     a call that waits (WithWait) may claim more than once;
//   - "run": the caller's function, whose ctx descends from the span's;
//   - "commit": from the function's return to the end of the call: storing its result, its
//     permanent failure or the release of the claim (on the fast path, the plain write).
//
// StartSpan returns the ctx the phase runs under and end, which the store calls once with the
// phase's error when it ends. It must be fast and safe for concurrent use. An Observer that does
// not implement it costs nothing.
type SpanObserver interface {
	Observer
	StartSpan(ctx context.Context, phase string, key Key) (context.Context, func(err error))
}

func noEnd(error) {}

// startSpan starts phase if the store's observer traces.
func (s *Store) startSpan(ctx context.Context, phase string, key Key) (context.Context, func(error)) {
	if t, ok := s.cfg.observer.(SpanObserver); ok {
		return t.StartSpan(ctx, phase, key)
	}
	return ctx, noEnd
}

// traced wraps fn in the run span, and starts c's commit span when fn returns, under the same
// parent as the run span; ExecuteOnce ends it. Without a tracing observer fn is returned as it
// is and the commit span is a no-op.
func (s *Store) traced(c *call, fn func(context.Context) ([]byte, error)) func(context.Context) ([]byte, error) {
	c.endCommit = noEnd
	t, ok := s.cfg.observer.(SpanObserver)
	if !ok {
		return fn
	}
	return func(ctx context.Context) ([]byte, error) {
		rctx, end := t.StartSpan(ctx, "run", c.key)
		defer func() {
			if p := recover(); p != nil {
				end(fmt.Errorf("lwt: panic: %v", p))
				panic(p) // the store releases the claim and re-raises it
			}
		}()
		v, err := fn(rctx)
		end(err)
		_, c.endCommit = t.StartSpan(ctx, "commit", c.key)
		return v, err
	}
}
