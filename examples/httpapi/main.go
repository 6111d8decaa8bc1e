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
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := charges.Add(1) // the side effect that must happen once per key
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%d"}`, n)
	})
	tenant := func(r *http.Request) string { return "tenant-" + r.Header.Get("X-Tenant") }
	srv := httptest.NewServer(idempotent(store, tenant, charge))
	defer srv.Close()

	key := fmt.Sprintf("order-%d", time.Now().UnixNano())
	for _, step := range []struct{ what, key, body string }{
		{"first attempt", key, `{"amount":100}`},
		{"retry after a lost response", key, `{"amount":100}`},
		{"same key, different request", key, `{"amount":999}`},
		{"no key", "", `{"amount":100}`},
	} {
		status, replayed, body, err := post(ctx, srv.URL+"/charges", step.key, step.body)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-28s -> %d replayed=%-5v %s\n", step.what, status, replayed, strings.TrimSpace(body))
	}
	fmt.Fprintf(out, "charges made: %d\n", charges.Load())
	return nil
}

func post(ctx context.Context, url, key, body string) (status int, replayed bool, text string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, false, "", err
	}
	req.Header.Set("X-Tenant", "acme")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", string(b), err
}
