package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/cassdedup/cassdedup/lwt"
)

// storedResponse is what the middleware keeps for a key and replays on a retry.
type storedResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

// idempotent makes next run at most once per (tenant, Idempotency-Key) on unsafe methods, in
// the manner of the IETF Idempotency-Key header draft: a retry gets the stored response, a
// retry while the first is running gets 409, the key reused for another request gets 422.
// tenant derives the namespace from the caller's identity, so one tenant can never read
// another's stored response.
func idempotent(store *lwt.Store, tenant func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		key := lwt.IdempotencyKey(tenant(r), r.Header.Get("Idempotency-Key"))
		claim, record, err := store.Begin(r.Context(), key, fingerprint(r, body))
		switch {
		case err != nil:
			fail(w, err)
		case record != nil:
			replay(w, record)
		default:
			r.Body = io.NopCloser(bytes.NewReader(body))
			serveClaimed(w, r, store, claim, next)
		}
	})
}

// fingerprint identifies the request, so the same key sent with another request is caught.
func fingerprint(r *http.Request, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.URL.Path + "\n"))
	h.Write(body)
	return h.Sum(nil)
}

// serveClaimed executes the handler under the claim and settles the claim by the response's class: 2xx
// is stored and replayed, 4xx is stored too (retrying will not change it), 5xx releases the
// claim so the client's retry runs the handler again.
func serveClaimed(w http.ResponseWriter, r *http.Request, store *lwt.Store, claim *lwt.Claim, next http.Handler) {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	resp := storedResponse{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	encoded, _ := json.Marshal(resp) // a struct of a map and byte slices always encodes
	ctx := r.Context()
	var err error
	switch {
	case resp.Status >= 500:
		err = store.Release(ctx, claim, encoded)
	case resp.Status >= 400:
		err = store.Fail(ctx, claim, encoded)
	default:
		err = store.Complete(ctx, claim, encoded)
	}
	if err != nil {
		// The response was produced but could not be recorded (for example ErrLeaseLost):
		// say so rather than pretend the key is settled.
		fail(w, err)
		return
	}
	write(w, resp, false)
}

func replay(w http.ResponseWriter, record *lwt.Record) {
	var resp storedResponse
	if err := json.Unmarshal(record.Result, &resp); err != nil {
		http.Error(w, "stored response unreadable", http.StatusInternalServerError)
		return
	}
	write(w, resp, true)
}

func write(w http.ResponseWriter, resp storedResponse, replayed bool) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

func fail(w http.ResponseWriter, err error) {
	if code, ok := lwt.HTTPStatus(err); ok {
		http.Error(w, err.Error(), code)
		return
	}
	if errors.Is(err, lwt.ErrOutcomeUnknown) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	http.Error(w, "internal error", http.StatusInternalServerError)
}
