package httpidem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
)

// errUnauthenticated: the scope option found no identity in the request (TypeUnauthenticated).
var errUnauthenticated = errors.New("httpidem: no authenticated principal to scope the key by")

// Prefixes of the scopes that the ready scope options derive, so a principal's scope never
// equals a hashed credential's, nor DefaultScope, even in a store that several middlewares share.
const (
	principalScopePrefix     = "principal:"
	authorizationScopePrefix = "authorization-sha256:"
)

// scopeFunc derives the scope of a request. ok is false when the request carries no identity
// to scope it by: it is answered 401 (TypeUnauthenticated) and nothing is claimed.
type scopeFunc func(r *http.Request) (scope string, ok bool)

// principalKey is the context key of the authenticated principal.
type principalKey struct{}

// WithPrincipal returns a copy of ctx that carries id, the authenticated principal (user,
// account or tenant) of the request, for WithPrincipalScope. The service's authentication
// middleware calls it once it has verified the caller, before this middleware runs:
//
//	next.ServeHTTP(w, r.WithContext(httpidem.WithPrincipal(r.Context(), account.ID)))
//
// An empty id is no principal. A nil ctx stands for context.Background().
func WithPrincipal(ctx context.Context, id string) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, principalKey{}, id)
}

// PrincipalFrom returns the principal that WithPrincipal put in ctx; ok is false when there is
// none (or it is empty, or ctx is nil).
func PrincipalFrom(ctx context.Context) (id string, ok bool) {
	if ctx == nil {
		return "", false
	}
	id, _ = ctx.Value(principalKey{}).(string)
	return id, id != ""
}

// chooseScope is the one place a scope option sets the scope, so that New can refuse a
// middleware built with no scope choice, or with two.
func chooseScope(call string, fn scopeFunc) Option {
	return func(c *config) error {
		if c.scope != nil {
			return bad(call, "a second scope option: choose one")
		}
		c.scope = fn
		return nil
	}
}

// WithPrincipalScope stores each key under the authenticated principal that the service's
// authentication middleware put in the request's context with WithPrincipal, so a client can
// never replay, or learn of, another principal's keys. A request without a principal is
// answered 401 (TypeUnauthenticated) and nothing is claimed: it never falls into a shared
// scope. The scope is "principal:" followed by the id, which must be valid UTF-8 of at most
// 245 bytes (else 500, TypeScopeMissing). This is the choice for most services.
func WithPrincipalScope() Option {
	return chooseScope("WithPrincipalScope()", func(r *http.Request) (string, bool) {
		id, ok := PrincipalFrom(r.Context())
		return principalScopePrefix + id, ok
	})
}

// WithAuthorizationScope stores each key under the SHA-256 of the request's Authorization
// header (its values joined, hex encoded), never the credential itself, for services whose
// authentication runs elsewhere (a gateway) and leaves the credential in the request. Only a
// client that holds the same credential shares a scope. A request without the header is
// answered 401 (TypeUnauthenticated) and nothing is claimed. A client whose credential changes
// (a refreshed token) starts a new scope: its retries with the new credential run again, so
// prefer WithPrincipalScope when tokens are short-lived.
func WithAuthorizationScope() Option {
	return chooseScope("WithAuthorizationScope()", func(r *http.Request) (string, bool) {
		values := r.Header.Values("Authorization")
		if strings.TrimSpace(strings.Join(values, "")) == "" {
			return "", false
		}
		sum := sha256.Sum256([]byte(strings.Join(values, "\n")))
		return authorizationScopePrefix + hex.EncodeToString(sum[:]), true
	})
}

// WithScope sets how the scope of a key (its namespace in the store) is derived from the
// request: the authenticated tenant or principal, never anything the client sends
// unauthenticated, so one tenant can never read another's stored response. It runs before the
// body is read, after any middleware in front of this one. A scope that is empty, over 255
// bytes or not UTF-8 is answered 500 (TypeScopeMissing): a configuration error, such as a
// missing authentication step.
func WithScope(scope func(r *http.Request) string) Option {
	if scope == nil {
		return set(true, "WithScope(nil)", "no function", nil)
	}
	return chooseScope("WithScope", func(r *http.Request) (string, bool) { return scope(r), true })
}

// WithSingleTenantSharedScope puts every request into one scope, DefaultScope, whoever sends
// it. It is right only for a service with a single client (or clients that trust each other
// completely): any client that sends another client's key gets that client's stored response,
// headers included, or a 422 that confirms the key exists, and can use a key first so that the
// other's request is refused. Every multi-tenant service must use WithPrincipalScope,
// WithAuthorizationScope or WithScope instead.
func WithSingleTenantSharedScope() Option {
	return chooseScope("WithSingleTenantSharedScope()", func(*http.Request) (string, bool) { return DefaultScope, true })
}
