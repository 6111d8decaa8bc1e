package httpidem

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// testReplayKeepsStatusHeadersAndBody: a 4xx is stored and replayed like a 2xx, with its
// headers but not its cookie, and marked as a replay.
func testReplayKeepsStatusHeadersAndBody(t *testing.T, n node) {
	var runs atomic.Int64
	url := serve(t, middleware(t, n.store(t)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Vary", "Accept")
		w.Header().Add("Vary", "Accept-Language")
		w.Header().Set("Set-Cookie", "session=first-client")
		w.WriteHeader(http.StatusPaymentRequired)
		fmt.Fprint(w, `{"error":"card_declined"}`)
		w.Header().Set("X-Too-Late", "1") // after WriteHeader: net/http would not send it either
	})))
	first := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-13", "{}")
	assert.Equal(t, http.StatusPaymentRequired, first.status)
	assert.Equal(t, "session=first-client", first.header.Get("Set-Cookie"), "the first caller gets every header")
	assert.False(t, first.replayed())
	assert.Empty(t, first.header.Get("X-Too-Late"))

	again := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-13", "{}")
	assert.Equal(t, http.StatusPaymentRequired, again.status)
	assert.True(t, again.replayed())
	assert.Equal(t, first.body, again.body)
	assert.Equal(t, "application/json", again.header.Get("Content-Type"))
	assert.Equal(t, []string{"Accept", "Accept-Language"}, again.header.Values("Vary"))
	assert.Empty(t, again.header.Get("Set-Cookie"), "cookies are not replayed by default")
	assert.Empty(t, again.header.Get("X-Too-Late"))
	assert.EqualValues(t, 1, runs.Load())
}

// testServerErrorsReleaseByDefault: a 5xx is sent, the key released and the retry runs again;
// WithStore5xx stores it instead and the retry gets the replay.
func testServerErrorsReleaseByDefault(t *testing.T, n node) {
	for _, store5xx := range []bool{false, true} {
		var runs atomic.Int64
		var opts []Option
		if store5xx {
			opts = append(opts, WithStore5xx())
		}
		var seen outcomes
		opts = append(opts, WithObserver(seen.observe))
		url := serve(t, middleware(t, n.store(t), opts...).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "upstream failed, run %d", runs.Add(1))
		})))
		key := fmt.Sprintf("test-order-0000-14-%t", store5xx)
		first := mustSend(t, http.MethodPost, url+"/charges", key, "{}")
		assert.Equal(t, http.StatusBadGateway, first.status)
		assert.Equal(t, "upstream failed, run 1", first.body, "the first caller gets the handler's response")
		again := mustSend(t, http.MethodPost, url+"/charges", key, "{}")
		assert.Equal(t, http.StatusBadGateway, again.status)
		if store5xx {
			assert.True(t, again.replayed())
			assert.Equal(t, first.body, again.body)
			assert.EqualValues(t, 1, runs.Load())
			assert.Equal(t, map[Outcome]int{OutcomeNew: 1, OutcomeReplayed: 1}, seen.get())
		} else {
			assert.False(t, again.replayed())
			assert.Equal(t, "upstream failed, run 2", again.body)
			assert.EqualValues(t, 2, runs.Load())
			assert.Equal(t, map[Outcome]int{OutcomeReleased: 2}, seen.get())
		}
	}
}

// testOversizedResponseIsAnsweredOnceAndRecorded: a response larger than the stored limit is
// streamed whole to the first caller; retries get a stable 410, never a second run and never a
// stuck key.
func testOversizedResponseIsAnsweredOnceAndRecorded(t *testing.T, n node) {
	var runs atomic.Int64
	const size = 64 << 10
	var seen outcomes
	url := serve(t, middleware(t, n.store(t), WithMaxResponseSize(1024), WithObserver(seen.observe)).Handler(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.Header().Set("Content-Type", "text/csv")
			w.WriteHeader(http.StatusOK)
			for range size / 1024 {
				fmt.Fprint(w, strings.Repeat("r", 1023)+"\n")
			}
		})))
	first := mustSend(t, http.MethodPost, url+"/exports", "test-order-0000-15", "{}")
	assert.Equal(t, http.StatusOK, first.status)
	assert.Len(t, first.body, size, "the first caller gets the whole response")
	assert.Equal(t, "text/csv", first.header.Get("Content-Type"))
	for range 2 {
		r := mustSend(t, http.MethodPost, url+"/exports", "test-order-0000-15", "{}")
		assert.Equal(t, http.StatusGone, r.status)
		assert.Equal(t, TypeResponseNotStored, r.problemType())
		assert.Contains(t, r.body, `"original_status":200`)
		assert.Contains(t, r.body, fmt.Sprintf(`"original_size":%d`, size))
	}
	assert.EqualValues(t, 1, runs.Load())
	assert.Equal(t, map[Outcome]int{OutcomeOversized: 1, OutcomeReplayed: 2}, seen.get())
	assert.NoError(t, seen.err())
}

// testResponseOverTheStoresLimitIsRecorded: a store whose limit is below the middleware's
// rejects the response; the middleware records the oversized mark instead of leaving the key
// released, and reports the misconfiguration.
func testResponseOverTheStoresLimitIsRecorded(t *testing.T, n node) {
	var runs atomic.Int64
	var seen outcomes
	var reported error
	url := serve(t, middleware(t, n.store(t, lwt.WithMaxResultSize(128)), WithObserver(func(e Event) {
		seen.observe(e)
		if e.Outcome == OutcomeOversized {
			reported = e.Err
		}
	})).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		fmt.Fprint(w, strings.Repeat("b", 1000))
	})))
	first := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-16", "{}")
	require.Equal(t, http.StatusOK, first.status)
	assert.Len(t, first.body, 1000)
	r := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-16", "{}")
	assert.Equal(t, http.StatusGone, r.status, r.body)
	assert.EqualValues(t, 1, runs.Load())
	assert.ErrorIs(t, reported, lwt.ErrResultTooLarge)
}
