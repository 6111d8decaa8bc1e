package httpidem

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

var (
	// errReleased is what the handler's run returns after a 5xx under the release policy: lwt
	// releases a claim whose function returns an error not marked permanent. The response
	// itself stays in the run's capture and is sent to the client all the same.
	errReleased = errors.New("httpidem: 5xx response, key released")

	// errClientGone: the client went away after the key was claimed but before the handler
	// started, so the claim is released rather than run for nobody.
	errClientGone = errors.New("httpidem: client went away before the handler started")
)

// panicError is a handler's panic, returned by its run so that lwt releases the key.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("httpidem: handler panicked: %v", e.value) }

// execute claims the key and runs next under the claim, or answers from the record.
func (m *Middleware) execute(w http.ResponseWriter, r *http.Request, next http.Handler, ev Event, fp []byte) (Event, bool) {
	// Until the handler starts, the client's disconnect ends the claim (or the wait for
	// another request's response). Once it has started, nothing but a lost lease ends it: a
	// handler cut short by a disconnect would leave its work half done, and its lease renewals
	// and response must outlive the client so that the retry finds the stored response.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	g := &startGate{cancel: cancel}
	stop := context.AfterFunc(r.Context(), g.clientGone)
	defer stop()

	var c *capture // set when the handler runs
	fn := func(ctx context.Context) ([]byte, error) {
		if !g.start(ctx) {
			return nil, errClientGone
		}
		c = newCapture(w, m.cfg.storedHeader, m.cfg.maxResponse)
		c.buffered = m.cfg.repeatable
		if p := serveRecovered(next, c, r.WithContext(ctx)); p != nil {
			return nil, &panicError{value: p}
		}
		c.finish()
		switch {
		case c.status >= 500 && !m.cfg.store5xx:
			return nil, errReleased
		case c.streaming || c.oversized:
			return encodeOversized(c.status, c.size), nil
		}
		return c.encoded(), nil
	}
	key := lwt.IdempotencyKey(ev.Scope, ev.Key)
	opts := []lwt.CallOption{lwt.WithRequest(fp)}
	if m.cfg.wait {
		opts = append(opts, lwt.WithWait())
	}
	if m.cfg.repeatable {
		opts = append(opts, lwt.WithRepeatableFunction())
	}
	res, err := m.store.ExecuteOnce(ctx, key, fn, opts...)
	if c == nil || (m.cfg.repeatable && (lostRace(res, err) || uncommitted(err))) {
		// A repeatable handler may have run and lost to another request's commit: its own
		// response, still buffered, is dropped, and the stored answer is sent. Or its commit
		// did not happen (the run outlived its lease, the node went away under the insert):
		// then its response, which says the request took effect, would be a lie, since the
		// commit is its only effect; the client gets a 503 and its retry runs it again.
		return m.answerNotRun(w, ev, res, err), false
	}
	return m.answerRun(ctx, w, ev, c, key, fp, err)
}

// lostRace reports whether a repeatable run's commit found another request's record: a stored
// response (replayed), another request's key (422) or a live claim (409).
func lostRace(res lwt.Result, err error) bool {
	return (err == nil && res.Replay) || errors.Is(err, lwt.ErrKeyReuse) || errors.Is(err, lwt.ErrInProgress)
}

// uncommitted reports whether a repeatable run ended without its commit for a reason other
// than its own response: not a 5xx it returned (errReleased) or a panic, which are answered as
// they are, but a commit that failed, was not sent in time or has an unknown outcome. A result
// too large for the store is not committed either.
func uncommitted(err error) bool {
	var p *panicError
	return err != nil && !errors.Is(err, errReleased) && !errors.As(err, &p)
}

// serveRecovered runs next and returns what it panicked with, if it did.
func serveRecovered(next http.Handler, w http.ResponseWriter, r *http.Request) (panicked any) {
	defer func() { panicked = recover() }()
	next.ServeHTTP(w, r)
	return nil
}

// answerRun sends the response of a handler that ran and reports how its key ended.
func (m *Middleware) answerRun(ctx context.Context, w http.ResponseWriter, ev Event, c *capture, key lwt.Key, fp []byte, err error) (Event, bool) {
	ev.Status = c.status
	var p *panicError
	switch {
	case errors.As(err, &p):
		ev.Outcome, ev.Err = OutcomeReleased, err
		if c.streaming || p.value == http.ErrAbortHandler {
			return ev, true
		}
		writeProblem(w, problem{Type: TypeHandlerPanic, Status: http.StatusInternalServerError})
		ev.Status, ev.Type = http.StatusInternalServerError, TypeHandlerPanic
		return ev, false
	case errors.Is(err, errReleased):
		ev.Outcome = OutcomeReleased
		if err != errReleased {
			ev.Err = err // the release failed: the key stays claimed until its lease passes
		}
	case err == nil && (c.streaming || c.oversized):
		ev.Outcome = OutcomeOversized
	case err == nil:
		ev.Outcome = OutcomeNew
	case errors.Is(err, lwt.ErrResultTooLarge):
		ev.Outcome, ev.Err = OutcomeOversized, m.recordOversized(ctx, key, fp, c)
	default:
		ev.Outcome, ev.Err = OutcomeUnrecorded, err
	}
	if !c.streaming {
		c.send()
	}
	return ev, false
}

// recordOversized stores the mark of a response that fit WithMaxResponseSize but not the
// store's own limit, which released the key. Until this claim lands a retry could run the
// handler again; set WithMaxResponseSize to the store's limit to close that window.
func (m *Middleware) recordOversized(ctx context.Context, key lwt.Key, fp []byte, c *capture) error {
	mark := encodeOversized(c.status, c.size)
	_, err := m.store.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return mark, nil }, lwt.WithRequest(fp))
	return errors.Join(fmt.Errorf("httpidem: the store's result size limit is below WithMaxResponseSize (%d bytes): %w",
		m.cfg.maxResponse, lwt.ErrResultTooLarge), err)
}

// answerNotRun answers a request whose handler did not run: a replay or a refusal.
func (m *Middleware) answerNotRun(w http.ResponseWriter, ev Event, res lwt.Result, err error) Event {
	if err == nil {
		return m.answerReplay(w, ev, res)
	}
	ev.Err = err
	code, ok := Status(err)
	switch {
	case code == http.StatusConflict:
		p := problem{Type: TypeInProgress, Status: code, Detail: "a request with this key is still being processed", retryAfter: 1}
		var inProgress *lwt.InProgressError
		if errors.As(err, &inProgress) {
			p.retryAfter = retryAfter(inProgress.LeaseUntil)
		}
		return m.refuse(w, ev, OutcomeConflict, p)
	case code == http.StatusUnprocessableEntity:
		return m.refuse(w, ev, OutcomeMismatch, problem{Type: TypeKeyReuse, Status: code,
			Detail: "this key was used with a different request"})
	case code == http.StatusBadRequest:
		return m.refuse(w, ev, OutcomeRejected, problem{Type: TypeKeyInvalid, Status: code,
			Detail: "the key is longer than the server stores"})
	case !ok && errors.As(err, new(*lwt.FailureError)):
		// A permanent failure that another writer of the table stored: this version never does.
		return m.refuse(w, ev, OutcomeUnavailable, problem{Type: TypeStoredResponseUnreadable, Status: http.StatusInternalServerError})
	}
	// ErrOutcomeUnknown (503), the client gone before the handler started, or the store
	// unreachable: nothing ran, and the same request may be sent again.
	return m.refuse(w, ev, OutcomeUnavailable, problem{Type: TypeUnavailable, Status: http.StatusServiceUnavailable, retryAfter: 1})
}

// answerReplay sends a stored response, or the problem that stands for one not stored.
func (m *Middleware) answerReplay(w http.ResponseWriter, ev Event, res lwt.Result) Event {
	stored, err := decodeStored(res.Value)
	switch {
	case err != nil:
		ev.Err = err
		return m.refuse(w, ev, OutcomeUnavailable, problem{Type: TypeStoredResponseUnreadable, Status: http.StatusInternalServerError})
	case stored.oversized:
		return m.refuse(w, ev, OutcomeReplayed, problem{Type: TypeResponseNotStored, Status: http.StatusGone,
			Detail:   "the request with this key was processed, but its response was too large to store; it is not replayed",
			Original: stored.status, Size: stored.size})
	}
	replay(w, stored)
	ev.Outcome, ev.Status = OutcomeReplayed, stored.status
	return ev
}

// retryAfter is the Retry-After, in whole seconds and at least 1, until a lease passes.
func retryAfter(until time.Time) int {
	return max(1, int(math.Ceil(time.Until(until).Seconds())))
}

// startGate decides, once, between the handler starting and the client going away first.
type startGate struct {
	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
}

// clientGone ends the claim's context unless the handler has started.
func (g *startGate) clientGone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.started {
		g.cancel()
	}
}

// start reports whether the handler may start: ctx, the claim's, has not ended.
func (g *startGate) start(ctx context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	g.started = true
	return true
}
