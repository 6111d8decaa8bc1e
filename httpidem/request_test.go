package httpidem

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testOversizedRequestBodyClaimsNothing: a body over the limit gets 413, declared or streamed,
// and the key stays unused: the same key with a small body then runs.
func testOversizedRequestBodyClaimsNothing(t *testing.T, n node) {
	h := &charges{}
	url := serve(t, middleware(t, n.store(t), WithMaxBodySize(1024)).Handler(h))
	big := strings.Repeat("x", 1025)

	r := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-7", big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Equal(t, TypeBodyTooLarge, r.problemType())

	// Without a Content-Length (chunked), the limit is found by reading.
	req, err := http.NewRequest(http.MethodPost, url+"/charges", io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	req.Header.Set(DefaultHeader, "test-order-0000-7")
	req.ContentLength = -1
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Zero(t, h.runs.Load())

	r = mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-7", strings.Repeat("x", 1024))
	assert.Equal(t, http.StatusCreated, r.status, "nothing was stored for the key: %s", r.body)
	assert.False(t, r.replayed())
	assert.Contains(t, r.body, strings.Repeat("x", 1024), "the handler got the body unchanged")
}

// testSameKeyDifferentRequestIs422: another body, query, path or method with a used key is 422
// and nothing runs.
func testSameKeyDifferentRequestIs422(t *testing.T, n node) {
	h := &charges{}
	var seen outcomes
	url := serve(t, middleware(t, n.store(t), WithObserver(seen.observe),
		WithMethods(http.MethodPost, http.MethodPatch)).Handler(h))
	first := mustSend(t, http.MethodPost, url+"/charges?currency=eur", "test-order-0000-8", `{"amount":100}`)
	require.Equal(t, http.StatusCreated, first.status)
	for name, req := range map[string][3]string{
		"body":   {http.MethodPost, "/charges?currency=eur", `{"amount":999}`},
		"query":  {http.MethodPost, "/charges?currency=usd", `{"amount":100}`},
		"path":   {http.MethodPost, "/refunds?currency=eur", `{"amount":100}`},
		"method": {http.MethodPatch, "/charges?currency=eur", `{"amount":100}`},
	} {
		r := mustSend(t, req[0], url+req[1], "test-order-0000-8", req[2])
		assert.Equal(t, http.StatusUnprocessableEntity, r.status, name)
		assert.Equal(t, TypeKeyReuse, r.problemType(), name)
	}
	assert.EqualValues(t, 1, h.runs.Load())
	assert.Equal(t, 4, seen.get()[OutcomeMismatch])
}

// testBadKeysAre400: a missing, empty, malformed or over-long key is refused before anything is
// claimed or run.
func testBadKeysAre400(t *testing.T, n node) {
	h := &charges{}
	url := serve(t, middleware(t, n.store(t)).Handler(h))
	for name, key := range map[string]string{
		"empty string":   `""`,
		"unterminated":   `"abc`,
		"bad escape":     `"a\b"`,
		"parameters":     `"abc";v=1`,
		"list":           `"a", "b"`,
		"inner space":    `a b`,
		"over 255 bytes": strings.Repeat("k", 256),
	} {
		r := mustSend(t, http.MethodPost, url+"/charges", key, "{}")
		assert.Equal(t, http.StatusBadRequest, r.status, name)
		assert.Equal(t, TypeKeyInvalid, r.problemType(), name)
	}
	r := mustSend(t, http.MethodPost, url+"/charges", "", "{}")
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, TypeKeyMissing, r.problemType())

	req, err := http.NewRequest(http.MethodPost, url+"/charges", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set(DefaultHeader, "") // present, but empty
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Zero(t, h.runs.Load())

	ok := mustSend(t, http.MethodPost, url+"/charges", `"`+strings.Repeat("k", 255)+`"`, "{}")
	assert.Equal(t, http.StatusCreated, ok.status, "255 bytes is within the limit")
}

// testOtherMethodsPassThrough: GET, PUT, DELETE and OPTIONS run the handler on every request,
// with or without a key, and the middleware adds nothing.
func testOtherMethodsPassThrough(t *testing.T, n node) {
	h := &charges{}
	url := serve(t, middleware(t, n.store(t)).Handler(h))
	methods := []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodOptions}
	for _, m := range methods {
		for _, key := range []string{"", "test-order-0000-9", "test-order-0000-9", "not a valid key"} {
			r := mustSend(t, m, url+"/charges", key, "{}")
			assert.Equal(t, http.StatusCreated, r.status, m)
			assert.False(t, r.replayed(), m)
		}
	}
	assert.EqualValues(t, 4*len(methods), h.runs.Load())
}

// testOptionalKeyPassesRequestsWithout: with WithKeyOptional a request without a key runs every
// time, and one with a key still runs once.
func testOptionalKeyPassesRequestsWithout(t *testing.T, n node) {
	h := &charges{}
	var seen outcomes
	url := serve(t, middleware(t, n.store(t), WithKeyOptional(), WithObserver(seen.observe)).Handler(h))
	for range 2 {
		assert.Equal(t, http.StatusCreated, mustSend(t, http.MethodPost, url+"/charges", "", "{}").status)
		assert.Equal(t, http.StatusCreated, mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-10", "{}").status)
	}
	assert.EqualValues(t, 3, h.runs.Load())
	assert.Equal(t, http.StatusBadRequest, mustSend(t, http.MethodPost, url+"/charges", `""`, "{}").status,
		"a key that is present is still checked")
	assert.Equal(t, map[Outcome]int{OutcomeUnkeyed: 2, OutcomeNew: 1, OutcomeReplayed: 1, OutcomeRejected: 1}, seen.get())
}

// testCustomFingerprintComparesASubset: a fingerprint over one JSON field lets a retry differ
// elsewhere, and refuses a request it cannot parse.
func testCustomFingerprintComparesASubset(t *testing.T, n node) {
	h := &charges{}
	amountOnly := func(r *http.Request, body []byte) ([]byte, error) {
		var req struct {
			Amount *int `json:"amount"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Amount == nil {
			return nil, errors.New("no amount")
		}
		return []byte(r.URL.Path + "\x00" + strconv.Itoa(*req.Amount)), nil
	}
	url := serve(t, middleware(t, n.store(t), WithFingerprint(amountOnly)).Handler(h))
	first := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-11", `{"amount":1,"trace":"a"}`)
	retry := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-11", `{"amount":1,"trace":"b"}`)
	assert.True(t, retry.replayed())
	assert.Equal(t, first.body, retry.body)
	assert.Equal(t, http.StatusUnprocessableEntity, mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-11", `{"amount":2}`).status)
	bad := mustSend(t, http.MethodPost, url+"/charges", "test-order-0000-12", `not json`)
	assert.Equal(t, http.StatusBadRequest, bad.status)
	assert.Equal(t, TypeFingerprintFailed, bad.problemType())
	assert.EqualValues(t, 1, h.runs.Load())
}

// testMethodCaseDoesNotRunTwice: a retry that spells the method "post" (which net/http routes as
// POST) meets the record of the first POST: it is replayed, not run again; and a middleware
// configured with lower-case methods covers their upper-case requests.
func testMethodCaseDoesNotRunTwice(t *testing.T, n node) {
	h := &charges{}
	url := serve(t, middleware(t, n.store(t)).Handler(h))
	first := mustSend(t, http.MethodPost, url+"/charges", "test-order-case-1", "{}")
	assert.Equal(t, http.StatusCreated, first.status)
	again := mustSend(t, "post", url+"/charges", "test-order-case-1", "{}")
	assert.Equal(t, http.StatusCreated, again.status)
	assert.True(t, again.replayed(), "the lower-case retry is replayed")
	assert.Equal(t, int64(1), h.runs.Load(), "the handler ran once")

	lower := &charges{}
	url = serve(t, middleware(t, n.store(t), WithMethods("put")).Handler(lower))
	for range 2 {
		r := mustSend(t, http.MethodPut, url+"/charges", "test-order-case-2", "{}")
		assert.Equal(t, http.StatusCreated, r.status)
	}
	assert.Equal(t, int64(1), lower.runs.Load(), "WithMethods(\"put\") covers PUT")
}
