package httpidem

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
)

// Defaults of the middleware's options.
const (
	DefaultHeader          = "Idempotency-Key"
	DefaultMaxKeyLength    = lwt.DefaultMaxKeyLength // bytes, as Stripe allows
	DefaultMinKeyLength    = 16                      // bytes; see WithMinKeyLength
	DefaultMaxBodySize     = 1 << 20                 // bytes of request body read to fingerprint it
	DefaultMaxResponseSize = lwt.DefaultMaxResultSize
	DefaultScope           = "http" // the one scope of WithSingleTenantSharedScope
	maxBodySizeLimit       = 1 << 30
	maxKeyLengthLimit      = 4096
)

// Option configures a Middleware.
type Option func(*config) error

type config struct {
	header       string
	keyOptional  bool
	minKeyLength int
	maxKeyLength int
	methods      map[string]bool
	scope        scopeFunc // nil until a scope option chooses one: New refuses that
	fingerprint  func(*http.Request, []byte) ([]byte, error)
	maxBody      int64
	maxResponse  int
	wait         bool
	repeatable   bool
	store5xx     bool
	storedHeader func(name string) bool
	observer     func(Event)
}

func defaultConfig() config {
	return config{
		header:       DefaultHeader,
		minKeyLength: DefaultMinKeyLength,
		maxKeyLength: DefaultMaxKeyLength,
		methods:      map[string]bool{http.MethodPost: true, http.MethodPatch: true},
		fingerprint:  RequestFingerprint,
		maxBody:      DefaultMaxBodySize,
		maxResponse:  DefaultMaxResponseSize,
		storedHeader: DefaultStoredHeader,
		observer:     func(Event) {},
	}
}

func bad(call, format string, args ...any) error {
	return optcheck.Bad(ErrInvalidOption, call, format, args...)
}

// set is an option that applies apply, or refuses, named by call, when isBad.
func set(isBad bool, call, why string, apply func(*config)) Option {
	return optcheck.Set(ErrInvalidOption, isBad, call, why, apply)
}

func notToken(s string) bool {
	return s == "" || strings.IndexFunc(s, func(r rune) bool { return !isTokenChar(r) }) >= 0
}

// WithHeader sets the request header that carries the key. Default Idempotency-Key.
func WithHeader(name string) Option {
	return set(notToken(name), optcheck.Call("WithHeader", name), "not an HTTP token",
		func(c *config) { c.header = http.CanonicalHeaderKey(name) })
}

// WithKeyOptional lets a request without a key pass to the handler untouched, as Stripe does,
// instead of answering 400. A key that is present is still checked. Use one Middleware per
// group of routes to make the key required on some and optional on others.
func WithKeyOptional() Option { return set(false, "", "", func(c *config) { c.keyOptional = true }) }

// WithMaxKeyLength sets the longest key in bytes (unquoted); a longer one gets 400. Default
// 255; at most the store's lwt.WithMaxKeyLength, at least the shortest key (WithMinKeyLength).
func WithMaxKeyLength(n int) Option {
	return set(badKeyLength(n), optcheck.Call("WithMaxKeyLength", n), keyLengthRange, func(c *config) { c.maxKeyLength = n })
}

// WithMinKeyLength sets the shortest key in bytes (unquoted); a shorter one gets 400
// (TypeKeyInvalid) and nothing is claimed. Default 16: a key is meant to be unique to one
// operation of one client for the whole retention, so it must have room for randomness, and 16
// bytes hold 64 random bits in hex or 96 in base64. UUIDs (36 bytes, or 32 without hyphens),
// ULIDs (26) and Stripe-style random keys pass; counters and short words such as "1" or
// "order-7", which collide between a client's own operations, do not.
func WithMinKeyLength(n int) Option {
	return set(badKeyLength(n), optcheck.Call("WithMinKeyLength", n), keyLengthRange, func(c *config) { c.minKeyLength = n })
}

// A bound of the key's length must be a usable length; New checks that the bounds are in order.
var keyLengthRange = fmt.Sprintf("must be 1 to %d bytes", maxKeyLengthLimit)

func badKeyLength(n int) bool { return n < 1 || n > maxKeyLengthLimit }

// WithMethods sets the methods whose requests take the key; every other method passes through
// untouched. Default POST and PATCH: the methods that are not idempotent by definition. Methods
// are matched without regard to case ("post" is POST), here and in the requests.
func WithMethods(methods ...string) Option {
	return func(c *config) error {
		call := optcheck.Call("WithMethods", anys(methods)...)
		if len(methods) == 0 {
			return bad(call, "no methods")
		}
		set := make(map[string]bool, len(methods))
		for _, m := range methods {
			if notToken(m) {
				return bad(call, "%q is not an HTTP token", m)
			}
			set[strings.ToUpper(m)] = true
		}
		c.methods = set
		return nil
	}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// WithFingerprint sets what identifies the request a key stands for: the same key sent with a
// request whose fingerprint differs gets 422 and nothing runs. fn gets the request and its
// whole body (read up to WithMaxBodySize) and returns bytes that the store hashes with SHA-256;
// an error is answered 400 (TypeFingerprintFailed). Default RequestFingerprint: method, path,
// query and body. Use a subset, such as selected JSON fields, when clients may resend a request
// that differs in fields that do not matter (a timestamp, a trace id).
func WithFingerprint(fn func(r *http.Request, body []byte) ([]byte, error)) Option {
	return set(fn == nil, "WithFingerprint(nil)", "no function", func(c *config) { c.fingerprint = fn })
}

// WithMaxBodySize sets the largest request body in bytes that the middleware reads; a larger
// one gets 413 before anything is claimed. Default 1 MiB, at most 1 GiB.
func WithMaxBodySize(n int64) Option {
	return set(n < 0 || n > maxBodySizeLimit, optcheck.Call("WithMaxBodySize", n),
		fmt.Sprintf("must be 0 to %d bytes", maxBodySizeLimit), func(c *config) { c.maxBody = n })
}

// WithMaxResponseSize sets the largest stored response, in bytes of its encoding (headers and
// body). A larger response is answered once and recorded as too large (TypeResponseNotStored
// for retries). It must not exceed the store's lwt.WithMaxResultSize; with
// WithRepeatableHandler New refuses it if it does. Default 256 KiB, the store's default.
func WithMaxResponseSize(n int) Option {
	return set(n < 64 || n > lwt.MaxResultSizeLimit, optcheck.Call("WithMaxResponseSize", n),
		fmt.Sprintf("must be 64 to %d bytes", lwt.MaxResultSizeLimit), func(c *config) { c.maxResponse = n })
}

// WithWaitInFlight makes a request that meets another request with the same key still running
// wait for that one's stored response, for as long as the client stays connected, instead of
// answering 409. If the other request's claim is released (a 5xx), this one runs the handler.
func WithWaitInFlight() Option { return set(false, "", "", func(c *config) { c.wait = true }) }

// WithRepeatableHandler declares that the handler may run more than once per key: its only
// effects are its response and the events it stages with package outbox (r.Context()), so a
// request costs one Paxos round instead of two (lwt.WithRepeatableFunction). Requests with one
// key that race each other from several processes all run the handler; one response is stored,
// and every request, the racers included, is answered with it (the losers' as a replay). With
// a cache, a request whose key is running in the same process waits for that run and gets its
// response, and runs the handler only if that run committed nothing. A response too large to
// store is buffered whole rather than streamed, since a loser's must never reach its client,
// and a response is sent only once committed: a run whose commit did not happen (past its
// lease, or the node gone under it) is answered 503, since nothing of it took effect.
// Without a cache a retry runs the handler again before it finds the stored response: give the
// store one (lwt.WithCache) so that retries of a handler slower than the clients' timeout are
// answered.
// Never use it for a handler with another effect (a payment, an email, a write elsewhere): use
// one Middleware per group of routes to keep it to the handlers whose effects are their commit.
func WithRepeatableHandler() Option {
	return func(c *config) error {
		c.repeatable = true
		return nil
	}
}

// WithStore5xx stores 5xx responses and replays them, as Stripe does, instead of releasing the
// key. See docs/http.md for when to choose it.
func WithStore5xx() Option { return set(false, "", "", func(c *config) { c.store5xx = true }) }

// WithStoredHeaders sets which response headers are stored and replayed: keep gets each
// header's canonical name. Hop-by-hop headers, Date and Content-Length are never stored.
// Default DefaultStoredHeader (all but Set-Cookie).
func WithStoredHeaders(keep func(name string) bool) Option {
	return set(keep == nil, "WithStoredHeaders(nil)", "no filter", func(c *config) { c.storedHeader = keep })
}

// WithObserver sets a hook called once for every request the middleware handles (not for
// methods it passes through), after the response is written, to log or count its Outcome. It
// runs on the request's goroutine: keep it fast.
func WithObserver(fn func(Event)) Option {
	return set(fn == nil, "WithObserver(nil)", "no observer", func(c *config) { c.observer = fn })
}

// isTokenChar reports whether r is a tchar of RFC 9110.
func isTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}
