package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/outbox"
)

// clientConfig is one client process: its workers run operations on the hot keys until the
// process is told to stop (SIGTERM) or killed.
type clientConfig struct {
	hosts     string
	keyspace  string
	namespace string // the run's: every run of a `histories run` shares one keyspace
	name      string // p<index>.<incarnation>
	workers   int
	seed      uint64
	history   string
	skewFile  string        // holds the clock skew the nemesis set, in ns: read every 100 ms
	retryFile string        // names a paused client's keys for the others to retry (retry.go)
	runStart  int64         // the run's start on the monotonic clock: the key windows count from it
	runWall   int64         // the run's start on the machine's wall clock, Unix ns: the messages' times count from it
	window    int           // hot keys at a time
	period    time.Duration // the window moves on by one key every period
	lease     time.Duration
	opTimeout time.Duration
	// skewAll gives the event log, the guard and the outbox (stager and relay) the skewed clock
	// too, not only the executor: the whole process's clock is off, as on a host whose NTP broke.
	// It was off by default while the event log did not measure its offset (a process whose
	// clock jumped minutes stopped every total from counting: docs/verification.md).
	skewAll bool
	// mixedPaths delivers every message through Process and ProcessBatch both, which the guard
	// does not support on one message (docs/verification.md): to show what the checker finds.
	mixedPaths bool
}

func clientFlags(args []string) (clientConfig, error) {
	var c clientConfig
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.StringVar(&c.hosts, "hosts", "", "CQL contact points, comma-separated")
	fs.StringVar(&c.keyspace, "keyspace", "", "keyspace")
	fs.StringVar(&c.namespace, "namespace", "h", "the records' namespace, and the effect rows' prefix")
	fs.StringVar(&c.name, "name", "p0.0", "process name")
	fs.IntVar(&c.workers, "workers", 4, "workers (one operation at a time each)")
	fs.Uint64Var(&c.seed, "seed", 1, "workload seed")
	fs.StringVar(&c.history, "history", "", "history file")
	fs.StringVar(&c.skewFile, "skew-file", "", "file holding the clock skew in ns")
	fs.StringVar(&c.retryFile, "retry-file", "", "file naming a paused client's keys to retry")
	fs.Int64Var(&c.runStart, "run-start", 0, "run start, monotonic ns")
	fs.Int64Var(&c.runWall, "run-wall", 0, "run start, Unix ns of the machine's clock")
	fs.IntVar(&c.window, "window", 4, "new keys at a time")
	fs.DurationVar(&c.period, "period", defaultPeriod, "the hot window moves by one key every period")
	fs.DurationVar(&c.lease, "lease", 2*time.Second, "the executor's lease")
	fs.DurationVar(&c.opTimeout, "op-timeout", 5*time.Second, "each operation's deadline")
	fs.BoolVar(&c.skewAll, "skew-all", true, "the event log, the guard and the outbox read the skewed clock too")
	fs.BoolVar(&c.mixedPaths, "mixed-paths", false, "deliver each message through Process and ProcessBatch both")
	return c, fs.Parse(args)
}

// defaultPeriod is how often the hot window moves on by a key; the run's final deliveries place
// the messages by it too.
const defaultPeriod = 100 * time.Millisecond

// skewedClock is the process's clock as the library sees it: the machine's, plus the skew the
// nemesis set. A Go program reads time through the vDSO, which libfaketime does not reach, so a
// client's clock is skewed through the library's clock options instead.
type skewedClock struct{ skew atomic.Int64 }

func (c *skewedClock) now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

// set sets the skew from the skew file's contents b.
func (c *skewedClock) set(b []byte) {
	if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
		c.skew.Store(ns)
	}
}

// client is what the workers share.
type client struct {
	cfg      clientConfig
	session  *gocql.Session
	store    *lwt.Store
	box      *outbox.Outbox
	log      *events.Log
	guard    *guard.Guard
	logClock func() time.Time // the event log's, the guard's and the outbox's clock; the events' times
	rec      *recorder
	retries  *retries
}

func runClient(args []string) error {
	cfg, err := clientFlags(args)
	if err != nil {
		return err
	}
	stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	rec, err := newRecorder(cfg.history)
	if err != nil {
		return err
	}
	defer rec.close()
	clock := &skewedClock{}
	if cfg.skewFile != "" {
		go followFile(stop, cfg.skewFile, clock.set)
	}
	cl, err := connect(cfg.hosts, cfg.keyspace, 3*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	c, err := newClient(cfg, cl, clock, rec)
	if err != nil {
		return err
	}
	if cfg.retryFile != "" {
		go followFile(stop, cfg.retryFile, c.retries.set)
	}
	rollups, stopRollups := context.WithCancel(context.Background())
	defer stopRollups()
	go func() { _ = c.log.RunRollups(rollups, 500*time.Millisecond, nil) }()
	// The process's relay: killed, paused and skewed with it.
	stopRelay, err := startRelay(rollups, cl, cfg.keyspace, cfg.namespace, c.logClock, rec, cfg.name+"/relay", cfg.seed)
	if err != nil {
		return err
	}
	defer stopRelay()
	defer stopRollups()
	var wg sync.WaitGroup
	for w := range cfg.workers {
		wg.Go(func() { c.work(stop, w) })
	}
	wg.Wait()
	return nil
}

// newClient builds what the workers share: the executor on the skewed clock, and the event log,
// the outbox and the guard on it too unless the run skews the executor only.
func newClient(cfg clientConfig, cl *gocql.Session, clock *skewedClock, rec *recorder) (*client, error) {
	// The records carry the outbox's completion column: each run stages one event.
	store, err := lwt.NewStore(cl, outbox.Table(cfg.keyspace), lwt.WithLease(cfg.lease), lwt.WithClock(clock.now),
		lwt.WithCommitTimeout(cfg.opTimeout))
	if err != nil {
		return nil, err
	}
	logClock := time.Now
	if cfg.skewAll {
		logClock = clock.now
	}
	log, err := events.NewLog(cl, events.WithKeyspace(cfg.keyspace), events.WithConsistency(gocql.Quorum),
		events.WithSerialConsistency(gocql.Serial), events.WithClock(logClock))
	if err != nil {
		return nil, err
	}
	box, err := outbox.New(cl, stagerOptions(cfg.keyspace, logClock)...)
	if err != nil {
		return nil, err
	}
	g, err := guard.New(cl, guard.WithKeyspace(cfg.keyspace), guard.WithLease(cfg.lease), guard.WithClock(logClock),
		guard.WithConsistency(gocql.Quorum), guard.WithSerialConsistency(gocql.Serial))
	if err != nil {
		return nil, err
	}
	return &client{cfg: cfg, session: cl, store: store, box: box, log: log, guard: g, logClock: logClock, rec: rec,
		retries: newRetries(cfg.name)}, nil
}

// connect opens a session with the library's recommended configuration, QUORUM and SERIAL.
// The clients' timeout is short, so a paused or cut-off node gives unknown outcomes soon.
func connect(hosts, keyspace string, timeout time.Duration) (*gocql.Session, error) {
	cfg, err := cqlsession.NewCluster(strings.Split(hosts, ","), cqlsession.WithTimeout(timeout),
		cqlsession.WithConnectTimeout(3*time.Second), cqlsession.WithConsistency(gocql.Quorum),
		cqlsession.WithSerialConsistency(gocql.Serial))
	if err != nil {
		return nil, err
	}
	cfg.Keyspace = keyspace
	cfg.ReconnectInterval = time.Second
	cfg.Events.DisableSchemaEvents = true
	return cfg.CreateSession()
}

// work runs operations one at a time until stop ends; the one in flight then finishes.
func (c *client) work(stop context.Context, w int) {
	proc := fmt.Sprintf("%s/w%d", c.cfg.name, w)
	rnd := rand.New(rand.NewPCG(c.cfg.seed, uint64(w)))
	var past []sent
	for seq := 0; stop.Err() == nil; seq++ {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.opTimeout)
		arg := fmt.Sprintf("%s#%d", proc, seq)
		if key := c.retries.take(); key != "" {
			c.retries.finish(key, c.exec(ctx, proc, key, arg))
			cancel()
			continue
		}
		switch op := rnd.IntN(11); {
		case op < 2:
			c.read(ctx, proc, c.hotKey(rnd))
		case op < 4:
			c.record(ctx, rnd, proc, seq, &past)
		case op < 5:
			c.total(ctx, rnd, proc)
		case op < 6:
			c.deliver(ctx, rnd, proc, seq)
		default:
			c.exec(ctx, proc, c.hotKey(rnd), arg)
		}
		cancel()
	}
}

// hotKey picks a key: three times in five one of the window's, which moves on by a key every
// period (new keys, claimed by racing workers), else one of the recent past's (up to
// recentKeys periods back: mostly replays, and the takeovers of claims whose worker was
// paused or killed).
func (c *client) hotKey(rnd *rand.Rand) string { return fmt.Sprintf("k%05d", c.hotIndex(rnd)) }

// hotIndex is hotKey's number: the window's keys, numbered by the periods since the run began.
func (c *client) hotIndex(rnd *rand.Rand) int64 {
	base := (monotonic() - c.cfg.runStart) / int64(c.cfg.period)
	if rnd.IntN(5) < 3 {
		return base + int64(rnd.IntN(c.cfg.window))
	}
	return max(0, base-int64(rnd.IntN(recentKeys)))
}

// recentKeys is how far back, in periods, a worker reaches for a recent key: 10 s, longer
// than a client pause, so a paused worker's claim is met, and taken over, once its lease ended.
const recentKeys = 100

// exec runs ExecuteOnce on key; the function writes the fenced effect row, recorded as an
// "effect" line, and returns arg. It reports whether the call returned a result.
func (c *client) exec(ctx context.Context, proc, key, arg string) bool {
	c.rec.add(Entry{Type: "invoke", Proc: proc, Op: "exec", Key: key, Arg: arg})
	res, err := c.store.ExecuteOnce(ctx, lwt.IdempotencyKey(c.cfg.namespace, key), func(ctx context.Context) ([]byte, error) {
		claim, _ := lwt.ClaimFromContext(ctx)
		if err := writeEffect(ctx, c.session, c.cfg.namespace+"/"+key, claim.Fence, arg); err != nil {
			return nil, err
		}
		c.rec.add(Entry{Type: "effect", Proc: proc, Op: "effect", Key: key, Arg: arg, Fence: claim.Fence})
		// Committed with the result, or not at all; the relays publish it.
		if err := c.box.Stage(ctx, outbox.Event{Type: "histories.run", Key: key, Payload: []byte(arg)}); err != nil {
			return nil, err
		}
		// The function's own work after its effect (a call to another service): it does not
		// watch ctx, as most code does not. A pause of the process most often lands here.
		time.Sleep(fnWork)
		return []byte(arg), nil
	}, lwt.WithWait())
	e := Entry{Proc: proc, Op: "exec", Key: key, Arg: arg, Value: string(res.Value), Replay: res.Replay, Fence: res.Fence}
	e.Type, e.Error, e.Msg = classify(err)
	c.rec.add(e)
	return err == nil
}

// read reads key's record at SERIAL: its result if COMPLETED, "" otherwise.
func (c *client) read(ctx context.Context, proc, key string) {
	c.rec.add(Entry{Type: "invoke", Proc: proc, Op: "read", Key: key})
	rec, err := c.store.Get(ctx, lwt.IdempotencyKey(c.cfg.namespace, key))
	e := Entry{Proc: proc, Op: "read", Key: key}
	if errors.Is(err, lwt.ErrNotFound) {
		err = nil
	} else if err == nil && rec.Status == lwt.StatusCompleted {
		e.Value, e.Fence = string(rec.Result), rec.Fence
	}
	e.Type, e.Error, e.Msg = classify(err)
	if e.Type == "info" {
		e.Type = "fail" // a read changes nothing: unknown or not, it observed nothing
	}
	c.rec.add(e)
}

// fnWork is how long the function works after writing its effect.
const fnWork = 800 * time.Millisecond

// errFenced: the effect row holds a fence at least the claim's: a later claim wrote it.
var errFenced = errors.New("histories: effect fenced off by a later claim")

// writeEffect is the function's external effect, fenced as ExecuteOnce's documentation asks:
// the effects row of key keeps the highest fence that wrote it and refuses lower ones.
func writeEffect(ctx context.Context, s *gocql.Session, key string, fence int64, value string) error {
	applied, row, err := cas.InsertIfNotExists(ctx, s.Query("INSERT INTO effects (key, fence, value) VALUES (?, ?, ?) IF NOT EXISTS",
		key, fence, value), gocql.Serial)
	if err != nil || applied {
		return err
	}
	if have, _ := row["fence"].(int64); have >= fence {
		return errFenced
	}
	applied, _, err = cas.UpdateIf(ctx, s.Query("UPDATE effects SET fence = ?, value = ? WHERE key = ? IF fence < ?",
		fence, value, key, fence), gocql.Serial)
	if err == nil && !applied {
		return errFenced
	}
	return err
}

// classify turns an operation's error into its history type and class. Only errors that prove
// nothing was stored are "fail"; every other one is "info" (unknown), which the checker allows
// either way.
func classify(err error) (typ, class, msg string) {
	switch {
	case err == nil:
		return "ok", "", ""
	case errors.Is(err, lwt.ErrOutcomeUnknown):
		return "info", "unknown", err.Error()
	case errors.Is(err, lwt.ErrInProgress):
		return "fail", "in-progress", err.Error()
	case errors.Is(err, lwt.ErrLeaseLost):
		return "fail", "lease-lost", err.Error()
	case errors.Is(err, errFenced):
		return "fail", "fenced", err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "fail", "timeout", err.Error()
	}
	return "info", "error", err.Error()
}
