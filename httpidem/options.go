package httpidem

import (
	"fmt"
	"net/http"
	"strings"

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

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
}

// WithHeader sets the request header that carries the key. Default Idempotency-Key.
func WithHeader(name string) Option {
	return func(c *config) error {
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			return invalid("header name %q is not an HTTP token", name)
		}
		c.header = http.CanonicalHeaderKey(name)
		return nil
	}
}

// WithKeyOptional lets a request without a key pass to the handler untouched, as Stripe does,
// instead of answering 400. A key that is present is still checked. Use one Middleware per
// group of routes to make the key required on some and optional on others.
func WithKeyOptional() Option {
	return func(c *config) error {
		c.keyOptional = true
		return nil
	}
}

// WithMaxKeyLength sets the longest key in bytes (unquoted); a longer one gets 400. Default
// 255; at most the store's lwt.WithMaxKeyLength, at least the shortest key (WithMinKeyLength).
func WithMaxKeyLength(n int) Option {
	return keyLength("max", n, func(c *config) { c.maxKeyLength = n })
}

// WithMinKeyLength sets the shortest key in bytes (unquoted); a shorter one gets 400
// (TypeKeyInvalid) and nothing is claimed. Default 16: a key is meant to be unique to one
// operation of one client for the whole retention, so it must have room for randomness, and 16
// bytes hold 64 random bits in hex or 96 in base64. UUIDs (36 bytes, or 32 without hyphens),
// ULIDs (26) and Stripe-style random keys pass; counters and short words such as "1" or
// "order-7", which collide between a client's own operations, do not.
func WithMinKeyLength(n int) Option {
	return keyLength("min", n, func(c *config) { c.minKeyLength = n })
}

// keyLength is an option that sets a bound of the key's length, named which, with set once n
// is a usable length; New checks that the bounds are in order.
func keyLength(which string, n int, set func(*config)) Option {
	return func(c *config) error {
		if n < 1 || n > maxKeyLengthLimit {
			return invalid("%s key length %d must be between 1 and %d bytes", which, n, maxKeyLengthLimit)
		}
		set(c)
		return nil
	}
}

// WithMethods sets the methods whose requests take the key; every other method passes through
// untouched. Default POST and PATCH: the methods that are not idempotent by definition.
func WithMethods(methods ...string) Option {
	return func(c *config) error {
		if len(methods) == 0 {
			return invalid("no methods")
		}
		set := make(map[string]bool, len(methods))
		for _, m := range methods {
			if m == "" || strings.IndexFunc(m, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
				return invalid("method %q is not an HTTP token", m)
			}
			set[m] = true
		}
		c.methods = set
		return nil
	}
}

// WithFingerprint sets what identifies the request a key stands for: the same key sent with a
// request whose fingerprint differs gets 422 and nothing runs. fn gets the request and its
// whole body (read up to WithMaxBodySize) and returns bytes that the store hashes with SHA-256;
// an error is answered 400 (TypeFingerprintFailed). Default RequestFingerprint: method, path,
// query and body. Use a subset, such as selected JSON fields, when clients may resend a request
// that differs in fields that do not matter (a timestamp, a trace id).
func WithFingerprint(fn func(r *http.Request, body []byte) ([]byte, error)) Option {
	return func(c *config) error {
		if fn == nil {
			return invalid("nil fingerprint function")
		}
		c.fingerprint = fn
		return nil
	}
}

// WithMaxBodySize sets the largest request body in bytes that the middleware reads; a larger
// one gets 413 before anything is claimed. Default 1 MiB, at most 1 GiB.
func WithMaxBodySize(n int64) Option {
	return func(c *config) error {
		if n < 0 || n > maxBodySizeLimit {
			return invalid("max body size %d must be between 0 and %d bytes", n, maxBodySizeLimit)
		}
		c.maxBody = n
		return nil
	}
}

// WithMaxResponseSize sets the largest stored response, in bytes of its encoding (headers and
// body). A larger response is answered once and recorded as too large (TypeResponseNotStored
// for retries). It must not exceed the store's lwt.WithMaxResultSize. Default 256 KiB, the
// store's default.
func WithMaxResponseSize(n int) Option {
	return func(c *config) error {
		if n < 64 || n > lwt.MaxResultSizeLimit {
			return invalid("max response size %d must be between 64 and %d bytes", n, lwt.MaxResultSizeLimit)
		}
		c.maxResponse = n
		return nil
	}
}

// WithWaitInFlight makes a request that meets another request with the same key still running
// wait for that one's stored response, for as long as the client stays connected, instead of
// answering 409. If the other request's claim is released (a 5xx), this one runs the handler.
func WithWaitInFlight() Option {
	return func(c *config) error {
		c.wait = true
		return nil
	}
}

// WithStore5xx stores 5xx responses and replays them, as Stripe does, instead of releasing the
// key. See the package doc for when to choose it.
func WithStore5xx() Option {
	return func(c *config) error {
		c.store5xx = true
		return nil
	}
}

// WithStoredHeaders sets which response headers are stored and replayed: keep gets each
// header's canonical name. Hop-by-hop headers, Date and Content-Length are never stored.
// Default DefaultStoredHeader (all but Set-Cookie).
func WithStoredHeaders(keep func(name string) bool) Option {
	return func(c *config) error {
		if keep == nil {
			return invalid("nil header filter")
		}
		c.storedHeader = keep
		return nil
	}
}

// WithObserver sets a hook called once for every request the middleware handles (not for
// methods it passes through), after the response is written, to log or count its Outcome. It
// runs on the request's goroutine: keep it fast.
func WithObserver(fn func(Event)) Option {
	return func(c *config) error {
		if fn == nil {
			return invalid("nil observer")
		}
		c.observer = fn
		return nil
	}
}

// isTokenChar reports whether r is a tchar of RFC 9110.
func isTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}
