// Command httpapi serves a payments endpoint behind httpidem's Idempotency-Key middleware and
// shows what a client's retries get: the stored response, 409 while the first request runs,
// 422 when a key is reused for another request, 400 without a key. Keys are scoped by the
// authenticated caller: another client sending the same key gets a run of its own, never the
// first client's response, and a request without credentials is refused.
//
//	go run ./examples/httpapi -hosts 127.0.0.1:9042
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/examples/internal/exampledb"
	"github.com/cassdedup/cassdedup/httpidem"
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
	// Keys are scoped by the principal that authenticate puts in the request's context, so one
	// client can never read another's stored response, nor learn that its key exists.
	idem, err := httpidem.New(store, httpidem.WithPrincipalScope())
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
	mux := http.NewServeMux()
	mux.Handle("POST /charges", authenticate(idem.Handler(charge)))
	url, stop, err := serve(mux)
	if err != nil {
		return err
	}
	defer stop()

	key := fmt.Sprintf("order-%d", time.Now().UnixNano())
	first := make(chan result, 1)
	go func() { first <- post(ctx, url+"/charges", acmeToken, key, `{"amount":100}`, true) }()
	select {
	case <-running:
	case r := <-first: // it ended without reaching the handler: nothing to demonstrate
		return fmt.Errorf("first attempt: %d %s %v", r.status, r.body, r.err)
	}
	retry := post(ctx, url+"/charges", acmeToken, key, `{"amount":100}`, false)
	close(slow)
	steps := []struct {
		what string
		res  result
	}{
		{"retry while the first runs", retry},
		{"first attempt", <-first},
		{"retry after a lost response", post(ctx, url+"/charges", acmeToken, key, `{"amount":100}`, false)},
		{"same key, different request", post(ctx, url+"/charges", acmeToken, key, `{"amount":999}`, false)},
		{"no key", post(ctx, url+"/charges", acmeToken, "", `{"amount":100}`, false)},
		{"another client, same key", post(ctx, url+"/charges", globexToken, key, `{"amount":100}`, false)},
		{"no credentials, same key", post(ctx, url+"/charges", "", key, `{"amount":100}`, false)},
	}
	for _, step := range steps {
		if step.res.err != nil {
			return step.res.err
		}
		fmt.Fprintf(out, "%-28s -> %d replayed=%-5v %s\n", step.what, step.res.status, step.res.replayed, step.res.body)
	}
	fmt.Fprintf(out, "charges made: %d\n", charges.Load())
	return nil
}

// The demo's two clients: a toy token table stands for a real service's authentication.
const (
	acmeToken   = "demo-token-acme"
	globexToken = "demo-token-globex"
)

var principals = map[string]string{acmeToken: "acme", globexToken: "globex"}

// authenticate maps a bearer token to its principal and puts it in the request's context for
// httpidem.WithPrincipalScope. An unknown token is refused here; a request without one goes on,
// as behind an authentication that lets anonymous requests through, and the middleware refuses
// it rather than storing it in a scope shared by everyone.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !found {
			next.ServeHTTP(w, r)
			return
		}
		principal, ok := principals[token]
		if !ok {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unknown token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(httpidem.WithPrincipal(r.Context(), principal)))
	})
}

// serve runs h on a loopback port until stop is called.
func serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "httpapi: serve:", err)
		}
	}, nil
}

// result is what the client saw of one request.
type result struct {
	status   int
	replayed bool
	body     string
	err      error
}

// post sends one request as the client that holds token ("" for none).
func post(ctx context.Context, url, token, key, body string, slow bool) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set(httpidem.DefaultHeader, key)
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
	return result{status: resp.StatusCode, replayed: resp.Header.Get(httpidem.ReplayedHeader) == "true", body: summary(resp, b), err: err}
}

// summary is the body to print: a problem document by its type's last part, anything else whole.
func summary(resp *http.Response, body []byte) string {
	if resp.Header.Get("Content-Type") != "application/problem+json" {
		return strings.TrimSpace(string(body))
	}
	var p struct{ Type string }
	if err := json.Unmarshal(body, &p); err != nil {
		return strings.TrimSpace(string(body))
	}
	s := "problem " + p.Type[strings.LastIndex(p.Type, "#")+1:]
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		s += ", Retry-After " + ra
	}
	return s
}
