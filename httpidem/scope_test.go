package httpidem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// bearerAuth stands for a service's authentication middleware: it maps bearer tokens to
// principals, answers 401 to an unknown token, and lets a request without any credential
// through, so that the idempotency middleware's own refusal of such a request is tested.
func bearerAuth(principals map[string]string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if h == "" {
			next.ServeHTTP(w, r)
			return
		}
		id, ok := principals[strings.TrimPrefix(h, "Bearer ")]
		if !ok {
			http.Error(w, "unknown token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), id)))
	})
}

// principalServer serves charges behind bearerAuth and WithPrincipalScope, with the tokens
// "token-a" and "token-b" of two principals unique to this run of the test.
func principalServer(t *testing.T, n node, h http.Handler, opts ...Option) string {
	run := testScope(t)
	m := scopedMiddleware(t, n.store(t), append([]Option{WithPrincipalScope()}, opts...)...)
	return serve(t, bearerAuth(map[string]string{"token-a": run + "/a", "token-b": run + "/b"}, m.Handler(h)))
}

// testPrincipalScopeNeverReplaysAcrossClients: client B sending client A's key gets a run of
// its own, never A's response or headers nor a 422 that would confirm A's key; a key B used
// first does not block A; A's retries still replay A's result; a request without a principal
// is refused before anything is claimed.
func testPrincipalScopeNeverReplaysAcrossClients(t *testing.T, n node) {
	h := &charges{}
	var seen outcomes
	url := principalServer(t, n, h, WithObserver(seen.observe)) + "/charges"
	const key = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	ctx := context.Background()
	must := func(token, key, body string) reply {
		t.Helper()
		r, err := sendAs(ctx, token, http.MethodPost, url, key, body)
		require.NoError(t, err)
		return r
	}

	a := must("token-a", key, `{"amount":100}`)
	require.Equal(t, http.StatusCreated, a.status, a.body)
	b := must("token-b", key, `{"amount":100}`)
	assert.Equal(t, http.StatusCreated, b.status, b.body)
	assert.False(t, b.replayed(), "B must never get A's stored response")
	assert.NotEqual(t, a.body, b.body)
	assert.NotEqual(t, a.header.Get("Location"), b.header.Get("Location"), "nor A's headers")

	// A's key with another body: for B it is B's own key, so its answer says nothing of A's.
	other := must("token-b", "a1b2c3d4-0000-4000-8000-000000000001", `{"amount":7}`)
	assert.Equal(t, http.StatusCreated, other.status)
	mismatch := must("token-b", key, `{"amount":999}`)
	assert.Equal(t, TypeKeyReuse, mismatch.problemType(), "B's 422 is about B's own request with the key")

	// A key B uses first is no obstacle to A.
	const later = "4f9d2c1e-7b3a-4c5d-9e8f-0a1b2c3d4e5f"
	bFirst := must("token-b", later, `{"amount":1}`)
	aLater := must("token-a", later, `{"amount":2}`)
	assert.Equal(t, http.StatusCreated, bFirst.status)
	assert.Equal(t, http.StatusCreated, aLater.status, aLater.body)
	assert.False(t, aLater.replayed())

	again := must("token-a", key, `{"amount":100}`)
	assert.True(t, again.replayed(), "A's retry replays A's result")
	assert.Equal(t, a.body, again.body)
	assert.Equal(t, a.header.Get("Location"), again.header.Get("Location"))

	anon := must("", key, `{"amount":100}`)
	assert.Equal(t, http.StatusUnauthorized, anon.status)
	assert.Equal(t, TypeUnauthenticated, anon.problemType())
	assert.NotContains(t, anon.body, "ch_", "a refusal carries no stored response")
	assert.EqualValues(t, 5, h.runs.Load(), "A twice, B three times; the replay and refusals ran nothing")
	require.NoError(t, seen.err())
}

// testConcurrentClientsOnOneKeyRunOncePerClient: two clients sending one key and one body at
// once, 16 requests each, make exactly one run each, and each client only ever sees its own
// run's response.
func testConcurrentClientsOnOneKeyRunOncePerClient(t *testing.T, n node) {
	h := &charges{}
	url := principalServer(t, n, h, WithWaitInFlight()) + "/charges"
	const key = "0c6a3e5f-8d2b-4b1a-9f7e-6d5c4b3a2910"
	type got struct {
		token string
		r     reply
		err   error
	}
	replies := make(chan got, 32)
	var wg sync.WaitGroup
	for i := range 32 {
		token := []string{"token-a", "token-b"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := sendAs(context.Background(), token, http.MethodPost, url, key, `{"amount":5}`)
			replies <- got{token, r, err}
		}()
	}
	wg.Wait()
	close(replies)
	bodies := map[string]map[string]bool{}
	for g := range replies {
		require.NoError(t, g.err)
		require.Equal(t, http.StatusCreated, g.r.status, g.r.body)
		if bodies[g.token] == nil {
			bodies[g.token] = map[string]bool{}
		}
		bodies[g.token][g.r.body] = true
	}
	assert.EqualValues(t, 2, h.runs.Load(), "one run per client")
	require.Len(t, bodies, 2)
	assert.Len(t, bodies["token-a"], 1, "every reply to A is A's one response")
	assert.Len(t, bodies["token-b"], 1, "every reply to B is B's one response")
	for body := range bodies["token-a"] {
		assert.False(t, bodies["token-b"][body], "B never sees A's response")
	}
}

// testAuthorizationScopeHashesTheCredential: with WithAuthorizationScope the scope is the
// SHA-256 of the Authorization header, the credential itself is never stored, other
// credentials get runs of their own, and a request without the header is refused.
func testAuthorizationScopeHashesTheCredential(t *testing.T, n node) {
	h := &charges{}
	var mu sync.Mutex
	var scopes []string
	url := serve(t, scopedMiddleware(t, n.store(t), WithAuthorizationScope(), WithObserver(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		scopes = append(scopes, e.Scope)
	})).Handler(h)) + "/charges"
	// Tokens unique to this run, so repeated runs never meet each other's records.
	tokA, tokB := testScope(t)+"/a", testScope(t)+"/b"
	key := "5b1f0e9a-3c2d-4e6f-8a7b-9c0d1e2f3a4b"
	ctx := context.Background()
	a, err := sendAs(ctx, tokA, http.MethodPost, url, key, "{}")
	require.NoError(t, err)
	b, err := sendAs(ctx, tokB, http.MethodPost, url, key, "{}")
	require.NoError(t, err)
	again, err := sendAs(ctx, tokA, http.MethodPost, url, key, "{}")
	require.NoError(t, err)
	anon, err := sendAs(ctx, "", http.MethodPost, url, key, "{}")
	require.NoError(t, err)

	assert.False(t, b.replayed())
	assert.NotEqual(t, a.body, b.body)
	assert.True(t, again.replayed())
	assert.Equal(t, a.body, again.body)
	assert.Equal(t, http.StatusUnauthorized, anon.status)
	assert.Equal(t, TypeUnauthenticated, anon.problemType())
	assert.EqualValues(t, 2, h.runs.Load())

	sum := sha256.Sum256([]byte("Bearer " + tokA))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, scopes, 4)
	assert.Equal(t, authorizationScopePrefix+hex.EncodeToString(sum[:]), scopes[0])
	for _, s := range scopes {
		assert.NotContains(t, s, tokA, "the credential is never stored")
		assert.NotContains(t, s, tokB, "the credential is never stored")
	}
}

// testShortKeysAre400: a key under the minimum length is refused before anything is claimed;
// WithMinKeyLength lowers the minimum.
func testShortKeysAre400(t *testing.T, n node) {
	h := &charges{}
	url := serve(t, middleware(t, n.store(t)).Handler(h)) + "/charges"
	for _, key := range []string{"1", "order-7", strings.Repeat("k", DefaultMinKeyLength-1)} {
		r := mustSend(t, http.MethodPost, url, key, "{}")
		assert.Equal(t, http.StatusBadRequest, r.status, key)
		assert.Equal(t, TypeKeyInvalid, r.problemType(), key)
		assert.Contains(t, r.body, fmt.Sprintf("%d to %d bytes", DefaultMinKeyLength, DefaultMaxKeyLength))
	}
	assert.Zero(t, h.runs.Load())
	uuid := mustSend(t, http.MethodPost, url, "8e03978e-40d5-43e8-bc93-6894a57f9324", "{}")
	assert.Equal(t, http.StatusCreated, uuid.status)

	lenient := serve(t, middleware(t, n.store(t), WithMinKeyLength(4)).Handler(h)) + "/charges"
	assert.Equal(t, http.StatusCreated, mustSend(t, http.MethodPost, lenient, "abcd", "{}").status)
	assert.Equal(t, http.StatusBadRequest, mustSend(t, http.MethodPost, lenient, "abc", "{}").status)
}

func TestNewRequiresOneScopeChoice(t *testing.T) {
	t.Parallel()
	store, err := lwt.NewStore(&gocql.Session{}, lwt.IdempotencyKeys("ks"))
	require.NoError(t, err)
	_, err = New(store)
	assert.ErrorIs(t, err, ErrNoScope)
	assert.ErrorIs(t, err, ErrInvalidOption)
	_, err = New(store, WithMethods(http.MethodPost))
	assert.ErrorIs(t, err, ErrNoScope, "other options are no scope choice")
	_, err = New(store, WithPrincipalScope(), WithSingleTenantSharedScope())
	assert.ErrorIs(t, err, ErrInvalidOption, "two scope choices are ambiguous")
	assert.NotErrorIs(t, err, ErrNoScope)
	for name, o := range map[string]Option{
		"principal":     WithPrincipalScope(),
		"authorization": WithAuthorizationScope(),
		"function":      WithScope(func(*http.Request) string { return "tenant" }),
		"shared":        WithSingleTenantSharedScope(),
	} {
		_, err := New(store, o)
		assert.NoError(t, err, name)
	}
}

func TestNewRefusesBadKeyLengths(t *testing.T) {
	t.Parallel()
	store, err := lwt.NewStore(&gocql.Session{}, lwt.IdempotencyKeys("ks"))
	require.NoError(t, err)
	for name, opts := range map[string][]Option{
		"min 0":          {WithMinKeyLength(0)},
		"min 5000":       {WithMinKeyLength(5000)},
		"min over max":   {WithMinKeyLength(32), WithMaxKeyLength(20)},
		"max under dflt": {WithMaxKeyLength(DefaultMinKeyLength - 1)},
	} {
		_, err := New(store, append(opts, WithSingleTenantSharedScope())...)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
	}
	_, err = New(store, WithMinKeyLength(1), WithMaxKeyLength(1), WithSingleTenantSharedScope())
	assert.NoError(t, err)
}

func TestScopeFunctions(t *testing.T) {
	t.Parallel()
	r := func(ctx context.Context, auth ...string) *http.Request {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
		require.NoError(t, err)
		for _, a := range auth {
			req.Header.Add("Authorization", a)
		}
		return req
	}
	var c config
	require.NoError(t, WithPrincipalScope()(&c))
	s, ok := c.scope(r(WithPrincipal(context.Background(), "acct_1")))
	assert.True(t, ok)
	assert.Equal(t, "principal:acct_1", s)
	_, ok = c.scope(r(context.Background()))
	assert.False(t, ok, "no principal")
	_, ok = c.scope(r(WithPrincipal(context.Background(), "")))
	assert.False(t, ok, "an empty principal is none")

	c = config{}
	require.NoError(t, WithAuthorizationScope()(&c))
	one, ok := c.scope(r(context.Background(), "Bearer x"))
	assert.True(t, ok)
	two, _ := c.scope(r(context.Background(), "Bearer x", "Bearer y"))
	assert.NotEqual(t, one, two, "every value counts")
	for _, none := range [][]string{nil, {""}, {"  "}} {
		_, ok = c.scope(r(context.Background(), none...))
		assert.False(t, ok, "%q", none)
	}

	id, ok := PrincipalFrom(nil) //nolint:staticcheck // a nil context must not panic
	assert.False(t, ok)
	assert.Empty(t, id)
	id, ok = PrincipalFrom(WithPrincipal(nil, "p")) //nolint:staticcheck // a nil context must not panic
	assert.True(t, ok)
	assert.Equal(t, "p", id)
}

// TestNilArgumentsNeverPanic: a nil *Middleware, a nil handler, a nil request or a nil
// context is refused with a typed error or a 500 problem, never a panic.
func TestNilArgumentsNeverPanic(t *testing.T) {
	t.Parallel()
	store, err := lwt.NewStore(&gocql.Session{}, lwt.IdempotencyKeys("ks"))
	require.NoError(t, err)
	m, err := New(store, WithSingleTenantSharedScope())
	require.NoError(t, err)
	var nilMiddleware *Middleware
	for name, h := range map[string]http.Handler{
		"nil *Middleware": nilMiddleware.Handler(http.NotFoundHandler()),
		"nil handler":     m.Handler(nil),
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			w := httptest.NewRecorder()
			req := httptest.NewRequest(method, "/charges", strings.NewReader("{}"))
			req.Header.Set(DefaultHeader, "8e03978e-40d5-43e8-bc93-6894a57f9324")
			require.NotPanics(t, func() { h.ServeHTTP(w, req) }, name)
			r := reply{status: w.Code, header: w.Header(), body: w.Body.String()}
			assert.Equal(t, http.StatusInternalServerError, r.status, name)
			assert.Equal(t, TypeMisconfigured, r.problemType(), name)
		}
	}
	_, err = New(nil, WithSingleTenantSharedScope())
	assert.ErrorIs(t, err, ErrInvalidOption)
	_, err = RequestFingerprint(nil, nil)
	assert.ErrorIs(t, err, lwt.ErrInvalidArgument)
	_, err = RequestFingerprint(&http.Request{}, nil)
	assert.ErrorIs(t, err, lwt.ErrInvalidArgument)
}
