package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cassdedup/cassdedup/httpidem"
	"github.com/cassdedup/cassdedup/internal/parallel"
)

// The three operations below measure httpidem's middleware as an HTTP client sees it: a POST
// with an Idempotency-Key and a body over a kept-alive loopback connection to a server of the
// operation's own, whose handler answers 201 with a small body at once.
//
//   - "http-bare": the handler without the middleware, the round trip every request pays;
//   - "http-new":  the middleware on new keys (claim, run, store the response: two LWTs);
//   - "http-dup":  the middleware on completed keys, replayed by the node (one rejected LWT,
//     no cache), over the same pool of keys as lwt-dup.
//
// So http-new against lwt-new + http-bare, and http-dup against lwt-dup + http-bare, isolate
// what the middleware adds to the LWTs and the round trip it cannot avoid.

// httpResponse is the handler's answer, stored and replayed by the middleware.
var httpResponse = onceResult

// httpServer is a loopback HTTP server and the client that reaches it.
type httpServer struct {
	name   string
	url    string
	client *http.Client
	srv    *http.Server
	done   chan error
}

// answer is the trivial handler the operations call.
func answer(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(httpResponse)
}

// startHTTP serves h on a loopback port with a client that keeps a connection per worker.
func startHTTP(name string, h http.Handler, workers int) (*httpServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &httpServer{
		name: name,
		url:  "http://" + ln.Addr().String() + "/charges",
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{
			MaxIdleConns: workers + 1, MaxIdleConnsPerHost: workers + 1, DisableCompression: true,
		}},
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Name names the operation in reports.
func (s *httpServer) Name() string { return s.name }

// Close stops the server and its client's connections.
func (s *httpServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.client.CloseIdleConnections()
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// clientKey pads a request's key to the 36 bytes of the UUID a real client sends, so the
// benchmark stores keys of a realistic size and passes the middleware's minimum length.
func clientKey(key string) string {
	const uuidLen = 36
	if len(key) >= uuidLen {
		return key
	}
	return key + "-" + strings.Repeat("0", uuidLen-len(key)-1)
}

// post sends one request with key and checks that it got the handler's answer, replayed or not
// as want says.
func (s *httpServer) post(ctx context.Context, key string, wantReplay bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(onceRequest))
	if err != nil {
		return err
	}
	req.Header.Set(httpidem.DefaultHeader, clientKey(key))
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return checkHTTPAnswer(resp.StatusCode, resp.Header.Get(httpidem.ReplayedHeader) == "true", body, wantReplay)
}

// checkHTTPAnswer returns an error unless the reply is the handler's answer, replayed exactly
// when wantReplay is set.
func checkHTTPAnswer(status int, replayed bool, body []byte, wantReplay bool) error {
	switch {
	case status != http.StatusCreated:
		return fmt.Errorf("%w: status %d: %.200s", errUnexpectedOutcome, status, body)
	case !bytes.Equal(body, httpResponse):
		return fmt.Errorf("%w: body %.200q, not the handler's", errUnexpectedOutcome, body)
	case replayed != wantReplay:
		return fmt.Errorf("%w: replayed %t, want %t", errUnexpectedOutcome, replayed, wantReplay)
	}
	return nil
}

type httpBare struct{ *httpServer }

func newHTTPBare(env Env) (Operation, error) {
	s, err := startHTTP("http-bare", http.HandlerFunc(answer), env.MaxWorkers)
	return httpBare{s}, err
}

// Setup prepares the operation before the timed phases.
func (httpBare) Setup(context.Context) error { return nil }

// Do runs one request.
func (b httpBare) Do(ctx context.Context, req Request) error { return b.post(ctx, req.Key(), false) }

// newIdempotentServer starts a server whose handler is wrapped in the middleware, over a store
// without a cache, scoped to the operation's namespace.
func newIdempotentServer(env Env, name string) (*httpServer, error) {
	o, err := newOnceExecutor(env, name, 0)
	if err != nil {
		return nil, err
	}
	m, err := httpidem.New(o.store, httpidem.WithScope(func(*http.Request) string { return o.namespace }))
	if err != nil {
		return nil, err
	}
	return startHTTP(name, m.Handler(http.HandlerFunc(answer)), env.MaxWorkers)
}

type httpNew struct{ *httpServer }

func newHTTPNew(env Env) (Operation, error) {
	s, err := newIdempotentServer(env, "http-new")
	return httpNew{s}, err
}

// Setup prepares the operation before the timed phases.
func (httpNew) Setup(context.Context) error { return nil }

// Do runs one request.
func (n httpNew) Do(ctx context.Context, req Request) error { return n.post(ctx, req.Key(), false) }

type httpDuplicate struct{ *httpServer }

func newHTTPDup(env Env) (Operation, error) {
	s, err := newIdempotentServer(env, "http-dup")
	return httpDuplicate{s}, err
}

// Setup completes every key of the pool with a first request, as a client's first attempt does.
func (d httpDuplicate) Setup(ctx context.Context) error {
	return parallel.ForEach(ctx, duplicatePool, 16, func(ctx context.Context, i int) error {
		return d.post(ctx, duplicateKey(i), false)
	})
}

// Do runs one request.
func (d httpDuplicate) Do(ctx context.Context, req Request) error {
	return d.post(ctx, duplicateKey(poolIndex(req)), true)
}
