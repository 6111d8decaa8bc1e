// Package httpidem is an Idempotency-Key middleware for net/http: build it with [New] over an
// lwt.Store and one scope option (such as [WithPrincipalScope]), and wrap handlers with
// [Middleware.Handler]. It runs a request's handler at most once per key and replays its stored
// response to every retry, in the manner of the IETF draft "The Idempotency-Key HTTP Header
// Field" (draft-ietf-httpapi-idempotency-key-header) and Stripe's documented behaviour.
//
// It is built on lwt.Store.ExecuteOnce, so the claim's lease is renewed while the handler runs,
// the response is stored even after the client went away, a panicking handler releases its key,
// and the store's completed-result cache (lwt.WithCache) answers duplicates in this process.
// It depends on net/http alone: Middleware.Handler has the func(http.Handler) http.Handler shape
// that chi's Use, gorilla/mux's Use, echo's WrapMiddleware and the standard ServeMux (wrap the
// handler) all take.
//
// # Policy
//
//	| case                                 | default                                     | option                       |
//	| ------------------------------------ | ------------------------------------------- | ---------------------------- |
//	| methods covered                      | POST, PATCH; every other method untouched   | WithMethods                  |
//	| key header                           | Idempotency-Key, an sf-string or bare token | WithHeader                   |
//	| key missing                          | 400                                         | WithKeyOptional (passes on)  |
//	| key empty, malformed                 | 400                                         |                              |
//	| key under 16 or over 255 bytes       | 400                                         | WithMin/MaxKeyLength         |
//	| scope (tenant) of a key              | none: New requires a choice (see below)     | WithPrincipalScope, ...      |
//	| no principal for the scope           | 401, nothing claimed                        |                              |
//	| fingerprint                          | method, path, query and body                | WithFingerprint              |
//	| body over 1 MiB                      | 413, nothing claimed                        | WithMaxBodySize              |
//	| same key, other fingerprint          | 422                                         |                              |
//	| same key while the first runs        | 409 with Retry-After                        | WithWaitInFlight (waits)     |
//	| 2xx, 3xx, 4xx response               | stored and replayed                         |                              |
//	| 5xx response                         | answered, key released: a retry runs again  | WithStore5xx (stored)        |
//	| handler panic                        | 500, key released: a retry runs again       |                              |
//	| response over 256 KiB when encoded   | answered once; retries get 410              | WithMaxResponseSize          |
//	| stored headers                       | all but Set-Cookie                          | WithStoredHeaders            |
//
// Every answer the middleware makes itself is an RFC 9457 application/problem+json document whose
// "type" is one of the Type constants, stable across versions; it never carries internal error
// text. A replay carries the stored status, headers and body plus "Idempotent-Replayed: true".
//
// # The key
//
// The draft defines the header as a Structured Field Item whose value is a String (RFC 8941):
// a quoted string such as "8e03978e-40d5-43e8-bc93-6894a57f9324", with \" and \\ as its only
// escapes. Most clients send the key unquoted, so a bare value is accepted as it is too: one or
// more visible ASCII characters other than DQUOTE, backslash, comma and semicolon (a UUID, a
// ULID, base64). Parameters, lists and a header sent twice are malformed. The key's limit is in
// bytes of the unquoted value.
//
// # Scope
//
// Keys are stored under a scope, the namespace of lwt.IdempotencyKey, so two clients that pick
// the same key never see each other's record: a client that sends another's key gets a run of
// its own, never the other's response or headers, and its 409 or 422 only ever speaks of its
// own requests. New refuses to build a middleware without one scope option:
//
//   - WithPrincipalScope: the authenticated principal that the service's authentication puts in
//     the request's context with WithPrincipal. The choice for most services.
//   - WithAuthorizationScope: the SHA-256 of the Authorization header (never the credential
//     itself), when authentication happens in front of the service.
//   - WithScope: any function of the request, such as a tenant taken from a verified token;
//     never anything the client sends unauthenticated.
//   - WithSingleTenantSharedScope: one scope, DefaultScope, for every request. Right only for a
//     service with a single client: any client that sends another client's key gets that
//     client's stored response (or a 422 that confirms the key exists).
//
// A request in which WithPrincipalScope finds no principal, or WithAuthorizationScope no
// Authorization header, is answered 401 (TypeUnauthenticated) and nothing is claimed: it never
// falls into a shared scope. Run the middleware after authentication.
//
// Keys must have at least 16 bytes by default (WithMinKeyLength): a key stands for one
// operation of one client for the whole retention, so it should be random, such as a UUID.
//
// # Which responses are stored
//
// 2xx, 3xx and 4xx are final answers: retrying the request will not change them, so they are
// stored and replayed. A 5xx says the server failed; by default the key is released so the
// client's retry runs the handler again. Keep that default when a 5xx means nothing happened
// (the handler failed before its side effect, or rolled it back). Choose WithStore5xx, as Stripe
// does, when a handler can fail after a side effect it cannot undo: the retry then gets the same
// 5xx instead of a second side effect, and the client must use a new key to try again.
//
// # Stored headers
//
// Hop-by-hop headers (Connection and the headers it names, Keep-Alive, Proxy-*, TE, Trailer,
// Transfer-Encoding, Upgrade), Date and Content-Length are never stored: the server writes them
// anew on every response. Of the rest, the default stores everything but Set-Cookie. A cookie
// usually carries a session or CSRF token issued to the client that made the first request;
// replaying it would hand that credential to whoever presents the key later, and re-set a
// session that may since have been revoked. WithStoredHeaders changes the choice
// (DefaultStoredHeader is the default, to compose with).
//
// # Never twice, never stuck
//
// Once the handler has run for a key, no later request with the key runs it again within the
// store's retention. The handler's context does not end when the client disconnects, so the
// handler finishes, its response is stored and the client's retry gets the replay; the context
// ends only if the claim's lease is lost (see lwt.ClaimFromContext for a fencing token). The
// response is buffered until the handler returns (http.Flusher and http.Hijacker are not
// offered), and answered after it is stored. A response whose encoding would exceed
// WithMaxResponseSize is streamed to the first caller as the handler writes it, and the key
// records only its status and size: retries get a stable 410 problem instead of a second run.
// WithMaxResponseSize must not exceed the store's lwt.WithMaxResultSize.
//
// What lwt cannot guarantee, this package cannot either: a handler that stalls past its lease
// (renewals failing) may be taken over by a retry, and a completion whose outcome stays unknown
// leaves the key claimed until its lease passes; the response is still sent to the first
// caller and the Observer reports OutcomeUnrecorded.
//
// # Stored encoding
//
// A stored response is a versioned binary record, not JSON: a version byte (1), a kind byte
// ('R' response, 'O' oversized), the status and each header as uvarint-length-prefixed fields,
// then the body's raw bytes. A later version will be read alongside it.
//
// # Concurrency
//
// A Middleware is safe for concurrent use. Of its own it starts no goroutine that outlives a
// request: ExecuteOnce renews the lease from one it stops before returning, and a client that
// goes away before the handler starts ends the claim from a context.AfterFunc. Observers are
// called synchronously from the request's goroutine.
package httpidem
