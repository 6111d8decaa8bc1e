//go:build soak

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/schema"
	"github.com/cassdedup/cassdedup/testnode"
)

// The soak's own services and settings; SOAK_HOSTS ("node,broker,api:port", loopback only)
// moves them, SOAK the run's length, SOAK_RATE the orders per second, SOAK_OUT the JSON.
const (
	defaultHosts   = "127.0.0.81,127.0.0.82,127.0.0.83:19480"
	cqlPort        = 9342
	storagePort    = 7342
	brokerPort     = 19492 // and 19493 for its controller
	keyspace       = "soak"
	topic          = "orders"
	counter        = "soak-orders"
	maxMsgBytes    = 64 << 10 // the topic's max.message.bytes: a poison event is over it
	poisonPad      = 96 << 10 // under the outbox's 256 KiB and httpidem's 1 MiB, over the topic's limit
	poisonPrefix   = "poison-"
	poisonEvery    = 30 * time.Second
	relayLease     = 30 * time.Second
	publishTimeout = 12 * time.Second
	faultGap       = 20 * time.Second // between the end of one fault and the next
	sampleEvery    = 10 * time.Second // the pending backlog's age
	settleTimeout  = 6 * time.Minute
	// boundFactor: a table's rows may be up to this many times the rows its retention predicts
	// (retries, double submits, relay cursors, windows that split): more is a leak.
	boundFactor = 2
	boundSlack  = 100 // fixed rows: relay leases and cursors, layouts, counter windows
)

// Report is the JSON the run writes to SOAK_OUT (out/soak.json when unset).
type Report struct {
	Date              string  `json:"date"`
	Seconds           float64 `json:"seconds"` // traffic, faults included
	Rate              float64 `json:"rate"`    // orders per second asked
	Orders            int     `json:"orders"`  // distinct orders acknowledged (poison apart)
	Requests          int64   `json:"requests"`
	Published         int     `json:"published"` // messages, copies included
	EffectsExact      bool    `json:"effects_exact"`
	Total             int64   `json:"total"`
	Expected          int64   `json:"expected"`
	Lost              int     `json:"lost"`
	DuplicatedEffects int     `json:"duplicated_effects"` // orders whose event the log counts more than once
	// HandlerReruns is the orders whose consumer handler ran more than once: a consumer killed
	// after its effect and before its guard's marks runs it again, and the log, keyed by the
	// event's id, counts it once. Each is checked in the log (DuplicatedEffects).
	HandlerReruns int `json:"handler_reruns"`
	// LostOrders and TwiceOrders name (up to 20 of) them, with their amounts; Forensics is what
	// the node held for each lost one when the run ended.
	LostOrders       map[string]int64  `json:"lost_orders,omitempty"`
	TwiceOrders      map[string]int64  `json:"twice_orders,omitempty"` // orders counted more than once
	Forensics        []string          `json:"forensics,omitempty"`
	PoisonInjected   int               `json:"poison_injected"`
	PoisonApplied    int               `json:"poison_applied"`
	Parked           int               `json:"parked"`
	MaxPendingAgeS   float64           `json:"max_pending_age_s"` // oldest pending intent, sampled
	MaxEffectLagS    float64           `json:"max_effect_lag_s"`  // acknowledgement → effect, the longest
	SettleS          float64           `json:"settle_s"`          // traffic's end → every effect and parking
	Faults           []fault           `json:"faults"`
	RequestErrors    int64             `json:"request_errors"` // answers other than 2xx, and refused connections (retried)
	Refused          int64             `json:"refused"`        // orders refused for good (a 4xx other than 409, 429): a bug of the soak
	ProcessErrors    map[string]int    `json:"process_errors"` // error lines by role (retried by the process)
	FirstErrors      map[string]string `json:"first_errors"`
	Tables           []table           `json:"tables"`
	RowsWithinBounds bool              `json:"rows_within_bounds"`
}

type fault struct {
	Name  string  `json:"name"`
	AtS   float64 `json:"at_s"`
	TookS float64 `json:"took_s"`
}

// table is one table's rows at the end against its bound: rows ≤ (rate × retention, or the
// orders placed when the run is shorter than the retention) × rows per order × boundFactor +
// boundSlack. SteadyRows is what a run of this rate as long as the retention keeps.
type table struct {
	Name         string  `json:"name"`
	Rows         int64   `json:"rows"`
	RetentionH   float64 `json:"retention_h"`
	PerOrder     float64 `json:"rows_per_order"`
	Bound        int64   `json:"bound"`
	SteadyRows   int64   `json:"steady_rows"`
	WithinBounds bool    `json:"within_bound"`
}

// retentions: how long each table's rows live, and rows per order. Tables not listed have
// no row per order (bound: boundSlack).
var retentions = map[string]struct {
	retention time.Duration
	perOrder  float64
}{
	"idempotency_keys":             {24 * time.Hour, 1},                // the order's record (outbox retention)
	"outbox_intents":               {24*time.Hour + 7*24*time.Hour, 1}, // the record's expiry plus the pending grace
	"outbox_arrivals":              {3 * time.Minute, 1},               // the bucket and twice the horizon
	"outbox_parked":                {365 * 24 * time.Hour, 0},          // poison only: checked as parked == poison
	"processed_messages":           {7 * 24 * time.Hour, 1},            // the guard's
	"processed_messages_bucketed":  {7 * 24 * time.Hour, 1},
	"processed_messages_by_window": {7 * 24 * time.Hour, 1},
	"counter_window_events":        {7 * 24 * time.Hour, 1}, // the event log's
	"counter_windows":              {7 * 24 * time.Hour, 1}, // a window per event at most
	"counter_late_claims":          {7 * 24 * time.Hour, 1},
	"counter_late_slices":          {7 * 24 * time.Hour, 1},
}

func TestSoak(t *testing.T) {
	dur := envDuration(t, "SOAK", 10*time.Minute)
	rate := envFloat(t, "SOAK_RATE", 10)
	hosts := strings.Split(envOr("SOAK_HOSTS", defaultHosts), ",")
	if len(hosts) != 3 {
		t.Fatalf("soak: SOAK_HOSTS=%q: want node,broker,api:port", hosts)
	}
	for _, h := range []string{hosts[0], hosts[1], strings.Split(hosts[2], ":")[0]} {
		if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
			t.Fatalf("soak: %q is not a loopback address", h)
		}
	}
	bin := buildChain(t)
	node := startNode(t, hosts[0])
	applySchema(t, hosts[0])
	broker := startBroker(t, hosts[1], brokerPort)

	tl := newTally()
	ch := &chain{t: t, bin: bin, tally: tl, procs: map[string]*proc{}, restarts: map[string]int{},
		args: []string{"-hosts", fmt.Sprintf("%s:%d", hosts[0], cqlPort), "-brokers", fmt.Sprintf("%s:%d", hosts[1], brokerPort),
			"-keyspace", keyspace, "-topic", topic, "-max-message-bytes", fmt.Sprint(maxMsgBytes)}}
	// A loaded two-core machine's broker took more than the default 4 s to acknowledge records
	// just after a start, and each such timeout while other records went through counted toward
	// parking: the relay gets a longer lease and publish deadline, as a deployment on slow
	// brokers would.
	relayArgs := []string{"-relay-lease", relayLease.String(), "-publish-timeout", publishTimeout.String()}
	consumerArgs := []string{"-group", "billing", "-instance", "billing-1", "-counter", counter}
	ch.start("consume", consumerArgs...)
	ch.start("relay", relayArgs...)
	ch.start("api", "-listen", hosts[2])
	defer ch.stopAll()

	r := &Report{Date: time.Now().UTC().Format(time.RFC3339), Rate: rate, ProcessErrors: map[string]int{}}
	start := time.Now()
	ctx, stopTraffic := context.WithTimeout(context.Background(), dur)
	defer stopTraffic()
	cl := &clients{api: "http://" + hosts[2] + "/orders", tally: tl}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); cl.traffic(ctx, rate) }()
	var poison atomic.Int64
	go func() { defer wg.Done(); cl.poison(ctx, &poison) }()
	var maxAge atomic.Int64
	go func() { defer wg.Done(); samplePending(ctx, hosts[0], &maxAge) }()

	// The faults, one after another until the traffic ends; each on the test's goroutine, as
	// they may fail it.
	faults := []struct {
		name string
		do   func()
	}{
		{"relay SIGKILL, restarted", func() { ch.bounce("relay", syscall.SIGKILL, relayArgs...) }},
		{"broker stopped and restarted on its data", func() {
			broker.must(t, "down", "KAFKA_KEEP_DATA=1")
			time.Sleep(5 * time.Second)
			broker.must(t, "up", "KAFKA_KEEP_DATA=1")
		}},
		{"consumer SIGKILL, restarted", func() { ch.bounce("consume", syscall.SIGKILL, consumerArgs...) }},
		{"node SIGTERM, restarted on its data", func() { node.must(t, "restart") }},
		{"node SIGKILL, restarted on its data (commitlog replay)", func() { node.must(t, "kill"); node.must(t, "restart") }},
	}
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
		case <-time.After(faultGap):
		}
		if ctx.Err() != nil {
			break
		}
		f := faults[i%len(faults)]
		at := time.Now()
		o := tl.outcome()
		tl.mu.Lock()
		t.Logf("soak: %s: %s (%d orders acknowledged, %d published, %d without an effect yet, %d poison placed; errors %v, first %q)",
			at.Sub(start).Round(time.Second), f.name, o.orders, tl.published, o.lost, poison.Load(), tl.errs, tl.firstErr)
		tl.mu.Unlock()
		f.do()
		r.Faults = append(r.Faults, fault{Name: f.name, AtS: secs(at.Sub(start)), TookS: secs(time.Since(at))})
	}
	wg.Wait()
	r.Seconds = secs(time.Since(start))
	r.PoisonInjected = int(poison.Load())

	// Settle: every acknowledged order applied, every poison event parked.
	ended := time.Now()
	s := connect(t, hosts[0])
	for i := 0; time.Since(ended) < settleTimeout; i++ {
		r.Parked = countRows(s, "outbox_parked")
		o := tl.outcome()
		if o.lost == 0 && r.Parked >= r.PoisonInjected {
			break
		}
		if i%30 == 0 {
			t.Logf("soak: settling: %d of %d orders without an effect yet, %d of %d poison events parked",
				o.lost, o.orders, r.Parked, r.PoisonInjected)
		}
		time.Sleep(time.Second)
	}
	r.SettleS = secs(time.Since(ended))
	ch.stopAll()

	o := tl.outcome()
	r.Orders, r.Lost, r.HandlerReruns, r.PoisonApplied, r.Expected = o.orders, o.lost, o.twice, o.poisonApplied, o.expected
	r.LostOrders = o.lostOrders
	r.DuplicatedEffects, r.TwiceOrders = countedTwice(t, s, o.twiceOrders)
	r.Forensics = forensics(s, o.lostOrders)
	for _, f := range r.Forensics {
		t.Logf("soak: lost order: %s", f)
	}
	r.Requests, r.RequestErrors, r.Refused = cl.requests.Load(), cl.errors.Load(), cl.refused.Load()
	tl.mu.Lock()
	r.Published, r.MaxEffectLagS = tl.published, secs(tl.lag)
	r.ProcessErrors, r.FirstErrors = tl.errs, tl.firstErr
	tl.mu.Unlock()
	r.MaxPendingAgeS = secs(time.Duration(maxAge.Load()))
	logc, err := events.NewLog(s, events.WithKeyspace(keyspace))
	if err != nil {
		t.Fatalf("soak: %v", err)
	}
	tctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.Total, err = logc.Total(tctx, counter)
	if err != nil {
		t.Errorf("soak: the counter's total: %v", err)
	}
	r.EffectsExact = err == nil && r.Total == r.Expected && r.Lost == 0 && r.DuplicatedEffects == 0
	r.Tables, r.RowsWithinBounds = tableRows(t, s, float64(r.Orders+r.PoisonInjected), rate)

	write(t, r)
	if !r.EffectsExact {
		t.Errorf("soak: effects not exact: total %d, expected %d, %d lost, %d applied twice", r.Total, r.Expected, r.Lost, r.DuplicatedEffects)
	}
	if r.Lost != 0 || r.DuplicatedEffects != 0 || r.PoisonApplied != 0 {
		t.Errorf("soak: %d lost, %d applied twice, %d poison events applied", r.Lost, r.DuplicatedEffects, r.PoisonApplied)
	}
	if r.Refused != 0 {
		t.Errorf("soak: %d orders refused by the service for good", r.Refused)
	}
	if r.Parked != r.PoisonInjected {
		t.Errorf("soak: %d events parked, %d poison events injected", r.Parked, r.PoisonInjected)
	}
	if !r.RowsWithinBounds {
		t.Errorf("soak: a table's rows are over their bound (see tables in the JSON)")
	}
}

func secs(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }

// clients place orders at a steady rate, each until a 2xx (retrying timeouts, 409, 5xx and a
// refused connection), and send every fifth twice at once, as a client that double-submits.
type clients struct {
	api      string
	tally    *tally
	seq      atomic.Int64
	requests atomic.Int64
	errors   atomic.Int64
	refused  atomic.Int64
}

func (c *clients) traffic(ctx context.Context, rate float64) {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	sem := make(chan struct{}, 64) // clients at most: a stalled service is not met with a thundering herd
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		i := c.seq.Add(1)
		id, body := fmt.Sprintf("order-%010d", i), fmt.Sprintf(`{"order":"order-%010d","amount":%d}`, i, i)
		sends := 1
		if i%5 == 0 {
			sends = 2
		}
		for range sends {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c.send(context.WithoutCancel(ctx), hc, id, body, i)
			}()
		}
	}
}

// poison places an order every poisonEvery whose event the broker refuses for good (over the
// topic's max.message.bytes): the relay must park it and go on.
func (c *clients) poison(ctx context.Context, n *atomic.Int64) {
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(poisonEvery):
		}
		id := fmt.Sprintf("%s%09d", poisonPrefix, i) // httpidem wants keys of at least 16 bytes
		body := fmt.Sprintf(`{"order":%q,"amount":0,"pad":%q}`, id, strings.Repeat("x", poisonPad))
		if c.send(context.WithoutCancel(ctx), hc, id, body, 0) {
			n.Add(1)
		}
	}
}

// send posts one order until a 2xx or for at most five minutes (after which its order counts
// as never acknowledged, so never as lost). A 4xx other than 409 and 429 is a refusal for good:
// counted, not retried.
func (c *clients) send(ctx context.Context, hc *http.Client, id, body string, amount int64) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		c.requests.Add(1)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api, bytes.NewReader([]byte(body)))
		if err != nil {
			return false
		}
		req.Header.Set("Idempotency-Key", id)
		req.Header.Set("Authorization", "Bearer shop-frontend")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			switch code := resp.StatusCode; {
			case code/100 == 2:
				c.tally.ack(id, amount)
				return true
			case code/100 == 4 && code != http.StatusConflict && code != http.StatusTooManyRequests:
				c.refused.Add(1)
				return false
			}
		}
		c.errors.Add(1)
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// samplePending keeps in maxAge the age of the oldest pending intent (committed or in flight)
// that the outbox's admin view lists, every sampleEvery; a sample that fails (the node is
// restarting) is skipped.
func samplePending(ctx context.Context, host string, maxAge *atomic.Int64) {
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(sampleEvery):
		}
		s, err := open(host)
		if err != nil {
			continue
		}
		admin, err := outbox.NewAdmin(s, outbox.WithKeyspace(keyspace))
		if err == nil {
			lctx, cancel := context.WithTimeout(ctx, sampleEvery)
			now := time.Now()
			_ = admin.ListPending(lctx, start.Add(-time.Minute), func(p outbox.Pending) error {
				if p.Verdict == "committed" || p.Verdict == "in flight" {
					if age := int64(now.Sub(p.StagedAt)); age > maxAge.Load() {
						maxAge.Store(age)
					}
				}
				return nil
			})
			cancel()
		}
		s.Close()
	}
}

// tableRows counts every table's rows in the keyspace and checks each against its bound.
func tableRows(t *testing.T, s *gocql.Session, orders, rate float64) ([]table, bool) {
	t.Helper()
	var names []string
	iter := s.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, keyspace).Iter()
	for name := ""; iter.Scan(&name); {
		names = append(names, name)
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("soak: list the tables: %v", err)
	}
	ok := true
	var out []table
	for _, name := range names {
		ret := retentions[name]
		tb := table{Name: name, Rows: int64(countRows(s, name)), RetentionH: ret.retention.Hours(), PerOrder: ret.perOrder,
			SteadyRows: int64(rate * ret.retention.Seconds() * ret.perOrder)}
		// The run is shorter than every retention: every order placed is within it.
		tb.Bound = int64(orders*ret.perOrder*boundFactor) + boundSlack
		tb.WithinBounds = tb.Rows >= 0 && tb.Rows <= tb.Bound
		ok = ok && tb.WithinBounds
		out = append(out, tb)
	}
	return out, ok
}

// countRows counts a table's rows (-1 when the count fails).
func countRows(s *gocql.Session, name string) int {
	var n int64
	if err := s.Query(`SELECT count(*) FROM ` + keyspace + `.` + name).Consistency(gocql.One).Scan(&n); err != nil {
		return -1
	}
	return int(n)
}

func write(t *testing.T, r *Report) {
	t.Helper()
	path := envOr("SOAK_OUT", filepath.Join(repoRoot(t), "out", "soak.json"))
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("soak: %v", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatalf("soak: %v", err)
	}
	t.Logf("soak: wrote %s", path)
	fmt.Printf("soak: %.0f s, %d orders (%d requests, %d retried), effects exact %t (total %d), %d lost, %d counted twice (%d handler reruns); "+
		"%d poison injected, %d parked; oldest pending %.1f s, longest effect lag %.1f s, settled in %.1f s; %d faults; rows within bounds %t\n",
		r.Seconds, r.Orders, r.Requests, r.RequestErrors, r.EffectsExact, r.Total, r.Lost, r.DuplicatedEffects, r.HandlerReruns,
		r.PoisonInjected, r.Parked, r.MaxPendingAgeS, r.MaxEffectLagS, r.SettleS, len(r.Faults), r.RowsWithinBounds)
	for _, tb := range r.Tables {
		fmt.Printf("soak:   %-30s %8d rows (bound %d, retention %.0f h, steady state at this rate %d)\n", tb.Name, tb.Rows, tb.Bound, tb.RetentionH, tb.SteadyRows)
	}
}

func applySchema(t *testing.T, host string) {
	t.Helper()
	s, err := testnode.ClusterFor(fmt.Sprintf("%s:%d", host, cqlPort)).CreateSession()
	if err != nil {
		t.Fatalf("soak: connect: %v", err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := schema.Apply(ctx, s, schema.WithKeyspace(keyspace)); err != nil {
		t.Fatalf("soak: apply the schema: %v", err)
	}
}

func open(host string) (*gocql.Session, error) {
	c := testnode.ClusterFor(fmt.Sprintf("%s:%d", host, cqlPort))
	c.Keyspace = keyspace
	c.Timeout = 30 * time.Second
	c.DisableInitialHostLookup = true
	c.Logger = discard{}
	return c.CreateSession()
}

func connect(t *testing.T, host string) *gocql.Session {
	t.Helper()
	s, err := open(host)
	if err != nil {
		t.Fatalf("soak: connect: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

type discard struct{}

func (discard) Print(...any)          {}
func (discard) Printf(string, ...any) {}
func (discard) Println(...any)        {}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envDuration(t *testing.T, k string, def time.Duration) time.Duration {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("soak: %s=%q: want a duration such as 10m", k, v)
	}
	return d
}

func envFloat(t *testing.T, k string, def float64) float64 {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	var f float64
	if _, err := fmt.Sscan(v, &f); err != nil || f <= 0 {
		t.Fatalf("soak: %s=%q: want a positive number", k, v)
	}
	return f
}
