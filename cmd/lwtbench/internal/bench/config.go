package bench

import (
	"slices"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

// Config is one benchmark run's settings, from the command line.
type Config struct {
	Hosts          []string
	Keyspace       string // empty: a unique lwtbench_<time>_<random> name
	KeepKeyspace   bool
	RF             int            // SimpleStrategy replication factor, when DatacenterRF is empty
	DatacenterRF   map[string]int // NetworkTopologyStrategy replication, per datacenter
	LocalDC        string         // route to this datacenter's nodes first
	Consistency    gocql.Consistency
	Serial         gocql.SerialConsistency
	Warmup         time.Duration
	Duration       time.Duration // of each measured phase
	Concurrency    []int         // closed-loop sweep levels
	Rate           float64       // open-loop requests per second, all operations; 0: no open loop
	BatchSize      int           // messages per request of the guard-batch operation
	OpenWorkers    int
	Ops            []string
	OutDir         string
	Long           bool
	Quiet          bool
	Verbose        bool
	RequestTimeout time.Duration
	ConnectTimeout time.Duration
	DriverDefaults bool // gocql's own session settings instead of cqlsession's recommended ones
	// HotCounter runs the event-log counter benchmark (hotcounter.go) instead of the operations.
	HotCounter bool
	Writers    int     // its writing goroutines
	Counters   int     // counters of its second case
	HotRate    float64 // its events per second, all writers together; 0: as fast as they can
	// Peers runs PeersCatalog (peers.go): the toolkit's operations beside Postgres's and
	// Redis's, one server at a time, against these servers.
	Peers         bool
	PostgresURL   string
	RedisAlways   string // host:port of a Redis with appendfsync always
	RedisEverysec string // host:port of a Redis with appendfsync everysec
}

// preset is the part of Config that -long changes.
type preset struct {
	warmup, duration time.Duration
	concurrency      string
}

// presetFor returns the default run (about a minute) or, with long, the real-use one (about
// ten minutes: longer phases shrink the p99.9's noise, and the sweep reaches 64).
func presetFor(long bool) preset {
	if long {
		return preset{warmup: 30 * time.Second, duration: 100 * time.Second, concurrency: "1,4,16,64"}
	}
	return preset{warmup: 5 * time.Second, duration: 10 * time.Second, concurrency: "1,4,16"}
}

// maxWorkers bounds every phase's worker count: each worker holds a histogram per operation.
const maxWorkers = 1024

// replication returns the keyspace replication the flags ask for.
func (c Config) replication() schema.Replication {
	if len(c.DatacenterRF) > 0 {
		return schema.NetworkTopologyStrategy(c.DatacenterRF)
	}
	return schema.SimpleStrategy(c.RF)
}

// phases returns the run's phases in order: warm-up, the closed-loop sweep, the open loop.
func (c Config) phases() []phasePlan {
	var out []phasePlan
	if c.Warmup > 0 {
		// The warm-up runs at the sweep's middle level: enough load to compile the hot paths of
		// client and node without saturating a small cluster before the first measurement.
		w := 4
		if len(c.Concurrency) > 0 {
			w = slices.Sorted(slices.Values(c.Concurrency))[len(c.Concurrency)/2]
		}
		out = append(out, phasePlan{mode: ModeWarmup, workers: w, duration: c.Warmup})
	}
	for _, n := range c.Concurrency {
		out = append(out, phasePlan{mode: ModeClosed, workers: n, duration: c.Duration})
	}
	if c.Rate > 0 {
		out = append(out, phasePlan{mode: ModeOpen, workers: c.OpenWorkers, rate: c.Rate, duration: c.Duration})
	}
	return out
}
