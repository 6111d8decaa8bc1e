// Command httpapi serves a payments endpoint behind an Idempotency-Key middleware built on
// package lwt, and shows what a client's retries get: the stored response, 409 while the first
// request runs, 422 when a key is reused for another request, 400 without a key.
//
//	go run ./examples/httpapi -hosts 127.0.0.1:9042
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/examples/internal/exampledb"
	"github.com/cassdedup/cassdedup/lwt"
)

func main() {
	exampledb.Main("httpapi", func(ctx context.Context, session *gocql.Session, keyspace string) error {
		return run(ctx, session, keyspace, os.Stdout)
	})
}

// run starts the server on loopback and plays a client that retries.
func run(ctx context.Context, session *gocql.Session, keyspace string, out io.Writer) error {
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(keyspace), lwt.WithCache(1024))
	if err != nil {
		return err
	}
	var charges atomic.Int64
	// A request marked X-Slow signals that it runs (its key is claimed) and then waits, so
	// the demo can show what a retry that arrives meanwhile gets.
	running, slow := make(chan struct{}), make(chan struct{})
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			close(running)
			<-slow
		}
		n := charges.Add(1) // the side effect that must happen once per key
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%d"}`, n)
	})
	tenant := func(r *http.Request) string { return "tenant-" + r.Header.Get("X-Tenant") }
	srv := httptest.NewServer(idempotent(store, tenant, charge))
	defer srv.Close()

	key := fmt.Sprintf("order-%d", time.Now().UnixNano())
	first := make(chan result, 1)
	go func() { first <- post(ctx, srv.URL+"/charges", key, `{"amount":100}`, true) }()
	select {
	case <-running:
	case r := <-first: // it ended without reaching the handler: nothing to demonstrate
		return fmt.Errorf("first attempt: %d %s %v", r.status, r.body, r.err)
	}
	retry := post(ctx, srv.URL+"/charges", key, `{"amount":100}`, false)
	close(slow)
	steps := []struct {
		what string
		res  result
	}{
		{"retry while the first runs", retry},
		{"first attempt", <-first},
		{"retry after a lost response", post(ctx, srv.URL+"/charges", key, `{"amount":100}`, false)},
		{"same key, different request", post(ctx, srv.URL+"/charges", key, `{"amount":999}`, false)},
		{"no key", post(ctx, srv.URL+"/charges", "", `{"amount":100}`, false)},
	}
	for _, step := range steps {
		if step.res.err != nil {
			return step.res.err
		}
		fmt.Fprintf(out, "%-28s -> %d replayed=%-5v %s\n", step.what, step.res.status, step.res.replayed, strings.TrimSpace(step.res.body))
	}
	fmt.Fprintf(out, "charges made: %d\n", charges.Load())
	return nil
}

// result is what the client saw of one request.
type result struct {
	status   int
	replayed bool
	body     string
	err      error
}

func post(ctx context.Context, url, key, body string, slow bool) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("X-Tenant", "acme")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if slow {
		req.Header.Set("X-Slow", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true", body: string(b), err: err}
}
