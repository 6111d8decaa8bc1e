package httpidem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/internal/textcheck"
	"github.com/cassdedup/cassdedup/lwt"
)

// Middleware runs a handler at most once per (scope, key) and replays its stored response. See
// docs/http.md for its policy; build one with New.
type Middleware struct {
	store *lwt.Store
	cfg   config
}

// New returns a middleware that stores responses in store. One scope option is required:
// WithPrincipalScope, WithAuthorizationScope, WithScope or WithSingleTenantSharedScope; without
// one New returns ErrNoScope (which also matches ErrInvalidOption), so no middleware shares one
// scope between clients by accident. The other options' defaults are in docs/http.md's
// policy table and with each option.
func New(store *lwt.Store, opts ...Option) (*Middleware, error) {
	cfg := defaultConfig()
	if err := optcheck.Build(ErrInvalidOption, store == nil, "store", &cfg, opts); err != nil {
		return nil, err
	}
	if cfg.scope == nil {
		return nil, fmt.Errorf("%w: %w: choose WithPrincipalScope, WithAuthorizationScope, WithScope or, "+
			"for a service with one client, WithSingleTenantSharedScope", ErrInvalidOption, ErrNoScope)
	}
	if cfg.minKeyLength > cfg.maxKeyLength {
		return nil, bad(optcheck.Call("WithMinKeyLength", cfg.minKeyLength), "longer than WithMaxKeyLength(%d)", cfg.maxKeyLength)
	}
	// A repeatable handler's response is its commit: one that fits WithMaxResponseSize but not
	// the store would be answered 503 on every retry, its handler run each time.
	if cfg.repeatable && cfg.maxResponse > store.MaxResultSize() {
		return nil, bad(optcheck.Call("WithMaxResponseSize", cfg.maxResponse),
			"above the store's result limit of %d bytes (lwt.WithMaxResultSize) under WithRepeatableHandler", store.MaxResultSize())
	}
	return &Middleware{store: store, cfg: cfg}, nil
}

// Handler wraps next: requests whose method the middleware covers run next at most once per
// key; every other request goes to next untouched. On a nil *Middleware, or with a nil next,
// it returns a handler that answers every request 500 (TypeMisconfigured) and runs nothing:
// a server built wrong refuses work rather than panicking or running without the middleware.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	if m == nil || next == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeProblem(w, problem{Type: TypeMisconfigured, Status: http.StatusInternalServerError})
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Methods are case-sensitive tokens, but servers (net/http's mux included) route "post"
		// as POST: matched as sent, a retry spelled "post" would run its handler again.
		if !m.cfg.methods[strings.ToUpper(r.Method)] {
			next.ServeHTTP(w, r)
			return
		}
		ev, abort := m.serve(w, r, next)
		ev.Request = r
		m.cfg.observer(ev)
		if abort {
			// The handler panicked after part of its response was sent, or with
			// http.ErrAbortHandler: only cutting the connection tells the client.
			panic(http.ErrAbortHandler)
		}
	})
}

// serve handles a covered request. abort asks the caller to cut the connection.
func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) (ev Event, abort bool) {
	key, err := parseKey(r.Header.Values(m.cfg.header), m.cfg.minKeyLength, m.cfg.maxKeyLength)
	switch {
	case errors.Is(err, errKeyMissing) && m.cfg.keyOptional:
		next.ServeHTTP(w, r)
		return Event{Outcome: OutcomeUnkeyed}, false
	case errors.Is(err, errKeyMissing):
		return m.refuse(w, Event{Err: err}, OutcomeRejected, problem{Type: TypeKeyMissing, Status: http.StatusBadRequest,
			Detail: "this request needs an " + m.cfg.header + " header"}), false
	case err != nil:
		return m.refuse(w, Event{Err: err}, OutcomeRejected, problem{Type: TypeKeyInvalid, Status: http.StatusBadRequest,
			Detail: fmt.Sprintf("the %s header must be a quoted string or a token of %d to %d bytes",
				m.cfg.header, m.cfg.minKeyLength, m.cfg.maxKeyLength)}), false
	}
	ev = Event{Key: key}
	scope, ok := m.cfg.scope(r)
	if !ok {
		ev.Err = errUnauthenticated
		return m.refuse(w, ev, OutcomeRejected, problem{Type: TypeUnauthenticated, Status: http.StatusUnauthorized,
			Detail: "this request needs an authenticated caller"}), false
	}
	if p := textcheck.Problem(scope, lwt.DefaultMaxKeyLength); p != "" {
		ev.Err = fmt.Errorf("httpidem: scope: %s", p)
		return m.refuse(w, ev, OutcomeUnavailable, problem{Type: TypeScopeMissing, Status: http.StatusInternalServerError}), false
	}
	ev.Scope = scope
	body, err := readBody(r, m.cfg.maxBody)
	if err != nil {
		ev.Err = err
		if errors.Is(err, errBodyTooLarge) {
			return m.refuse(w, ev, OutcomeRejected, problem{Type: TypeBodyTooLarge, Status: http.StatusRequestEntityTooLarge,
				Detail: fmt.Sprintf("the request body may have at most %d bytes", m.cfg.maxBody)}), false
		}
		return m.refuse(w, ev, OutcomeRejected, problem{Type: TypeBodyUnreadable, Status: http.StatusBadRequest}), false
	}
	fp, err := m.cfg.fingerprint(withBody(r, body), body)
	if err != nil {
		ev.Err = err
		return m.refuse(w, ev, OutcomeRejected, problem{Type: TypeFingerprintFailed, Status: http.StatusBadRequest}), false
	}
	return m.execute(w, withBody(r, body), next, ev, fp)
}

// withBody returns a shallow copy of r whose body reads body from its start.
func withBody(r *http.Request, body []byte) *http.Request {
	r2 := r.WithContext(r.Context()) // a shallow copy
	if r.Body != nil && r.Body != http.NoBody {
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return r2
}

// refuse answers with p and completes ev.
func (m *Middleware) refuse(w http.ResponseWriter, ev Event, o Outcome, p problem) Event {
	writeProblem(w, p)
	ev.Outcome, ev.Status, ev.Type = o, p.Status, p.Type
	return ev
}
