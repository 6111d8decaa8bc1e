package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/schema"
)

// UsageError is a bad command line. The command prints it as one line and exits with code 2.
type UsageError struct{ msg string }

// Error describes the error.
func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// rawFlags holds the flag values that need parsing after the flag package is done.
type rawFlags struct {
	hosts, dcRF, consistency, serial, concurrency, ops string
}

func newFlagSet(c *Config, raw *rawFlags, getenv func(string) string, catalog []Spec) *flag.FlagSet {
	short, long := presetFor(false), presetFor(true)
	fs := flag.NewFlagSet("lwtbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned as one line; -h prints Usage on stdout
	defaultHosts := strings.TrimSpace(getenv("CASSANDRA_HOSTS"))
	if defaultHosts == "" {
		defaultHosts = "127.0.0.1:9042"
	}
	fs.StringVar(&raw.hosts, "hosts", defaultHosts, "comma-separated host[:port] contact points; $CASSANDRA_HOSTS sets the default")
	fs.StringVar(&c.Keyspace, "keyspace", "", "keyspace to create the schema in (default: a unique lwtbench_<time>_<random>)")
	fs.BoolVar(&c.KeepKeyspace, "keep-keyspace", false, "keep the keyspace after the run instead of dropping it")
	fs.IntVar(&c.RF, "rf", 1, "replication factor (SimpleStrategy) of the keyspace")
	fs.StringVar(&raw.dcRF, "dc-rf", "", "NetworkTopologyStrategy replication instead of -rf, e.g. dc1:3,dc2:3")
	fs.StringVar(&c.LocalDC, "local-dc", "", "prefer this datacenter's nodes (use with LOCAL_QUORUM and LOCAL_SERIAL)")
	fs.StringVar(&raw.consistency, "consistency", "QUORUM", "consistency of plain writes and of the LWT commit (QUORUM, LOCAL_QUORUM, ONE, ...)")
	fs.StringVar(&raw.serial, "serial", "SERIAL", "consistency of the LWT Paxos phase: SERIAL or LOCAL_SERIAL")
	fs.DurationVar(&c.Warmup, "warmup", short.warmup, "warm-up before measuring, discarded (0 for none)")
	fs.DurationVar(&c.Duration, "duration", short.duration, "length of each measured phase")
	fs.StringVar(&raw.concurrency, "concurrency", short.concurrency, "closed-loop concurrency levels to sweep, comma-separated (empty: no sweep)")
	fs.Float64Var(&c.Rate, "rate", 200, "open-loop rate in requests per second, all operations together (0: no open-loop phase)")
	fs.IntVar(&c.OpenWorkers, "open-workers", 32, "workers sharing the open-loop schedule")
	fs.IntVar(&c.BatchSize, "batch-size", 100, "messages per request of guard-batch: one poll of one broker partition")
	fs.StringVar(&raw.ops, "ops", strings.Join(OpNames(catalog), ","), "operations to run, comma-separated")
	fs.StringVar(&c.OutDir, "out", "out", "directory for the JSON result and the PNG chart")
	fs.BoolVar(&c.Long, "long", false, fmt.Sprintf("real-use preset (about 10 min): -warmup %s -duration %s -concurrency %s, unless set",
		long.warmup, long.duration, long.concurrency))
	fs.BoolVar(&c.Quiet, "quiet", false, "no progress display")
	fs.BoolVar(&c.Verbose, "v", false, "show the driver's log on stderr")
	fs.DurationVar(&c.RequestTimeout, "timeout", 5*time.Second, "client-side timeout of one request")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", 5*time.Second, "timeout to reach the cluster")
	fs.BoolVar(&c.DriverDefaults, "driver-defaults", false, "run with gocql's default session (200µs write coalescing, round-robin) instead of the recommended one (cqlsession)")
	fs.BoolVar(&c.HotCounter, "hot-counter", false, "instead of the operations: one event-log counter written as fast as -writers can for -duration while a reader reads its total, then -counters counters at once")
	fs.IntVar(&c.Writers, "writers", 64, "-hot-counter: goroutines recording events (with -hot-rate, enough to hold the rate: rate x a Record's mean latency)")
	fs.IntVar(&c.Counters, "counters", 10000, "-hot-counter: counters of the second case")
	fs.Float64Var(&c.HotRate, "hot-rate", 0, "-hot-counter: events per second, all writers together, evenly spaced (0: as fast as -writers can)")
	fs.BoolVar(&c.Peers, "peers", false, "instead of the operations: the toolkit's beside Postgres's and Redis's (-postgres, -redis-always, "+
		"-redis-everysec), one server at a time per concurrency level (default -concurrency "+peersConcurrency+" -rate 0)")
	fs.StringVar(&c.PostgresURL, "postgres", getenv("PEERS_POSTGRES_URL"), "-peers: Postgres URL; $PEERS_POSTGRES_URL sets the default")
	fs.StringVar(&c.RedisAlways, "redis-always", getenv("PEERS_REDIS_ALWAYS_ADDR"), "-peers: host:port of a Redis with appendfsync always; $PEERS_REDIS_ALWAYS_ADDR sets the default")
	fs.StringVar(&c.RedisEverysec, "redis-everysec", getenv("PEERS_REDIS_EVERYSEC_ADDR"), "-peers: host:port of a Redis with appendfsync everysec; $PEERS_REDIS_EVERYSEC_ADDR sets the default")
	return fs
}

// peersConcurrency is the sweep of a -peers run: one client, a service's pool, a busy fleet.
const peersConcurrency = "1,16,64"

// ParseFlags parses the command line. getenv supplies CASSANDRA_HOSTS. A bad command line is a
// *UsageError; -h and -help return flag.ErrHelp.
func ParseFlags(args []string, getenv func(string) string, catalog []Spec) (Config, error) {
	var (
		c   Config
		raw rawFlags
	)
	fs := newFlagSet(&c, &raw, getenv, catalog)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, &UsageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return c, usageErrorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.Long {
		long := presetFor(true)
		if !set["warmup"] {
			c.Warmup = long.warmup
		}
		if !set["duration"] {
			c.Duration = long.duration
		}
		if !set["concurrency"] {
			raw.concurrency = long.concurrency
		}
	}
	if set["rf"] && raw.dcRF != "" {
		return c, usageErrorf("-rf and -dc-rf exclude each other")
	}
	if c.Peers {
		if c.HotCounter {
			return c, usageErrorf("-peers and -hot-counter exclude each other")
		}
		catalog = PeersCatalog()
		if !set["ops"] {
			raw.ops = strings.Join(OpNames(catalog), ",")
		}
		if !set["concurrency"] && !c.Long {
			raw.concurrency = peersConcurrency
		}
		if !set["rate"] {
			c.Rate = 0
		}
	}
	if err := c.parseRaw(raw, catalog); err != nil {
		return c, err
	}
	return c, c.checkPeerServers(catalog)
}

func (c *Config) parseRaw(raw rawFlags, catalog []Spec) error {
	var err error
	if c.Hosts, err = parseList(raw.hosts, "-hosts"); err != nil {
		return err
	}
	if c.Keyspace != "" {
		if err := schema.ValidateIdentifier(c.Keyspace); err != nil {
			return usageErrorf("-keyspace: %v", err)
		}
	}
	if err := inRange("-rf", c.RF, 1, 32); err != nil {
		return err
	}
	if c.DatacenterRF, err = parseDatacenterRF(raw.dcRF); err != nil {
		return err
	}
	if c.Consistency, err = gocql.ParseConsistencyWrapper(strings.ToUpper(raw.consistency)); err != nil {
		return usageErrorf("-consistency %q: want ONE, QUORUM, LOCAL_QUORUM, ALL, ...", raw.consistency)
	}
	switch strings.ToUpper(raw.serial) {
	case "SERIAL":
		c.Serial = gocql.Serial
	case "LOCAL_SERIAL":
		c.Serial = gocql.LocalSerial
	default:
		return usageErrorf("-serial %q: want SERIAL or LOCAL_SERIAL", raw.serial)
	}
	if c.Concurrency, err = parseLevels(raw.concurrency); err != nil {
		return err
	}
	if c.Ops, err = parseOps(raw.ops, catalog); err != nil {
		return err
	}
	if err := c.validateNumbers(); err != nil {
		return err
	}
	// The session's settings are checked where the session is built, once for every program.
	if _, err := cqlsession.NewCluster(c.Hosts, c.sessionOptions()...); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// validateNumbers refuses a number out of its range: the first, in the order of the flags' help.
func (c *Config) validateNumbers() error {
	if c.Warmup < 0 {
		return usageErrorf("-warmup %s: must not be negative", c.Warmup)
	}
	var openWorkers error // only an open loop has open workers
	if c.Rate > 0 {
		openWorkers = inRange("-open-workers", c.OpenWorkers, 1, maxWorkers)
	}
	for _, err := range []error{
		positive("-duration", c.Duration),
		inRange("-batch-size", c.BatchSize, 1, maxBatchSize),
		inRange("-rate", c.Rate, 0, 1_000_000),
		openWorkers,
		positive("-timeout", c.RequestTimeout),
		positive("-connect-timeout", c.ConnectTimeout),
		inRange("-writers", c.Writers, 1, maxWorkers),
		inRange("-counters", c.Counters, 1, 1_000_000),
		inRange("-hot-rate", c.HotRate, 0, 1_000_000),
	} {
		if err != nil {
			return err
		}
	}
	if len(c.Concurrency) == 0 && c.Rate == 0 {
		return usageErrorf("nothing to measure: -concurrency is empty and -rate is 0")
	}
	return nil
}

// inRange returns the usage error of flag when its value v is outside lo..hi, else nil.
func inRange[T int | float64](flag string, v T, lo, hi int) error {
	if v < T(lo) || v > T(hi) {
		return usageErrorf("%s %v: want %d..%d", flag, v, lo, hi)
	}
	return nil
}

// positive returns the usage error of flag when its duration d is not positive, else nil.
func positive(flag string, d time.Duration) error {
	if d <= 0 {
		return usageErrorf("%s %s: must be positive", flag, d)
	}
	return nil
}

func parseList(s, name string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	if len(out) == 0 {
		return nil, usageErrorf("%s: empty", name)
	}
	return out, nil
}

func parseLevels(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var levels []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > maxWorkers {
			return nil, usageErrorf("-concurrency %q: want comma-separated integers in 1..%d", s, maxWorkers)
		}
		levels = append(levels, n)
	}
	return levels, nil
}

func parseDatacenterRF(s string) (map[string]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		dc, rf, ok := strings.Cut(strings.TrimSpace(part), ":")
		n, err := strconv.Atoi(rf)
		if !ok || dc == "" || err != nil || n < 1 || n > 32 {
			return nil, usageErrorf("-dc-rf %q: want dc:rf pairs such as dc1:3,dc2:3", s)
		}
		out[dc] = n
	}
	return out, nil
}

func parseOps(s string, catalog []Spec) ([]string, error) {
	known := OpNames(catalog)
	names, err := parseList(s, "-ops")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, usageErrorf("-ops: unknown operation %q (known: %s)", n, strings.Join(known, ", "))
		}
		if seen[n] {
			return nil, usageErrorf("-ops: %q given twice", n)
		}
		seen[n] = true
	}
	return names, nil
}

// Usage writes the command's help.
func Usage(w io.Writer, getenv func(string) string, catalog []Spec) {
	var (
		c   Config
		raw rawFlags
	)
	fs := newFlagSet(&c, &raw, getenv, catalog)
	fmt.Fprintln(w, "Usage: lwtbench [flags]")
	fmt.Fprintln(w, "\nMeasures what exactly-once costs on a Cassandra cluster: latency and throughput of")
	fmt.Fprintln(w, "conditional writes, the exactly-once executor and the consumer guard relative to a")
	fmt.Fprintln(w, "plain INSERT, interleaved in one run.")
	fmt.Fprintln(w, "\nOperations:")
	width := 0
	for _, s := range append(catalog, PeersCatalog()...) {
		width = max(width, len(s.Name))
	}
	for _, s := range catalog {
		fmt.Fprintf(w, "  %-*s  %s\n", width, s.Name, s.Description)
	}
	fmt.Fprintln(w, "\nOperations of -peers (the toolkit's above, then other stores' on servers of their own):")
	for _, s := range PeersCatalog() {
		if s.Server != "" {
			fmt.Fprintf(w, "  %-*s  %s\n", width, s.Name, s.Description)
		}
	}
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
}
