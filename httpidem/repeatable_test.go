package httpidem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
)

// orders is a handler whose only effects are its response and the event it stages: each run
// names itself in both, so a test can tell which run's answer was committed.
type orders struct {
	box  *outbox.Outbox // nil: stage nothing
	runs atomic.Int64
}

func (o *orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := o.runs.Add(1)
	if o.box != nil {
		if err := o.box.Stage(r.Context(), outbox.Event{Type: "order.placed", Key: "order", Payload: []byte(fmt.Sprint(n))}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"run":%d,"request":%q}`, n, body)
}

// testRepeatableHandlerRaceAnswersOneResponse: 64 requests with one key on two servers of a
// repeatable route, their outbox events staged in the handler: the handler may run many times,
// one response and one event are committed, every request gets that response (all but one as a
// replay), and the relay publishes that event once.
func testRepeatableHandlerRaceAnswersOneResponse(t *testing.T, n node) {
	box, err := outbox.New(n.session, outbox.WithKeyspace(n.keyspace))
	require.NoError(t, err)
	h := &orders{box: box}
	var seen outcomes
	scope := scopeOption(t)
	var urls []string
	for _, opts := range [][]lwt.StoreOption{{lwt.WithCache(100)}, nil} {
		store, err := lwt.NewStore(n.session, outbox.Table(n.keyspace), opts...)
		require.NoError(t, err)
		urls = append(urls, serve(t, scopedMiddleware(t, store, scope, WithRepeatableHandler(), WithObserver(seen.observe)).Handler(h)))
	}
	const requests = 64
	replies := make([]reply, requests)
	errs := make([]error, requests)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			<-start
			replies[i], errs[i] = send(context.Background(), http.MethodPost, urls[i%2]+"/orders", "test-order-one-round-1", `{"sku":7}`)
		})
	}
	close(start)
	wg.Wait()
	fresh := 0
	for i, r := range replies {
		require.NoError(t, errs[i])
		require.Equal(t, http.StatusCreated, r.status, r.body)
		assert.Equal(t, replies[0].body, r.body, "every request gets the committed response")
		if !r.replayed() {
			fresh++
		}
	}
	assert.Equal(t, 1, fresh, "one response is the committing run's own")
	got := seen.get()
	assert.Equal(t, 1, got[OutcomeNew])
	assert.Equal(t, requests-1, got[OutcomeReplayed])
	assert.NoError(t, seen.err())
	t.Logf("the handler ran %d times for %d requests", h.runs.Load(), requests)

	pub := &published{}
	relay, err := outbox.NewRelay(n.session, pub, outbox.WithKeyspace(n.keyspace))
	require.NoError(t, err)
	t.Cleanup(func() { relay.Release(context.Background()) })
	require.Eventually(t, func() bool {
		st, err := relay.Poll(context.Background())
		return err == nil && st.Waiting == 0 && len(pub.all()) > 0
	}, 60*time.Second, 200*time.Millisecond)
	msgs := pub.all()
	require.Len(t, msgs, 1, "the committed run's event, once")
	assert.Contains(t, replies[0].body, fmt.Sprintf(`"run":%s,`, msgs[0].Payload), "the event of the run whose response was committed")
}

// testRepeatableHandlerKeyReuseIs422: on a repeatable route the same key with another request
// is still 422, and a 5xx commits nothing: the retry runs again.
func testRepeatableHandlerKeyReuseIs422(t *testing.T, n node) {
	h := &orders{}
	url := serve(t, middleware(t, n.store(t), WithRepeatableHandler()).Handler(h))
	first := mustSend(t, http.MethodPost, url+"/orders", "test-order-one-round-2", `{"sku":1}`)
	require.Equal(t, http.StatusCreated, first.status)
	r := mustSend(t, http.MethodPost, url+"/orders", "test-order-one-round-2", `{"sku":2}`)
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Equal(t, TypeKeyReuse, r.problemType())
	again := mustSend(t, http.MethodPost, url+"/orders", "test-order-one-round-2", `{"sku":1}`)
	assert.True(t, again.replayed())
	assert.Equal(t, first.body, again.body)

	var fail atomic.Bool
	fail.Store(true)
	flaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Swap(false) {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(strings.Repeat("x", 10)))
	})
	url = serve(t, middleware(t, n.store(t), WithRepeatableHandler()).Handler(flaky))
	assert.Equal(t, http.StatusServiceUnavailable, mustSend(t, http.MethodPost, url, "test-order-one-round-3", "").status)
	r = mustSend(t, http.MethodPost, url, "test-order-one-round-3", "")
	assert.Equal(t, http.StatusCreated, r.status)
	assert.False(t, r.replayed(), "the 5xx was not committed: the retry ran")
}

// testRepeatableHandlerUncommittedIsNotAnswered: a repeatable handler's only effect is its
// commit, so when the commit does not happen (here the run outlives its lease; in production
// the node goes away under the commit) its own 201 must not reach the client, who would take
// the order as placed while nothing of it is stored and its staged event is never published.
// The client gets a 503 to retry with, and the retry runs and commits.
func testRepeatableHandlerUncommittedIsNotAnswered(t *testing.T, n node) {
	var slow atomic.Bool
	slow.Store(true)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Swap(false) {
			time.Sleep(1500 * time.Millisecond) // past the store's 1 s lease: the run is not committed
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"placed":true}`))
	})
	url := serve(t, middleware(t, n.store(t, lwt.WithLease(time.Second)), WithRepeatableHandler()).Handler(h))
	r := mustSend(t, http.MethodPost, url+"/orders", "test-order-one-round-4", `{"sku":4}`)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "an uncommitted run is not answered as done: %s", r.body)
	assert.Equal(t, TypeUnavailable, r.problemType())
	again := mustSend(t, http.MethodPost, url+"/orders", "test-order-one-round-4", `{"sku":4}`)
	assert.Equal(t, http.StatusCreated, again.status, again.body)
	assert.False(t, again.replayed(), "nothing was committed before: the retry ran and committed")
}

// published is an outbox.Publisher that keeps what it accepted.
type published struct {
	mu   sync.Mutex
	msgs []outbox.Message
}

func (p *published) Publish(_ context.Context, msgs []outbox.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, msgs...)
	return nil
}

func (p *published) all() []outbox.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]outbox.Message(nil), p.msgs...)
}
