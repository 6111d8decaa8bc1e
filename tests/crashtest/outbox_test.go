//go:build faults

package crashtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/outbox"
)

// The outbox scenarios share one node, one broker and one chain: the order service, relays and
// the consumer of examples/outbox, each an OS process of its own (-role api, relay, consume),
// that the test kills, freezes or cuts off from its broker. Their addresses are
// outboxDefaultHosts unless CRASHTEST_OUTBOX_HOSTS names others (see outboxHosts).
const (
	outboxHostsEnv     = "CRASHTEST_OUTBOX_HOSTS"
	outboxDefaultHosts = "127.0.0.75,127.0.0.76,127.0.0.77:19380" // node, broker, API
	outboxBrokerPort   = 19392                                    // and 19393 for its controller
	outboxRelayLease   = outbox.DefaultRelayLease                 // a pass over 16 shards on a loaded machine can take seconds
	outboxOrders       = 200                                      // orders per scenario
	outboxClients      = 8
	outboxTopic        = "orders"
	outboxCounter      = "orders-placed"
	outboxSession      = 6 * time.Second // the frozen consumer's group session timeout
)

// TestOutboxChainCrashes runs the outbox chain through faults, one after another, and after
// each checks that every acknowledged order took effect exactly once: 0 lost, 0 applied twice
// (correctness is asserted; timings are only reported): the API process killed after commits no
// relay has seen, a relay killed between publish and mark, the broker restarted mid-run, and a
// relay frozen past its lease, a consumer on the fast path frozen with a poll in flight past
// its session timeout, and a consumer killed while it catches up a backlog; and, with no
// fault but time, an order service whose clocks run minutes behind its relay's. Each scenario
// starts its own order service and relays; the consumer and the counter it feeds run through
// all of them (the two consumer scenarios replace the consumer with their own).
func TestOutboxChainCrashes(t *testing.T) {
	ch := startOutboxChain(t)
	t.Run("api killed after commit", ch.apiKilled)
	t.Run("relay killed between publish and mark", ch.relayKilled)
	t.Run("broker restarted", ch.brokerRestarted)
	t.Run("relay frozen past its lease", ch.relayFrozen)
	t.Run("stager and relay clocks minutes off", ch.clocksOff)
	t.Run("consumer frozen past its session timeout", ch.consumerFrozen)
	t.Run("consumer killed while catching up", ch.consumerKilledCatchingUp)
	ch.checkTotal(t)
}

// chainLine is a line one of the chain's processes prints (examples/outbox roles.go).
type chainLine struct {
	Event  string
	Addr   string
	Orders []string
	Order  string
	N      int
	Err    string
	Fenced bool
	// clock (an api): its stager's offset from the cluster's clock, the bound, the refusals
	Offset, Bound string
	Refused       int64
}

func (l chainLine) kind() string { return l.Event }

// chainProc is one process of the chain, with what it reported so far.
type chainProc struct {
	*process[chainLine]
	role      string
	mu        sync.Mutex
	seen      map[string]int // reports by kind
	published []string       // orders the process published, copies included
	fenced    int            // passes that found a shard taken by a newer relay
	clock     chainLine      // the last clock line (an api)
	errs      []string
	done      chan struct{} // closed when the process's stdout ended
}

func (p *chainProc) count(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[kind]
}

// outboxChain is the state the scenarios share: the node, the broker, the binary, and what the
// processes reported, by order.
type outboxChain struct {
	hosts    outboxAddrs
	bin      string
	node     *node
	broker   *broker
	consumer *chainProc

	requests atomic.Int64
	amount   atomic.Int64 // the last order's amount: every order has one of its own
	mu       sync.Mutex
	acked    map[string]int64 // order → its amount, once a 2xx came back
	pub      map[string]int   // order → messages published for it, copies included
	applied  map[string]int   // order → handler runs that applied it
	consumed int
	lastPub  time.Time // when a relay last reported a publish
}

// outboxAddrs are the loopback addresses of the chain's node and broker, and the API's host:port.
type outboxAddrs struct{ node, broker, api string }

// outboxHosts reads CRASHTEST_OUTBOX_HOSTS ("node,broker,api:port", each on loopback), so a
// second run beside a running one (a CI loop) can use addresses of its own.
func outboxHosts(t *testing.T) outboxAddrs {
	t.Helper()
	v := os.Getenv(outboxHostsEnv)
	if v == "" {
		v = outboxDefaultHosts
	}
	parts := strings.Split(v, ",")
	if len(parts) != 3 {
		t.Fatalf("crashtest: %s=%q: want node,broker,api:port", outboxHostsEnv, v)
	}
	a := outboxAddrs{node: parts[0], broker: parts[1], api: parts[2]}
	apiHost, _, err := net.SplitHostPort(a.api)
	for _, h := range []string{a.node, a.broker, apiHost} {
		if ip := net.ParseIP(h); err != nil || ip == nil || !ip.IsLoopback() {
			t.Fatalf("crashtest: %s=%q: %q is not a loopback address (api needs a port): %v", outboxHostsEnv, v, h, err)
		}
	}
	return a
}

func startOutboxChain(t *testing.T) *outboxChain {
	ch := &outboxChain{hosts: outboxHosts(t), bin: buildChain(t), acked: map[string]int64{}, pub: map[string]int{}, applied: map[string]int{}}
	ch.node = startNode(t, ch.hosts.node, "periodic")
	ch.node.applySchema(t)
	ch.broker = startBroker(t, ch.hosts.broker, outboxBrokerPort)
	ch.consumer = ch.start(t, "consume", chainConsumerArgs...)
	return ch
}

// chainConsumerArgs are the flags of the chain's consumer: a static member of group billing.
var chainConsumerArgs = []string{"-group", "billing", "-instance", "billing-1", "-counter", outboxCounter}

// consuming makes sure the chain's consumer runs. A process lives as long as the test that
// started it, so a consumer a scenario started (one that replaced the chain's) was killed at that
// scenario's end: a scenario after it would place orders that nothing consumes. The reader of a
// process killed by a cleanup closes done a moment after the cleanup returns, hence the wait.
func (ch *outboxChain) consuming(t *testing.T) {
	t.Helper()
	select {
	case <-ch.consumer.done:
		ch.consumer = ch.start(t, "consume", chainConsumerArgs...)
	case <-time.After(time.Second):
	}
}

// buildChain builds examples/outbox into the test's temporary directory.
func buildChain(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "outbox-chain")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(repo, "examples", "outbox")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build examples/outbox: %s", out)
	return bin
}

// start starts one process of the chain, and a goroutine that records what it reports.
func (ch *outboxChain) start(t *testing.T, role string, args ...string) *chainProc {
	t.Helper()
	args = append([]string{"-role", role, "-hosts", ch.node.hosts(), "-brokers", ch.broker.hosts(), "-keyspace", keyspace,
		"-topic", outboxTopic, "-relay-lease", outboxRelayLease.String()}, args...)
	p := &chainProc{role: role, seen: map[string]int{}, done: make(chan struct{}),
		process: startProcess(t, exec.Command(ch.bin, args...), func(s string) chainLine { return chainLine{Event: "unreadable", Err: s} })}
	t.Cleanup(func() {
		if t.Failed() {
			p.mu.Lock()
			t.Logf("crashtest: %s process %d reported %v; errors: %q", role, p.cmd.Process.Pid, p.seen, p.errs[:min(len(p.errs), 5)])
			p.mu.Unlock()
		}
	})
	go func() {
		defer close(p.done)
		for l := range p.lines {
			ch.record(p, l)
		}
	}()
	return p
}

func (ch *outboxChain) record(p *chainProc, l chainLine) {
	p.mu.Lock()
	p.seen[l.Event]++
	if l.Event == "published" {
		p.published = append(p.published, l.Orders...)
	}
	if l.Err != "" {
		p.errs = append(p.errs, l.Event+": "+l.Err)
	}
	if l.Fenced {
		p.fenced++
	}
	if l.Event == "clock" {
		p.clock = l
	}
	p.mu.Unlock()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	switch l.Event {
	case "published":
		for _, o := range l.Orders {
			ch.pub[o]++
		}
		ch.lastPub = time.Now()
	case "applied":
		ch.applied[l.Order]++
	case "consumed":
		ch.consumed += l.N
	}
}

// startAPI starts the order service for one scenario. A process lives as long as the test that
// started it (startProcess kills it in t's cleanup), so each scenario starts its own: an API
// started by the first scenario was gone in the next one, whose clients then placed no order
// and whose relay, with nothing committed, published nothing.
func (ch *outboxChain) startAPI(t *testing.T, args ...string) *chainProc {
	t.Helper()
	api := ch.start(t, "api", append([]string{"-listen", ch.hosts.api}, args...)...)
	ch.waitFor(t, "the order service to listen", time.Minute, func() bool { return api.count("listening") > 0 })
	return api
}

// stop ends a process with SIGTERM (a relay gives its shards up) and waits for it. A process
// already ended (killed by the cleanup of the scenario that started it, whose reader may not
// have closed done yet) is only waited for: signalling it fails with os.ErrProcessDone.
func stop(t *testing.T, p *chainProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		require.NoError(t, err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Errorf("crashtest: %s process %d did not stop within 30s of SIGTERM", p.role, p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
	}
}

// kill ends a process with SIGKILL, as a crash would.
func kill(t *testing.T, p *chainProc) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
}

// waitFor polls cond until it holds, failing the test after timeout. The failure says how far
// the chain got (a relay that publishes nothing because no order was acknowledged is not stuck).
func (ch *outboxChain) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			ch.mu.Lock()
			acked, published, applied := len(ch.acked), len(ch.pub), len(ch.applied)
			ch.mu.Unlock()
			t.Fatalf("crashtest: no %s within %s (in all scenarios so far: %d requests sent, %d orders acknowledged, "+
				"%d published, %d applied)", what, timeout, ch.requests.Load(), acked, published, applied)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// orders returns n new orders of a scenario, each with an amount of its own.
func (ch *outboxChain) orders(scenario string, n int) []order {
	out := make([]order, n)
	for i := range out {
		out[i] = order{ID: fmt.Sprintf("%s-order-%06d", scenario, i), Amount: ch.amount.Add(1)}
	}
	return out
}

type order struct {
	ID     string `json:"order"`
	Amount int64  `json:"amount"`
}

// place sends every order from outboxClients clients, each until a 2xx comes back or ctx ends:
// clients time out, retry on 409 (in progress), 5xx and a refused connection (a dead service).
func (ch *outboxChain) place(ctx context.Context, orders []order) {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range outboxClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(orders) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				ch.send(ctx, hc, orders[i])
			}
		}()
	}
	wg.Wait()
}

func (ch *outboxChain) send(ctx context.Context, hc *http.Client, o order) {
	body := []byte(fmt.Sprintf(`{"order":%q,"amount":%d}`, o.ID, o.Amount))
	for ctx.Err() == nil {
		ch.requests.Add(1)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ch.hosts.api+"/orders", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Idempotency-Key", o.ID)
		req.Header.Set("Authorization", "Bearer shop-frontend")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				ch.mu.Lock()
				ch.acked[o.ID] = o.Amount
				ch.mu.Unlock()
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// placeAll places orders in the background; wait returns once every one was acknowledged.
func (ch *outboxChain) placeAll(t *testing.T, orders []order) (wait func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch.place(ctx, orders)
	}()
	return func() {
		t.Helper()
		<-done
		cancel()
		ch.waitFor(t, "acknowledgement of every order", time.Second, func() bool { return ch.ackedOf(orders) == len(orders) })
	}
}

func (ch *outboxChain) ackedOf(orders []order) int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	n := 0
	for _, o := range orders {
		if _, ok := ch.acked[o.ID]; ok {
			n++
		}
	}
	return n
}

// chainTally is what the chain did for one scenario's orders.
type chainTally struct {
	acked, published, copies, applied, lost, twice int
}

func (ch *outboxChain) tally(orders []order) chainTally {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var tl chainTally
	for _, o := range orders {
		_, acked := ch.acked[o.ID]
		if acked {
			tl.acked++
		}
		if ch.pub[o.ID] > 0 {
			tl.published++
			tl.copies += ch.pub[o.ID]
		}
		switch runs := ch.applied[o.ID]; {
		case runs > 1:
			tl.twice++
			tl.applied++
		case runs == 1:
			tl.applied++
		case acked:
			tl.lost++
		}
	}
	return tl
}

// settle waits until every acknowledged order of the scenario took effect (or the wait times
// out: the tally then shows the lost ones), and returns how long that took.
func (ch *outboxChain) settle(orders []order, timeout time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < timeout {
		if tl := ch.tally(orders); tl.lost == 0 && tl.acked == len(orders) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// report adds the scenario's line to the results table and asserts 0 lost, 0 applied twice.
func (ch *outboxChain) report(t *testing.T, scenario string, orders []order, how string) {
	t.Helper()
	tl := ch.tally(orders)
	ch.mu.Lock()
	consumed := ch.consumed
	ch.mu.Unlock()
	// Only a committed event is published, and every committed one is: committed = published.
	t.Logf("crashtest: outbox, %s: %d requests sent so far; of %d orders %d acknowledged, %d committed and published "+
		"(%d messages with copies), %d records consumed so far, %d effects, %d lost, %d applied twice",
		scenario, ch.requests.Load(), len(orders), tl.acked, tl.published, tl.copies, consumed, tl.applied, tl.lost, tl.twice)
	results.add(t, result{
		Scenario:     "outbox chain: " + scenario,
		Operations:   len(orders),
		Acknowledged: tl.acked,
		Lost:         tl.lost,
		Twice:        tl.twice,
		Resolution: fmt.Sprintf("%s; %d orders published in %d messages, %d took effect, each once",
			how, tl.published, tl.copies, tl.applied),
	})
	assert.Equal(t, len(orders), tl.acked, "orders acknowledged in the end")
	assert.Zero(t, tl.lost, "acknowledged orders without an effect")
	assert.Zero(t, tl.twice, "orders whose effect was applied more than once")
	assert.Equal(t, tl.acked, tl.applied, "effects")
}

// apiKilled: SIGKILL of the order service while clients place orders and no relay runs, so
// commits no relay has seen die with it; a relay started afterwards publishes them.
func (ch *outboxChain) apiKilled(t *testing.T) {
	orders := ch.orders("apikill", outboxOrders)
	start := time.Now()
	api := ch.startAPI(t)
	wait := ch.placeAll(t, orders)
	ch.waitFor(t, "half of the orders acknowledged", 2*time.Minute, func() bool { return ch.ackedOf(orders) >= len(orders)/2 })
	kill(t, api)
	ackedAtKill := ch.ackedOf(orders)
	committed, inFlight := ch.pending(t, start)
	relay := ch.start(t, "relay")
	api = ch.startAPI(t)
	wait()
	took := ch.settle(orders, 2*time.Minute)
	ch.report(t, "SIGKILL of the API process before any relay ran", orders,
		fmt.Sprintf("%d acknowledged at the kill, %d committed and %d in flight unseen by a relay; a new relay and a new "+
			"service: every order took effect %s later", ackedAtKill, committed, inFlight, took.Round(time.Millisecond)))
	assert.GreaterOrEqual(t, committed, ackedAtKill, "every acknowledged order was committed")
	stop(t, relay)
	stop(t, api)
}

// pending counts the intents since start that the admin view sees as committed and in flight.
func (ch *outboxChain) pending(t *testing.T, since time.Time) (committed, inFlight int) {
	t.Helper()
	s := ch.node.session(t)
	admin, err := outbox.NewAdmin(s, outbox.WithKeyspace(keyspace))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, admin.ListPending(ctx, since.Add(-time.Minute), func(p outbox.Pending) error {
		switch p.Verdict {
		case "committed":
			committed++
		case "in flight":
			inFlight++
		}
		return nil
	}))
	return committed, inFlight
}

// relayKilled: a relay that publishes and then stops before marking is killed there; the next
// relay publishes the same events again, and the consumer's guard drops the copies.
func (ch *outboxChain) relayKilled(t *testing.T) {
	orders := ch.orders("relaykill", outboxOrders)
	api := ch.startAPI(t)
	held := ch.start(t, "relay", "-hold-after-publish")
	wait := ch.placeAll(t, orders)
	ch.waitFor(t, "a publish by the holding relay", 2*time.Minute, func() bool { return held.count("holding") > 0 })
	heldOrders := ch.publishedBy(held)
	// The consumer applies what was published before the relay could mark it.
	ch.waitFor(t, "the held messages applied", 2*time.Minute, func() bool { return ch.appliedAll(heldOrders) })
	kill(t, held)
	killed := time.Now()
	relay := ch.start(t, "relay")
	ch.waitFor(t, "the held messages published again", 2*time.Minute, func() bool { return ch.publishedAgain(heldOrders) })
	republished := time.Since(killed)
	wait()
	ch.settle(orders, 2*time.Minute)
	ch.report(t, "SIGKILL of a relay between publish and mark", orders,
		fmt.Sprintf("%d messages published and applied, then the relay killed before its mark; published again by the next "+
			"relay %s after the kill (its lease %s)", len(heldOrders), republished.Round(time.Millisecond), outboxRelayLease))
	stop(t, relay)
	stop(t, api)
}

func (ch *outboxChain) publishedBy(p *chainProc) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.published...)
}

func (ch *outboxChain) appliedAll(orders []string) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, o := range orders {
		if ch.applied[o] == 0 {
			return false
		}
	}
	return true
}

func (ch *outboxChain) publishedAgain(orders []string) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, o := range orders {
		if ch.pub[o] < 2 {
			return false
		}
	}
	return true
}

// brokerRestarted: the broker stops and starts again on its data mid-run: it stops once some
// of the first half of the orders took effect, the second half is placed and acknowledged while
// it is away (the relay's passes fail or wait meanwhile), and the relay publishes them once it
// is back.
func (ch *outboxChain) brokerRestarted(t *testing.T) {
	orders := ch.orders("brokerrestart", outboxOrders)
	first, second := orders[:len(orders)/2], orders[len(orders)/2:]
	api := ch.startAPI(t)
	relay := ch.start(t, "relay")
	waitFirst := ch.placeAll(t, first)
	ch.waitFor(t, "a third of the first half applied", 2*time.Minute, func() bool { return ch.tally(first).applied >= len(first)/3 })
	relayErrsBefore, consumerErrsBefore := errCount(relay), errCount(ch.consumer)
	ch.broker.stop(t)
	stopped := time.Now()
	ch.placeAll(t, second)()
	waitFirst()
	placed := time.Since(stopped)
	ch.broker.start(t)
	ready := time.Since(stopped)
	ch.settle(orders, 3*time.Minute)
	applied := time.Since(stopped)
	ch.mu.Lock()
	published := max(ch.lastPub.Sub(stopped), 0)
	ch.mu.Unlock()
	relayErrs, consumerErrs := errsSince(relay, relayErrsBefore), errsSince(ch.consumer, consumerErrsBefore)
	ch.report(t, "broker stopped and restarted on its data mid-run", orders,
		fmt.Sprintf("the broker stopped once at least %d orders took effect; the last %d were placed while it was away, "+
			"all acknowledged %s after the stop; ready again %s after the stop; %d relay passes and %d consumer polls failed "+
			"meanwhile and were retried (the relay's first error: %s); the relay's last publish came %s and the last effect "+
			"%s after the stop", len(first)/3, len(second), placed.Round(time.Millisecond), ready.Round(time.Millisecond),
			len(relayErrs), len(consumerErrs), firstOr(relayErrs, "none"), published.Round(time.Millisecond),
			applied.Round(time.Millisecond)))
	stop(t, relay)
	stop(t, api)
}

// relayFrozen: a relay frozen (SIGSTOP) between publish and mark, past its lease; another relay
// takes its shards over and publishes; resumed (SIGCONT), the frozen relay's marks are fenced off.
func (ch *outboxChain) relayFrozen(t *testing.T) {
	orders := ch.orders("relayfreeze", outboxOrders)
	api := ch.startAPI(t)
	frozen := ch.start(t, "relay", "-hold-after-publish")
	wait := ch.placeAll(t, orders)
	ch.waitFor(t, "a publish by the relay to freeze", 2*time.Minute, func() bool { return frozen.count("holding") > 0 })
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGSTOP))
	frozenAt := time.Now()
	heldOrders := ch.publishedBy(frozen)
	successor := ch.start(t, "relay")
	ch.waitFor(t, "the frozen relay's messages published by its successor", 2*time.Minute, func() bool { return ch.publishedAgain(heldOrders) })
	takeover := time.Since(frozenAt)
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGCONT))
	frozenFor := time.Since(frozenAt)
	_, err := io.WriteString(frozen.stdin, "go\n")
	require.NoError(t, err)
	// Resumed, the relay's connections may have to be made again before its mark is rejected.
	fencedAfter := ch.waitFor(t, "the resumed relay fenced off", 2*time.Minute, func() bool { return ch.fencedReported(frozen) })
	frozen.mu.Lock()
	fenced, errs := frozen.fenced, append([]string(nil), frozen.errs...)
	frozen.mu.Unlock()
	wait()
	ch.settle(orders, 2*time.Minute)
	ch.report(t, fmt.Sprintf("SIGSTOP of a relay between publish and mark, past its %s lease", outboxRelayLease), orders,
		fmt.Sprintf("%d messages published before the freeze; published again by the successor %s after it; resumed after "+
			"%s, the frozen relay was fenced off %s later (%d passes; first error: %s)", len(heldOrders),
			takeover.Round(time.Millisecond), frozenFor.Round(time.Millisecond), fencedAfter.Round(time.Millisecond),
			fenced, firstOr(errs, "none")))
	kill(t, frozen)
	stop(t, successor)
	stop(t, api)
}

// errCount is how many errors p reported so far; errsSince returns those after the first n.
func errCount(p *chainProc) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.errs)
}

func errsSince(p *chainProc, n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs[n:]...)
}

func (ch *outboxChain) fencedReported(p *chainProc) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fenced > 0
}

// firstOr returns the first of s, cut to a table cell's length, or def.
func firstOr(s []string, def string) string {
	const cell = 160
	switch {
	case len(s) == 0:
		return def
	case len(s[0]) > cell:
		return s[0][:cell] + "…"
	}
	return s[0]
}

// checkTotal: the consumer's effects went to an event-log counter; its total is the sum of the
// amounts of the acknowledged orders, each counted once.
func (ch *outboxChain) checkTotal(t *testing.T) {
	total := ch.total(t)
	ch.mu.Lock()
	var want int64
	for _, a := range ch.acked {
		want += a
	}
	acked := len(ch.acked)
	ch.mu.Unlock()
	t.Logf("crashtest: outbox: the counter's total is %d for %d acknowledged orders (expected %d)", total, acked, want)
	assert.Equal(t, want, total, "the event-log counter's total")
}

// consumerFrozen: a consumer on the fast path (kafkasub.WithFastPath: its partitions owned on the
// server) frozen with SIGSTOP with a poll in flight, past its group session timeout. The group
// gives its partitions to a successor, which is delivered the frozen consumer's uncommitted
// records again, waits out its ownership lease and applies them. Resumed (SIGCONT) and told to
// go on, the frozen consumer processes the poll it held: its lease has passed and its epoch was
// superseded, so the guard refuses the poll (nothing runs) and the group drops the member.
func (ch *outboxChain) consumerFrozen(t *testing.T) {
	orders := ch.orders("consumerfreeze", outboxOrders)
	stop(t, ch.consumer) // the chain's consumer gives the group to this scenario's two
	args := []string{"-group", "billing", "-counter", outboxCounter, "-fast-path", "-session-timeout", outboxSession.String()}
	frozen := ch.start(t, "consume", append(args, "-hold-after-records", fmt.Sprint(outboxOrders/4))...)
	api := ch.startAPI(t)
	relay := ch.start(t, "relay")
	wait := ch.placeAll(t, orders)
	ch.waitFor(t, "the consumer to hold a poll", 3*time.Minute, func() bool { return frozen.count("holding") > 0 })
	// Every partition's goroutine of the poll now waits at its first record, or finishes the
	// batch it had begun (its records written, their offsets not committed): let those finish,
	// so the freeze holds a poll in flight rather than a handler mid-run.
	time.Sleep(2 * time.Second)
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGSTOP))
	frozenAt := time.Now()
	appliedBefore := frozen.count("applied")
	successor := ch.start(t, "consume", args...)
	ch.consumer = successor // the chain's consumer from here on
	wait()
	ch.settle(orders, 3*time.Minute)
	takeover := time.Since(frozenAt)
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGCONT))
	_, err := io.WriteString(frozen.stdin, "go\n")
	require.NoError(t, err)
	// Give the resumed consumer time to process its poll, if it could, and to learn it was dropped.
	time.Sleep(2 * outboxSession)
	appliedAfter := frozen.count("applied") - appliedBefore
	ch.report(t, fmt.Sprintf("SIGSTOP of a fast-path consumer with a poll in flight, past its %s session timeout", outboxSession), orders,
		fmt.Sprintf("frozen after %d records and %d effects; its successor applied every order %s after the freeze; "+
			"resumed, the frozen consumer applied %d more (its poll refused: lease passed, epoch superseded)",
			outboxOrders/4, appliedBefore, takeover.Round(time.Millisecond), appliedAfter))
	assert.Zero(t, appliedAfter, "the resumed consumer ran handlers of a partition it no longer owns")
	kill(t, frozen)
	stop(t, relay)
	stop(t, api)
}

// consumerKilledCatchingUp: the consumer is stopped while two scenarios' worth of orders are
// placed and published, so it starts behind its topic with every record past the event log's
// window (the late path, in batches); it is killed with SIGKILL once a quarter of the backlog
// took effect, inside a poll's handler (effects recorded, claims not ended), and a successor
// drains the rest. A handler whose claim was written but not ended when the consumer died runs
// again in the successor (its claim's lease passed), so handler runs are reported, not
// asserted: the effect is the counter's, and its total must grow by exactly this scenario's
// amounts.
func (ch *outboxChain) consumerKilledCatchingUp(t *testing.T) {
	const backlogAge = 8 * time.Second // past examples/outbox's effectGrace, a window and the settle time
	orders := ch.orders("catchupkill", 2*outboxOrders)
	stop(t, ch.consumer) // or waits for it, if the end of the scenario that started it killed it
	before := ch.total(t)
	api := ch.startAPI(t)
	relay := ch.start(t, "relay")
	wait := ch.placeAll(t, orders)
	wait()
	placed := time.Now()
	ch.waitFor(t, "the backlog published", 3*time.Minute, func() bool { return ch.tally(orders).published == len(orders) })
	// Every order's window closed past the consumer's grace before it starts (the event log
	// of examples/outbox: a 1 s window, a 5 s grace, a 1 s settle time), so all of the backlog
	// takes the late path, as a backlog left by a deploy or a broker's outage does.
	ch.waitFor(t, "the backlog to age past the event log's grace", time.Minute, func() bool { return time.Since(placed) > backlogAge })
	args := chainConsumerArgs
	// The consumer holds inside its poll's handler once a quarter of the backlog took effect,
	// so the kill lands mid-catch-up however fast the machine drains: the batches in flight
	// have their claims written and their effects recorded, and neither their claims ended nor
	// their offsets committed.
	catching := ch.start(t, "consume", append(args, "-hold-after-applied", fmt.Sprint(len(orders)/4))...)
	ch.waitFor(t, "the consumer to hold a quarter into the backlog", 3*time.Minute, func() bool { return catching.count("holding") > 0 })
	kill(t, catching)
	atKill := ch.tally(orders).applied
	ch.consumer = ch.start(t, "consume", args...)
	took := ch.settle(orders, 3*time.Minute)
	tl := ch.tally(orders)
	var want int64
	for _, o := range orders {
		want += o.Amount
	}
	grew := ch.total(t) - before
	t.Logf("crashtest: outbox, SIGKILL of a consumer catching up: %d of %d orders applied at the kill; the successor "+
		"applied the rest %s later; %d handlers ran again after the kill; the counter grew by %d (expected %d)",
		atKill, len(orders), took.Round(time.Millisecond), tl.twice, grew, want)
	results.add(t, result{
		Scenario:     "outbox chain: SIGKILL of a consumer catching up a backlog (late path)",
		Operations:   len(orders),
		Acknowledged: tl.acked,
		Lost:         tl.lost,
		Twice:        int(max(grew-want, 0)),
		Resolution: fmt.Sprintf("%d of %d applied at the kill; a successor drained the rest in %s; %d handlers ran "+
			"again, the counter grew by exactly the backlog's amounts", atKill, len(orders), took.Round(time.Millisecond), tl.twice),
	})
	assert.Equal(t, len(orders), tl.acked, "orders acknowledged in the end")
	assert.Zero(t, tl.lost, "acknowledged orders without an effect")
	assert.Equal(t, want, grew, "the counter counts each order of the backlog once")
	stop(t, relay)
	stop(t, api)
}

// total reads the consumer's counter.
func (ch *outboxChain) total(t *testing.T) int64 {
	t.Helper()
	logc, err := events.NewLog(ch.node.session(t), events.WithKeyspace(keyspace)) // the consumer's settings
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	total, err := logc.Total(ctx, outboxCounter)
	require.NoError(t, err)
	return total
}

// clocksOff: the order service runs with its clocks (its store's and its outbox's, set through
// the library's clock options for the whole process) 3 minutes behind the host's, and its relay
// 2 minutes ahead: 5 minutes apart, where buckets are a minute wide and close a minute after
// their end. Each measures its offset against the node and buckets by the cluster's time, so
// every acknowledged order is published and takes effect once; a Stage refused because the
// offset was not known well enough (outbox.ErrClockOffset) fails its request, which the client
// retries, and is counted in the service's report. Judged by their own clocks
// (outbox.WithoutClockCheck in both processes), the service's intents went into buckets its
// relay had swept: in one run 49 of the 200 acknowledged orders were never published.
func (ch *outboxChain) clocksOff(t *testing.T) {
	ch.consuming(t)
	orders := ch.orders("clocksoff", outboxOrders)
	relay := ch.start(t, "relay", "-clock-offset", "2m")
	api := ch.startAPI(t, "-clock-offset", "-3m")
	wait := ch.placeAll(t, orders)
	wait()
	took := ch.settle(orders, 2*time.Minute)
	stop(t, api) // its last line is its stager's reading
	api.mu.Lock()
	c := api.clock
	api.mu.Unlock()
	require.Equal(t, "clock", c.Event, "the service reported its stager's clock")
	offset, err := time.ParseDuration(c.Offset)
	require.NoError(t, err)
	ch.report(t, "the order service's clocks 3 minutes behind the host's, its relay's 2 minutes ahead", orders,
		fmt.Sprintf("the service measured its offset at %s (±%s) and bucketed by the cluster's time; %d Stages refused "+
			"(outbox.ErrClockOffset), each retried by its client; every order took effect %s after the last acknowledgement",
			offset.Round(time.Millisecond), c.Bound, c.Refused, took.Round(time.Millisecond)))
	assert.InDelta(t, float64(3*time.Minute), float64(offset), float64(time.Second), "the stager's measured offset")
	stop(t, relay)
}
