package httpidem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// node is a keyspace on the real node, shared by the tests of TestAgainstNode: creating a
// keyspace takes seconds, and each test keeps to scopes of its own (see middleware).
type node struct {
	session  *gocql.Session
	keyspace string
}

// TestAgainstNode runs the middleware's tests against the real node over loopback HTTP, in
// parallel on one keyspace.
func TestAgainstNode(t *testing.T) {
	session, ks := testnode.NewSession(t)
	n := node{session: session, keyspace: ks}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, node)
	}{
		{"ConcurrentRequestsOnTwoServersRunOnce", testConcurrentRequestsOnTwoServersRunOnce},
		{"ClientDisconnectThenRetryGetsReplay", testClientDisconnectThenRetryGetsReplay},
		{"HandlerThreeTimesTheLeaseIsNotTakenOver", testHandlerThreeTimesTheLeaseIsNotTakenOver},
		{"PanickingHandlerReleasesTheKey", testPanickingHandlerReleasesTheKey},
		{"WaitInFlightGetsTheResponse", testWaitInFlightGetsTheResponse},
		{"ScopeSeparatesTenants", testScopeSeparatesTenants},
		{"PrincipalScopeNeverReplaysAcrossClients", testPrincipalScopeNeverReplaysAcrossClients},
		{"ConcurrentClientsOnOneKeyRunOncePerClient", testConcurrentClientsOnOneKeyRunOncePerClient},
		{"AuthorizationScopeHashesTheCredential", testAuthorizationScopeHashesTheCredential},
		{"ShortKeysAre400", testShortKeysAre400},
		{"OversizedRequestBodyClaimsNothing", testOversizedRequestBodyClaimsNothing},
		{"SameKeyDifferentRequestIs422", testSameKeyDifferentRequestIs422},
		{"BadKeysAre400", testBadKeysAre400},
		{"OtherMethodsPassThrough", testOtherMethodsPassThrough},
		{"MethodCaseDoesNotRunTwice", testMethodCaseDoesNotRunTwice},
		{"OptionalKeyPassesRequestsWithout", testOptionalKeyPassesRequestsWithout},
		{"CustomFingerprintComparesASubset", testCustomFingerprintComparesASubset},
		{"ReplayKeepsStatusHeadersAndBody", testReplayKeepsStatusHeadersAndBody},
		{"ServerErrorsReleaseByDefault", testServerErrorsReleaseByDefault},
		{"OversizedResponseIsAnsweredOnceAndRecorded", testOversizedResponseIsAnsweredOnceAndRecorded},
		{"ResponseOverTheStoresLimitIsRecorded", testResponseOverTheStoresLimitIsRecorded},
		{"RepeatableHandlerRaceAnswersOneResponse", testRepeatableHandlerRaceAnswersOneResponse},
		{"RepeatableHandlerKeyReuseIs422", testRepeatableHandlerKeyReuseIs422},
		{"RepeatableHandlerUncommittedIsNotAnswered", testRepeatableHandlerUncommittedIsNotAnswered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, n)
		})
	}
}

// testScope returns a scope unique to this run of the test, so tests sharing a keyspace, and
// repeated runs (-count), never meet each other's keys.
func testScope(t *testing.T) string {
	return fmt.Sprintf("%s/%d", t.Name(), time.Now().UnixNano())
}

// store returns a store on the node's idempotency_keys table.
func (n node) store(t *testing.T, opts ...lwt.StoreOption) *lwt.Store {
	t.Helper()
	s, err := lwt.NewStore(n.session, lwt.IdempotencyKeys(n.keyspace), opts...)
	require.NoError(t, err)
	return s
}

// serve runs h on a real HTTP server on a loopback port until the test ends, and returns its
// base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx), "every handler returns")
		<-done
	})
	return "http://" + ln.Addr().String()
}

// scopeOption is a WithScope of one scope unique to this run of the test, for middlewares
// that must share it (two server instances).
func scopeOption(t *testing.T) Option {
	scope := testScope(t)
	return WithScope(func(*http.Request) string { return scope })
}

// middleware builds a Middleware over store, in a scope of the test's own unless opts set
// another, failing the test on a bad option.
func middleware(t *testing.T, store *lwt.Store, opts ...Option) *Middleware {
	t.Helper()
	return scopedMiddleware(t, store, append([]Option{scopeOption(t)}, opts...)...)
}

// scopedMiddleware builds a Middleware over store whose scope option is among opts.
func scopedMiddleware(t *testing.T, store *lwt.Store, opts ...Option) *Middleware {
	t.Helper()
	m, err := New(store, opts...)
	require.NoError(t, err)
	return m
}

// charges is a handler with a side effect to count: each run makes a new charge.
type charges struct {
	runs  atomic.Int64
	delay time.Duration
}

func (c *charges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	n := c.runs.Add(1)
	time.Sleep(c.delay)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/charges/ch_%d", n))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"charge":"ch_%d","request":%q}`, n, body)
}

// reply is what a client saw of one request.
type reply struct {
	status int
	header http.Header
	body   string
}

func (r reply) replayed() bool { return r.header.Get(ReplayedHeader) == "true" }

// problemType decodes the reply as a problem document and returns its type ("" if it is not one).
func (r reply) problemType() string {
	if r.header.Get("Content-Type") != "application/problem+json" {
		return ""
	}
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	if json.Unmarshal([]byte(r.body), &p) != nil || p.Status != r.status {
		return "malformed problem: " + r.body
	}
	return p.Type
}

var testClient = &http.Client{Timeout: 30 * time.Second}

// send makes one request and reads the whole reply. It returns an error rather than failing
// the test, so goroutines may call it.
func send(ctx context.Context, method, url, key, body string) (reply, error) {
	return sendAs(ctx, "", method, url, key, body)
}

// sendAs is send with "Authorization: Bearer token" when token is not empty.
func sendAs(ctx context.Context, token, method, url, key, body string) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set(DefaultHeader, key)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

// mustSend is send for the test's own goroutine.
func mustSend(t *testing.T, method, url, key, body string) reply {
	t.Helper()
	r, err := send(context.Background(), method, url, key, body)
	require.NoError(t, err)
	return r
}

// untilSettled repeats the request while it gets 409 and returns the first other reply and how
// many 409s came before it.
func untilSettled(t *testing.T, url, key, body string) (reply, int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for conflicts := 0; ; conflicts++ {
		r := mustSend(t, http.MethodPost, url, key, body)
		if r.status != http.StatusConflict || time.Now().After(deadline) {
			return r, conflicts
		}
		require.NotEmpty(t, r.header.Get("Retry-After"))
		time.Sleep(20 * time.Millisecond)
	}
}

// outcomes counts the observer's events.
type outcomes struct {
	mu sync.Mutex
	n  map[Outcome]int
	// errs holds the errors of events that should have none: answers from a handler's run or
	// a stored response.
	errs []error
}

func (o *outcomes) observe(e Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[Outcome]int{}
	}
	o.n[e.Outcome]++
	if e.Err != nil && (e.Outcome == OutcomeNew || e.Outcome == OutcomeReplayed) {
		o.errs = append(o.errs, fmt.Errorf("%s: %w", e.Outcome, e.Err))
	}
}

func (o *outcomes) get() map[Outcome]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[Outcome]int{}
	for k, v := range o.n {
		out[k] = v
	}
	return out
}

func (o *outcomes) err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return errors.Join(o.errs...)
}
