// Package httpidem is an Idempotency-Key middleware for net/http: build it with [New] over an
// lwt.Store and one scope option (such as [WithPrincipalScope]), and wrap handlers with
// [Middleware.Handler]. It runs a request's handler at most once per key and replays its stored
// response to every retry, in the manner of the IETF draft "The Idempotency-Key HTTP Header
// Field" (draft-ietf-httpapi-idempotency-key-header) and Stripe's documented behaviour.
//
//	store, _ := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"), lwt.WithCache(10_000))
//	idem, _ := httpidem.New(store, httpidem.WithPrincipalScope())
//	// authenticate, the service's own, calls httpidem.WithPrincipal(ctx, accountID)
//	mux.Handle("POST /charges", authenticate(idem.Handler(createCharge)))
//
// It is built on lwt.Store.ExecuteOnce, so the claim's lease is renewed while the handler runs,
// the response is stored even after the client went away, a panicking handler releases its key,
// and the store's completed-result cache (lwt.WithCache) answers duplicates in this process.
// Middleware.Handler has the func(http.Handler) http.Handler shape that chi's Use, gorilla/mux's
// Use, echo's WrapMiddleware and the standard ServeMux (wrap the handler) all take.
//
// By default POST and PATCH take the key; a missing, malformed, too short (under 16 bytes) or too
// long key gets 400; the same key with another request (its fingerprint: method, path, query and
// body) gets 422, and while the first request runs, 409. 2xx, 3xx and 4xx responses are stored
// and replayed with "Idempotent-Replayed: true"; a 5xx or a panic releases the key, so a retry
// runs again (WithStore5xx stores 5xx instead). Each default and the option that changes it:
// docs/http.md. A bad option makes New fail with an error that names it and matches
// ErrInvalidOption.
//
// Every answer the middleware makes itself is an RFC 9457 application/problem+json document whose
// "type" is one of the Type constants, stable across versions; it never carries internal error
// text.
//
// # Scope
//
// Keys are stored under a scope, the namespace of lwt.IdempotencyKey, so two clients that pick
// the same key never see each other's record. New refuses to build a middleware without one
// scope option: WithPrincipalScope (the principal put in the request's context with
// WithPrincipal: the choice for most services), WithAuthorizationScope (the SHA-256 of the
// Authorization header), WithScope (any function of the authenticated request), or, for a
// service with a single client only, WithSingleTenantSharedScope. A request without the
// principal or header its scope needs is answered 401 and nothing is claimed. Run the middleware
// after authentication.
//
// # Never twice
//
// Once the handler has run for a key, no later request with the key runs it again within the
// store's retention; the handler's context does not end when the client disconnects. What lwt
// cannot guarantee, this package cannot either (a handler stalled past its lease; an outcome
// that stays unknown): docs/http.md, "Never twice, never stuck".
//
// WithRepeatableHandler trades "runs once" for one Paxos round per new key, for handlers whose
// only effects are their response and the events they stage with package outbox: racing
// requests all run the handler, one response is stored and all get it (docs/http.md).
//
// # Concurrency
//
// A Middleware is safe for concurrent use. Of its own it starts no goroutine that outlives a
// request: ExecuteOnce renews the lease from one it stops before returning, and a client that
// goes away before the handler starts ends the claim from a context.AfterFunc. Observers are
// called synchronously from the request's goroutine.
package httpidem
