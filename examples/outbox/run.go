package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/httpidem"
	"github.com/cassdedup/cassdedup/kafka/kafkapub"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
)

// config is what run needs to know.
type config struct {
	brokers  []string
	keyspace string
	orders   int
	clients  int
	instance string // the consumer's static group membership id, if any
	// first is added to the orders' numbers: a phase's orders are not another phase's (their
	// idempotency keys would replay the first phase's answers).
	first int
	// catchup, if not zero, adds a second phase: that many orders placed while the consumer is
	// stopped, then the consumer started and its drain measured (Summary.Catchup).
	catchup int
	// plain, if not zero, adds the comparison (see compare): four rounds of that many orders,
	// two served with plain ExecuteOnce (two Paxos rounds per new order) and two with the
	// repeatable handler (one), each on a topic, a counter and a consumer group of its own (the
	// first phase is the first round when compareClients is clients): Summary.Rounds,
	// Summary.Plain, and the ratio of the pooled accepted rates.
	plain int
	// compareClients is how many clients place the comparison's orders (0: clients).
	compareClients int
	// warmup, if not zero, runs that many orders through the chain first, unmeasured, so that
	// the first measured phase does not pay for the node's and the processes' warm-up alone.
	warmup int
	// plainService is set on the plain phase's config: the service runs without
	// httpidem.WithRepeatableHandler.
	plainService bool
	// clockOffset runs the service's clocks (its store's and its outbox's) this far off the
	// host's: -role api -clock-offset.
	clockOffset time.Duration
	// The consumer's fast path (kafkasub.WithFastPath) and group session timeout (0: the default).
	fastPath         bool
	sessionTimeout   time.Duration
	holdAfter        int64 // records; 0: never (see roleConfig.holdAfterRecords)
	holdAfterApplied int   // effects; 0: never (see roleConfig.holdAfterApplied)
}

// Summary is what the chain delivered, as make bench-e2e writes it.
type Summary struct {
	Requests          int64   `json:"requests"`           // HTTP requests sent: retries and duplicates included
	Accepted          int     `json:"accepted"`           // distinct orders acknowledged with a 2xx
	Published         int64   `json:"published"`          // messages the relay published, copies included
	Consumed          int64   `json:"consumed"`           // records the consumer polled
	Applied           int     `json:"applied"`            // distinct orders whose effect the consumer applied
	HandlerRuns       int64   `json:"handler_runs"`       // consumer handler runs
	Lost              int     `json:"lost"`               // accepted orders with no effect
	DuplicatedEffects int     `json:"duplicated_effects"` // orders whose effect ran more than once
	EffectsExact      bool    `json:"effects_exact"`      // the counter's total is the sum of the accepted amounts
	Total             int64   `json:"total"`
	Expected          int64   `json:"expected"`
	MsgsPerS          float64 `json:"msgs_per_s"` // orders applied per second, first request to last effect
	P50Ms             float64 `json:"p50_ms"`     // request accepted → effect applied
	P99Ms             float64 `json:"p99_ms"`
	Seconds           float64 `json:"seconds"`
	// Where the time went, from the first request: the last order acknowledged, the last
	// message published (the relay) and the last effect applied (Seconds).
	AcceptedSeconds  float64 `json:"accepted_seconds"`
	PublishedSeconds float64 `json:"published_seconds"`
	// AcceptedPerS is the distinct orders the service acknowledged per second (first request to
	// last acknowledgement); ConsumerLagS the time from the last acknowledgement to the last
	// effect applied: how far the consumer trails the service.
	AcceptedPerS float64 `json:"accepted_per_s"`
	ConsumerLagS float64 `json:"consumer_lag_s"`
	// RelayReadsPerIntent is the arrival and intent rows the relay's passes read
	// (Stats.RowsRead) per message it published in the phase.
	RelayReadsPerIntent float64 `json:"relay_reads_per_intent"`
	RelayRowsRead       int64   `json:"relay_rows_read"`
	// CatchupMsgsPerS is, in the catch-up phase, the effects the consumer applied per second
	// from its start (every order already placed and published) to the last effect; on the
	// first phase's summary it repeats the catch-up phase's figure.
	CatchupMsgsPerS float64 `json:"catchup_msgs_per_s,omitempty"`
	// With config.plain the run compares the service with the same service on plain
	// ExecuteOnce, in rounds (see compare): PlainAcceptedPerS and RepeatableAcceptedPerS are
	// each service's accepted rate pooled over its rounds, and AcceptedVsPlain their ratio.
	PlainAcceptedPerS      float64 `json:"plain_accepted_per_s,omitempty"`
	RepeatableAcceptedPerS float64 `json:"repeatable_accepted_per_s,omitempty"`
	AcceptedVsPlain        float64 `json:"accepted_vs_plain,omitempty"`
	// Rounds are the comparison's phases in the order they ran (the first of them this one
	// when CompareClients is this phase's clients), and CompareClients their clients.
	Rounds         []Round `json:"rounds,omitempty"`
	CompareClients int     `json:"compare_clients,omitempty"`
	// Plain is the first plain round whole, with its own effects_exact, lost and
	// duplicated_effects.
	Plain *Summary `json:"plain,omitempty"`
	// Catchup is the second phase (config.catchup): the consumer stopped while the orders are
	// placed, then started. Its own effects_exact, lost and duplicated_effects.
	Catchup *Summary `json:"catchup,omitempty"`
}

// chain is one run's shared state.
type chain struct {
	cfg       config
	session   *gocql.Session
	box       *outbox.Outbox
	counter   string
	requests  atomic.Int64
	mu        sync.Mutex
	accepted  map[string]time.Time // order → when its first 2xx came back
	applied   map[string]time.Time // order → when its effect was applied
	runs      map[string]int       // order → handler runs that applied it
	consumed  atomic.Int64
	published atomic.Int64 // messages the relay published, copies included
	lastPub   atomic.Int64 // when the relay last published, in Unix nanoseconds
	relayRows atomic.Int64 // arrival and intent rows the relay read (Stats.RowsRead)
	relayPub  atomic.Int64 // messages the relay's passes published (Stats.Published)
	// consumerStart, in the catch-up phase, is when the consumer started (after every order
	// was placed); zero when it ran from the start.
	consumerStart time.Time
	// report, if set (a consume role), hears of every poll and every applied effect.
	report *reporter
	hold   sync.Once // the consumer's one hold (config.holdAfter, config.holdAfterApplied)
}

// run places the orders through the whole chain and waits until every accepted one took effect
// (or ctx ends), then reports; with cfg.catchup it then runs the catch-up phase, on a topic, a
// counter and a consumer group of its own.
func run(ctx context.Context, session *gocql.Session, cfg config, out io.Writer) (Summary, error) {
	if cfg.warmup > 0 {
		// With the comparison, the plain service warms up too: its first round would otherwise
		// pay alone for the node's first conditional updates of the run (a completion is one,
		// the one-round commit is not), and the node runs them faster once warm.
		services := []bool{false}
		if cfg.plain > 0 {
			services = append(services, true)
		}
		for _, plain := range services {
			wc := cfg
			wc.orders, wc.plainService = cfg.warmup, plain
			fmt.Fprintf(out, "warm-up phase: %d orders (plain ExecuteOnce: %v), not measured\n", wc.orders, plain)
			if _, err := runPhase(ctx, session, wc, false, out); err != nil {
				return Summary{}, fmt.Errorf("warm-up phase: %w", err)
			}
			cfg.first += cfg.warmup
		}
	}
	s, err := runPhase(ctx, session, cfg, false, out)
	if err != nil {
		return s, err
	}
	next := cfg.first + cfg.orders
	if cfg.plain > 0 {
		if next, err = compare(ctx, session, cfg, next, &s, out); err != nil {
			return s, err
		}
	}
	if cfg.catchup <= 0 {
		return s, nil
	}
	cc := cfg
	cc.orders, cc.first = cfg.catchup, next
	fmt.Fprintf(out, "catch-up phase: %d orders placed with the consumer stopped\n", cc.orders)
	c, err := runPhase(ctx, session, cc, true, out)
	if err != nil {
		return s, fmt.Errorf("catch-up phase: %w", err)
	}
	s.Catchup, s.CatchupMsgsPerS = &c, c.CatchupMsgsPerS
	return s, nil
}

// runPhase is one run of the chain; with catchup the consumer starts only once every order
// was acknowledged and published.
func runPhase(ctx context.Context, session *gocql.Session, cfg config, catchup bool, out io.Writer) (Summary, error) {
	suffix := time.Now().Format("150405.000000")
	topic := "orders-" + suffix
	c := &chain{cfg: cfg, session: session, counter: "orders-placed-" + suffix,
		accepted: map[string]time.Time{}, applied: map[string]time.Time{}, runs: map[string]int{}}
	// The relay's publisher gives up on a record within the relay's publish timeout.
	cl, err := kgo.NewClient(append(kafkapub.ClientOpts(), kgo.SeedBrokers(cfg.brokers...))...)
	if err != nil {
		return Summary{}, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, topic, 0); err != nil {
		return Summary{}, err
	}
	srv, addr, err := c.serve("127.0.0.1:0")
	if err != nil {
		return Summary{}, err
	}
	defer srv.Close()
	relay, err := c.newRelay(cl, topic)
	if err != nil {
		return Summary{}, err
	}
	logc, err := newEffectLog(session, cfg.keyspace)
	if err != nil {
		return Summary{}, err
	}
	g, err := guard.New(session, guard.WithKeyspace(cfg.keyspace), guard.WithLease(5*time.Second))
	if err != nil {
		return Summary{}, err
	}
	start := time.Now()
	if err := c.drive(ctx, phase{addr: addr, topic: topic, group: "billing-" + suffix, catchup: catchup},
		relay, g, logc, out); err != nil {
		return Summary{}, err
	}
	s := c.summary(ctx, logc, start)
	s.Published = c.published.Load()
	s.RelayRowsRead = c.relayRows.Load()
	if p := c.relayPub.Load(); p > 0 {
		s.RelayReadsPerIntent = float64(s.RelayRowsRead) / float64(p)
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	fmt.Fprintln(out, string(b))
	return s, nil
}

// newRelay is the phase's relay, publishing to topic through cl and counting what it published.
// It passes at its default interval (200 ms): passes every 50 ms read, marked and published in
// smaller batches, and their extra queries and produce requests took CPU from the node the
// services share (docs/outbox.md has the runs).
func (c *chain) newRelay(cl *kgo.Client, topic string) (*outbox.Relay, error) {
	pub, err := kafkapub.New(cl, topic)
	if err != nil {
		return nil, err
	}
	return outbox.NewRelay(c.session, outbox.PublisherFunc(func(ctx context.Context, msgs []outbox.Message) error {
		err := pub.Publish(ctx, msgs)
		if err == nil {
			c.published.Add(int64(len(msgs)))
			c.lastPub.Store(time.Now().UnixNano())
		}
		return err
	}), outbox.WithKeyspace(c.cfg.keyspace))
}

// phase is where one run of the chain places its orders and what it consumes.
type phase struct {
	addr, topic, group string
	catchup            bool // the consumer starts once every order is published
}

// drive runs the relay and the consumer while the orders of p are placed, until every accepted
// order was applied, the consumer failed or ctx ended; then it stops both.
func (c *chain) drive(ctx context.Context, p phase, relay *outbox.Relay, g *guard.Guard, logc *events.Log, out io.Writer) error {
	bg, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() {
		_ = relay.Run(bg, func(st outbox.Stats, err error) {
			c.relayRows.Add(int64(st.RowsRead))
			c.relayPub.Add(int64(st.Published))
			if err != nil {
				fmt.Fprintln(out, "relay:", err)
			}
		})
	})
	consume := func() {
		if err := c.consume(bg, p.topic, p.group, g, logc); err != nil && bg.Err() == nil {
			errs <- err
		}
	}
	if !p.catchup {
		wg.Go(consume)
	}
	c.place(bg, p.addr)
	if p.catchup {
		// The backlog is whole before the consumer starts: every accepted order published.
		c.waitPublished(bg)
		c.mu.Lock()
		c.consumerStart = time.Now()
		c.mu.Unlock()
		wg.Go(consume)
	}
	err := c.waitApplied(bg, errs)
	stop()
	wg.Wait()
	return err
}

// newEffectLog is the event log the consumer applies the orders' amounts to. An effect is
// recorded at its message's time (the order's staging time), so a redelivery lands on the same
// row; a message reaches the consumer as late as its relay, its broker or the consumer itself
// was away (minutes in the crash tests), and such an event takes the log's late path: counted
// once, never refused. Even on time, an order's event reaches the consumer at least the relay's
// arrival lag (1 s) after its staging, so the log's grace is longer than the default 2 s, which
// would leave the relay's pass, the broker and the consumer's poll a second before every effect
// took the late path (a few reads and a Paxos round per window and poll instead of a write).
func newEffectLog(session *gocql.Session, keyspace string) (*events.Log, error) {
	return events.NewLog(session, events.WithKeyspace(keyspace), events.WithGracePeriod(effectGrace))
}

// effectGrace is the event log's grace: the relay's arrival lag and a few seconds of the chain's
// ordinary delays (a pass, a publish, a poll, a rebalance).
const effectGrace = 5 * time.Second

// order is the request body, and the payload of its event.
type order struct {
	ID     string `json:"order"`
	Amount int64  `json:"amount"`
}

// serve starts the order service on listen (host:port; port 0 picks a free one).
func (c *chain) serve(listen string) (*http.Server, string, error) {
	// The cache answers a client's retry of a committed order at once, and a retry or a double
	// submit that comes while the order runs waits for its run: without it a repeatable handler
	// runs again before its insert finds the stored response, so a slow order's retries would
	// each take as long as the order itself, and never beat the client's timeout.
	now := offsetClock(c.cfg.clockOffset)
	store, err := lwt.NewStore(c.session, outbox.Table(c.cfg.keyspace), lwt.WithLease(5*time.Second), lwt.WithCache(100_000),
		lwt.WithClock(now))
	if err != nil {
		return nil, "", err
	}
	c.box, err = outbox.New(c.session, outbox.WithKeyspace(c.cfg.keyspace), outbox.WithClock(now))
	if err != nil {
		return nil, "", err
	}
	// Keys are scoped by the caller's credential, so one client can never replay another's
	// order; every client of this example is the same shop front end. Placing an order has no
	// effect but its commit (the stored response and its staged event), so the handler may run
	// more than once and each new order costs one Paxos round instead of two. A handler that
	// charged a card or sent an email must not use WithRepeatableHandler.
	opts := []httpidem.Option{httpidem.WithAuthorizationScope(), httpidem.WithRepeatableHandler()}
	if c.cfg.plainService {
		opts = opts[:1] // the comparison: a claim and a completion, two Paxos rounds per new order
	}
	mw, err := httpidem.New(store, opts...)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders", mw.Handler(http.HandlerFunc(c.placeOrder)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

// placeOrder is the business handler: it stages "order.placed", which commits with the
// response the middleware stores, or not at all. Every tenth order is slow, so its client
// times out and retries while it runs: the retry runs it too, and one of the two commits.
func (c *chain) placeOrder(w http.ResponseWriter, r *http.Request) {
	var o order
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &o)
	}
	if err != nil || o.ID == "" {
		http.Error(w, "bad order", http.StatusBadRequest)
		return
	}
	if o.Amount%10 == 0 {
		time.Sleep(400 * time.Millisecond)
	}
	if err := c.box.Stage(r.Context(), outbox.Event{Type: "order.placed", Key: o.ID, Payload: body}); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable) // 5xx: released, not stored
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"order":%q,"status":"placed"}`, o.ID)
}

// place sends every order from the clients, each until it is acknowledged; every fifth order is
// also sent a second time at once, as a client that double-submits.
func (c *chain) place(ctx context.Context, addr string) {
	hc := &http.Client{Timeout: 250 * time.Millisecond}
	defer hc.CloseIdleConnections()
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range c.cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if int(i) > c.cfg.orders || ctx.Err() != nil {
					return
				}
				n := i + int64(c.cfg.first)
				o := order{ID: fmt.Sprintf("order-%010d", n), Amount: n} // keys of at least 16 bytes
				if i%5 == 0 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c.send(ctx, hc, addr, o)
					}()
				}
				c.send(ctx, hc, addr, o)
			}
		}()
	}
	wg.Wait()
}

// send posts o under its idempotency key until a 2xx answer, retrying timeouts, 409s and 5xx.
func (c *chain) send(ctx context.Context, hc *http.Client, addr string, o order) {
	body, _ := json.Marshal(o)
	for ctx.Err() == nil {
		c.requests.Add(1)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, addr+"/orders", bytesReader(body))
		req.Header.Set(httpidem.DefaultHeader, o.ID)
		req.Header.Set("Authorization", "Bearer shop-frontend")
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				c.mu.Lock()
				if _, ok := c.accepted[o.ID]; !ok {
					c.accepted[o.ID] = time.Now()
				}
				c.mu.Unlock()
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitApplied waits until every accepted order took effect, the consumer failed, or ctx ended.
func (c *chain) waitApplied(ctx context.Context, errs <-chan error) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		c.mu.Lock()
		missing := 0
		for id := range c.accepted {
			if _, ok := c.applied[id]; !ok {
				missing++
			}
		}
		c.mu.Unlock()
		if missing == 0 {
			return nil
		}
		select {
		case err := <-errs:
			return err
		case <-ctx.Done():
			return fmt.Errorf("%d accepted orders never took effect (%d published, %d consumed): %w",
				missing, c.published.Load(), c.consumed.Load(), ctx.Err())
		case <-t.C:
		}
	}
}

// waitPublished waits until the relay has published at least one message per accepted order
// (copies count, so it may return a little early: the catch-up rate is then a little low,
// never high), or ctx ends.
func (c *chain) waitPublished(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		c.mu.Lock()
		n := len(c.accepted)
		c.mu.Unlock()
		if c.published.Load() >= int64(n) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// summary compares what was accepted with what took effect.
func (c *chain) summary(ctx context.Context, logc *events.Log, start time.Time) Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Summary{Requests: c.requests.Load(), Accepted: len(c.accepted), Applied: len(c.applied), Consumed: c.consumed.Load()}
	var lat []time.Duration
	var last, lastAccepted time.Time
	for id, at := range c.accepted {
		if at.After(lastAccepted) {
			lastAccepted = at
		}
		var o int64
		_, _ = fmt.Sscanf(id, "order-%d", &o)
		s.Expected += o
		done, ok := c.applied[id]
		if !ok {
			s.Lost++
			continue
		}
		lat = append(lat, max(0, done.Sub(at)))
		if done.After(last) {
			last = done
		}
	}
	for _, n := range c.runs {
		s.HandlerRuns += int64(n)
		if n > 1 {
			s.DuplicatedEffects++
		}
	}
	var err error
	s.Total, err = logc.Total(ctx, c.counter)
	s.EffectsExact = err == nil && s.Total == s.Expected && s.Lost == 0 && s.DuplicatedEffects == 0
	if len(lat) > 0 {
		slices.Sort(lat)
		s.P50Ms = float64(lat[len(lat)/2]) / float64(time.Millisecond)
		s.P99Ms = float64(lat[min(len(lat)-1, len(lat)*99/100)]) / float64(time.Millisecond)
		s.Seconds = last.Sub(start).Seconds()
		s.AcceptedSeconds = lastAccepted.Sub(start).Seconds()
		if p := c.lastPub.Load(); p != 0 {
			s.PublishedSeconds = time.Unix(0, p).Sub(start).Seconds()
		}
		s.MsgsPerS = float64(s.Applied) / s.Seconds
		if s.AcceptedSeconds > 0 {
			s.AcceptedPerS = float64(s.Accepted) / s.AcceptedSeconds
		}
		s.ConsumerLagS = max(0, last.Sub(lastAccepted).Seconds())
		if !c.consumerStart.IsZero() && last.After(c.consumerStart) {
			s.CatchupMsgsPerS = float64(s.Applied) / last.Sub(c.consumerStart).Seconds()
		}
	}
	return s
}
