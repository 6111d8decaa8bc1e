package httpidem

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// testConcurrentRequestsOnTwoServersRunOnce sends 64 requests with one key and one body at
// once to two server instances with stores of their own (separate sessions, as two processes
// have): the handler runs once, every 2xx carries its response, the rest are 409 with a
// Retry-After.
func testConcurrentRequestsOnTwoServersRunOnce(t *testing.T, n node) {
	cluster := testnode.Cluster(t)
	cluster.Keyspace = n.keyspace
	other, err := cluster.CreateSession()
	require.NoError(t, err)
	t.Cleanup(other.Close)
	h := &charges{delay: 300 * time.Millisecond}
	var seen outcomes
	scope := scopeOption(t)
	urls := []string{
		serve(t, scopedMiddleware(t, n.store(t, lwt.WithCache(100)), scope, WithObserver(seen.observe)).Handler(h)),
		serve(t, scopedMiddleware(t, node{session: other, keyspace: n.keyspace}.store(t), scope, WithObserver(seen.observe)).Handler(h)),
	}

	const requests = 64
	replies := make(chan reply, requests)
	errs := make(chan error, requests)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			<-start
			r, err := send(context.Background(), http.MethodPost, urls[i%2]+"/charges?currency=eur", "test-order-0000-1", `{"amount":100}`)
			if err != nil {
				errs <- err
				return
			}
			replies <- r
		})
	}
	close(start)
	wg.Wait()
	close(replies)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	var created []reply
	conflicts := 0
	for r := range replies {
		switch r.status {
		case http.StatusCreated:
			created = append(created, r)
		case http.StatusConflict:
			conflicts++
			assert.Equal(t, TypeInProgress, r.problemType())
			assert.NotEmpty(t, r.header.Get("Retry-After"))
		default:
			t.Errorf("unexpected reply %d %s", r.status, r.body)
		}
	}
	assert.EqualValues(t, 1, h.runs.Load(), "the handler ran once for 64 requests on two servers")
	require.NotEmpty(t, created)
	fresh := 0
	for _, r := range created {
		assert.Equal(t, created[0].body, r.body, "every 2xx carries the one response")
		assert.Equal(t, "/charges/ch_1", r.header.Get("Location"))
		if !r.replayed() {
			fresh++
		}
	}
	assert.Equal(t, 1, fresh, "one 2xx is the first response, the others are replays")
	assert.Equal(t, requests, len(created)+conflicts)

	for _, url := range urls {
		r := mustSend(t, http.MethodPost, url+"/charges?currency=eur", "test-order-0000-1", `{"amount":100}`)
		assert.Equal(t, http.StatusCreated, r.status)
		assert.True(t, r.replayed())
		assert.Equal(t, created[0].body, r.body)
	}
	assert.EqualValues(t, 1, h.runs.Load())
	got := seen.get()
	assert.Equal(t, 1, got[OutcomeNew])
	assert.Equal(t, conflicts, got[OutcomeConflict])
	assert.Equal(t, len(created)-1+2, got[OutcomeReplayed])
	assert.NoError(t, seen.err())
}

// testClientDisconnectThenRetryGetsReplay: the client goes away while the handler runs, and the
// handler goes on for three times the lease. Retries meanwhile get 409 (no takeover); the retry
// after it finished gets the replay; the handler ran once.
func testClientDisconnectThenRetryGetsReplay(t *testing.T, n node) {
	const lease = time.Second // short, yet long enough for a renewal on a loaded machine
	store := n.store(t, lwt.WithLease(lease))
	started, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := &charges{}
	handlerCtxErr, fenced := make(chan error, 1), make(chan bool, 1)
	url := serve(t, middleware(t, store).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		<-proceed
		time.Sleep(3 * lease)
		handlerCtxErr <- r.Context().Err()
		_, ok := lwt.ClaimFromContext(r.Context())
		fenced <- ok
		h.ServeHTTP(w, r)
	})))

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := send(ctx, http.MethodPost, url+"/charges", "test-order-0000-2", `{"amount":5}`)
		first <- err
	}()
	<-started
	cancel()
	require.ErrorIs(t, <-first, context.Canceled, "the client went away mid-request")
	close(proceed)

	r, conflicts := untilSettled(t, url+"/charges", "test-order-0000-2", `{"amount":5}`)
	assert.Positive(t, conflicts, "retries during the run were refused, not run")
	assert.Equal(t, http.StatusCreated, r.status, r.body)
	assert.True(t, r.replayed())
	assert.Contains(t, r.body, `"charge":"ch_1"`)
	assert.EqualValues(t, 1, h.runs.Load())
	assert.NoError(t, <-handlerCtxErr, "the handler's context outlives the client")
	assert.True(t, <-fenced, "the handler can read its claim's fencing token")
}

// testHandlerThreeTimesTheLeaseIsNotTakenOver: while a handler runs for three leases, retries on
// another server instance keep getting 409: the lease is renewed, nobody takes the key over.
func testHandlerThreeTimesTheLeaseIsNotTakenOver(t *testing.T, n node) {
	const lease = time.Second // short, yet long enough for a renewal on a loaded machine
	h := &charges{delay: 3 * lease}
	started := make(chan struct{}, 2)
	run := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		h.ServeHTTP(w, r)
	})
	scope := scopeOption(t)
	a := serve(t, scopedMiddleware(t, n.store(t, lwt.WithLease(lease)), scope).Handler(run))
	b := serve(t, scopedMiddleware(t, n.store(t, lwt.WithLease(lease)), scope).Handler(run))

	first := make(chan reply, 1)
	go func() {
		r, err := send(context.Background(), http.MethodPost, a+"/charges", "test-order-0000-3", "{}")
		assert.NoError(t, err)
		first <- r
	}()
	<-started
	var conflicts int
	for deadline := time.Now().Add(3 * lease); time.Now().Before(deadline); {
		r := mustSend(t, http.MethodPost, b+"/charges", "test-order-0000-3", "{}")
		if r.status == http.StatusCreated {
			break // the first request had finished before this retry was sent
		}
		assert.Equal(t, http.StatusConflict, r.status, r.body)
		conflicts++
		time.Sleep(lease / 4)
	}
	r := <-first
	assert.Equal(t, http.StatusCreated, r.status, r.body)
	assert.False(t, r.replayed())
	assert.Positive(t, conflicts)
	assert.EqualValues(t, 1, h.runs.Load(), "one run, no takeover")
	again := mustSend(t, http.MethodPost, b+"/charges", "test-order-0000-3", "{}")
	assert.True(t, again.replayed())
	assert.Equal(t, r.body, again.body)
}

// testPanickingHandlerReleasesTheKey: the client gets a 500 problem, the key is released, and a
// retry runs the handler once.
func testPanickingHandlerReleasesTheKey(t *testing.T, n node) {
	h := &charges{}
	var panicked sync.Once
	var seen outcomes
	url := serve(t, middleware(t, n.store(t), WithObserver(seen.observe)).Handler(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			panicked.Do(func() {
				w.Header().Set("X-Partial", "1")
				panic("card network down")
			})
			h.ServeHTTP(w, r)
		})))

	r := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-4", "{}")
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.Equal(t, TypeHandlerPanic, r.problemType())
	assert.NotContains(t, r.body, "card network", "no internal text in a response")
	assert.Empty(t, r.header.Get("X-Partial"), "nothing of the panicked response is sent")

	r = mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-4", "{}")
	assert.Equal(t, http.StatusCreated, r.status)
	assert.False(t, r.replayed())
	r = mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-4", "{}")
	assert.True(t, r.replayed())
	assert.EqualValues(t, 1, h.runs.Load(), "the retry ran once")
	got := seen.get()
	assert.Equal(t, map[Outcome]int{OutcomeReleased: 1, OutcomeNew: 1, OutcomeReplayed: 1}, got)
}

// testWaitInFlightGetsTheResponse: with WithWaitInFlight a request that meets the running one
// waits for its response instead of a 409.
func testWaitInFlightGetsTheResponse(t *testing.T, n node) {
	h := &charges{delay: 500 * time.Millisecond}
	url := serve(t, middleware(t, n.store(t), WithWaitInFlight()).Handler(h))
	replies := make(chan reply, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			r, err := send(context.Background(), http.MethodPost, url+"/charges", "test-order-0000-5", "{}")
			assert.NoError(t, err)
			replies <- r
		})
	}
	wg.Wait()
	close(replies)
	replayed := 0
	for r := range replies {
		assert.Equal(t, http.StatusCreated, r.status, r.body)
		if r.replayed() {
			replayed++
		}
	}
	assert.Equal(t, 3, replayed)
	assert.EqualValues(t, 1, h.runs.Load())
}

// testScopeSeparatesTenants: the same key from two tenants is two operations, each replayed to
// its own tenant only.
func testScopeSeparatesTenants(t *testing.T, n node) {
	h := &charges{}
	run := testScope(t)
	url := serve(t, scopedMiddleware(t, n.store(t), WithScope(func(r *http.Request) string {
		if tenant := r.URL.Query().Get("tenant"); tenant != "" { // stands for the authenticated principal
			return run + "/" + tenant
		}
		return ""
	})).Handler(h))
	a := mustSend(t, http.MethodPost, url+"/charges?tenant=a", "test-order-0000-6", "{}")
	b := mustSend(t, http.MethodPost, url+"/charges?tenant=b", "test-order-0000-6", "{}")
	assert.False(t, b.replayed())
	assert.NotEqual(t, a.body, b.body)
	again := mustSend(t, http.MethodPost, url+"/charges?tenant=a", "test-order-0000-6", "{}")
	assert.True(t, again.replayed())
	assert.Equal(t, a.body, again.body)
	assert.EqualValues(t, 2, h.runs.Load())

	none := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-6", "{}")
	assert.Equal(t, http.StatusInternalServerError, none.status)
	assert.Equal(t, TypeScopeMissing, none.problemType())
}

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	store, err := lwt.NewStore(&gocql.Session{}, lwt.IdempotencyKeys("ks"))
	require.NoError(t, err)
	_, err = New(nil)
	assert.ErrorIs(t, err, ErrInvalidOption)
	for name, o := range map[string]Option{
		"header with a space": WithHeader("Idempotency Key"),
		"empty header":        WithHeader(""),
		"no methods":          WithMethods(),
		"bad method":          WithMethods("PO ST"),
		"key length 0":        WithMaxKeyLength(0),
		"key length 5000":     WithMaxKeyLength(5000),
		"negative body":       WithMaxBodySize(-1),
		"tiny response":       WithMaxResponseSize(10),
		"huge response":       WithMaxResponseSize(lwt.MaxResultSizeLimit + 1),
		"nil scope":           WithScope(nil),
		"nil fingerprint":     WithFingerprint(nil),
		"nil header filter":   WithStoredHeaders(nil),
		"nil observer":        WithObserver(nil),
		"nil option":          nil,
	} {
		_, err := New(store, o, WithSingleTenantSharedScope())
		assert.ErrorIs(t, err, ErrInvalidOption, name)
		assert.NotErrorIs(t, err, ErrNoScope, name)
		if o != nil { // a bad option names itself
			assert.Regexp(t, `^httpidem: With[A-Za-z]+\(.*\): `, err.Error(), name)
		}
	}
	m, err := New(store, WithHeader("x-idempotency-key"), WithMethods(http.MethodPut), WithSingleTenantSharedScope())
	require.NoError(t, err)
	assert.Equal(t, "X-Idempotency-Key", m.cfg.header)

	// A repeatable handler's response must fit the store: above its limit it would be answered
	// 503 on every retry. Without the option the oversized response is recorded as such.
	above := WithMaxResponseSize(store.MaxResultSize() + 1)
	_, err = New(store, above, WithRepeatableHandler(), WithSingleTenantSharedScope())
	assert.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), fmt.Sprintf("WithMaxResponseSize(%d)", store.MaxResultSize()+1))
	_, err = New(store, above, WithSingleTenantSharedScope())
	assert.NoError(t, err)
	_, err = New(store, WithMaxResponseSize(store.MaxResultSize()), WithRepeatableHandler(), WithSingleTenantSharedScope())
	assert.NoError(t, err)
}
