//go:build cluster

package clustertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
)

// work is one call of a workload on key: it runs the operation and, from inside the user
// function, calls ran once per run with the run's number, which the function puts in its value.
// via names the client that sent the call (its side of a partition).
type work func(ctx context.Context, key string, ran func() int) (value, via string, err error)

// driver sends a workload's calls at a fixed rate from a bounded number of workers, each key
// called by several callers, and keeps count of what every call saw: which phase it ran in,
// whether the user function ran during it, what it returned.
type driver struct {
	name    string
	work    work
	callers int // calls per key
	workers int
	rate    float64 // calls per second
	timeout time.Duration

	mu         sync.Mutex
	phase      string
	phases     []string
	byPhase    map[string]*phaseCount
	runs       map[string]int
	failedRuns map[string][]string // the error of every call in which the function ran and that failed
	values     map[string]map[string]int
	pending    map[string]bool // the key's last call failed: a client would retry it
	unknown    map[string][]bool
	unknownN   int
	examples   map[string]string // the first error of each class, in full
	calls      int
	acked      int
	avail      []string // the availability measured in the phases the test checked, for the REPORT row
}

type phaseCount struct {
	calls, ok int
	ranOK     int // successful calls that ran the function (the others replayed a stored result)
	errs      map[string]int
}

func newDriver(name string, w work) *driver {
	return &driver{name: name, work: w, callers: 3, workers: 8, rate: 40, timeout: 20 * time.Second,
		byPhase: map[string]*phaseCount{}, runs: map[string]int{}, failedRuns: map[string][]string{},
		values: map[string]map[string]int{}, examples: map[string]string{}, pending: map[string]bool{}, unknown: map[string][]bool{}}
}

// setPhase labels the calls that start from now on.
func (d *driver) setPhase(p string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.phase = p
}

// count returns the counts of one phase and client, made on first use; d.mu is held.
func (d *driver) count(label string) *phaseCount {
	if d.byPhase[label] == nil {
		d.byPhase[label] = &phaseCount{errs: map[string]int{}}
		d.phases = append(d.phases, label)
	}
	return d.byPhase[label]
}

// counted returns a copy of the counts of label (a phase and a client).
func (d *driver) counted(label string) phaseCount {
	d.mu.Lock()
	defer d.mu.Unlock()
	if pc := d.byPhase[label]; pc != nil {
		return *pc
	}
	return phaseCount{}
}

// start runs the workload until stop returns or maxCalls calls were sent; it returns a
// function that stops it and waits for every call in flight.
func (d *driver) start(maxCalls int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	keys := make(chan string)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(keys)
		tick := time.NewTicker(time.Duration(float64(time.Second) / d.rate))
		defer tick.Stop()
		sent := 0
		for block := 0; sent < maxCalls; block++ {
			for _, k := range d.block(block) {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				select {
				case <-ctx.Done():
					return
				case keys <- k:
				}
				if sent++; sent == maxCalls {
					return
				}
			}
		}
	}()
	for range d.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				d.call(k)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// block is the calls of 40 new keys, each key callers times, in random order: a key's callers
// come at different times and sometimes at once.
func (d *driver) block(b int) []string {
	var out []string
	for i := range 40 {
		for range d.callers {
			out = append(out, fmt.Sprintf("%s-%d", d.name, b*40+i))
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// call makes one call of key and records what it saw.
func (d *driver) call(key string) bool {
	d.mu.Lock()
	phase := d.phase
	d.calls++
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	ranHere := false
	value, via, err := d.work(ctx, key, func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		ranHere = true
		d.runs[key]++
		return d.runs[key]
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	pc := d.count(phase + ", via " + via)
	pc.calls++
	if err != nil {
		class := classify(err)
		pc.errs[class]++
		if _, seen := d.examples[class]; !seen {
			d.examples[class] = err.Error()
		}
		d.pending[key] = true
		if ranHere {
			d.failedRuns[key] = append(d.failedRuns[key], classify(err))
		}
		if errors.Is(err, lwt.ErrOutcomeUnknown) {
			d.unknownN++
			d.unknown[key] = append(d.unknown[key], ranHere)
		}
		return false
	}
	pc.ok++
	if ranHere {
		pc.ranOK++
	}
	d.acked++
	delete(d.pending, key)
	if d.values[key] == nil {
		d.values[key] = map[string]int{}
	}
	d.values[key][value]++
	return true
}

// settle calls every key whose last call failed until it succeeds, as a client retries after
// an error, for at most budget.
func (d *driver) settle(t *testing.T, budget time.Duration) {
	d.setPhase("retries after the fault")
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) {
		d.mu.Lock()
		var keys []string
		for k := range d.pending {
			keys = append(keys, k)
		}
		d.mu.Unlock()
		if len(keys) == 0 {
			return
		}
		sem := make(chan struct{}, d.workers)
		var wg sync.WaitGroup
		for _, k := range keys {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				d.call(k)
			}()
		}
		wg.Wait()
		time.Sleep(time.Second)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	t.Errorf("%s: %d keys still fail after %v of retries", d.name, len(d.pending), budget)
}

// tally is what a run of a workload comes to.
type tally struct {
	calls, acked, lost, extra         int
	rerunWithError, rerunWithoutError int
	rerunCauses                       map[string]int
	unknown, unknownStored            int
	unknownRanAgain, unknownUnclaimed int
	split                             []string // keys whose callers got different values
}

// tally counts re-runs and unknown outcomes. final gives each key's stored value, read after
// the fault; a key whose acknowledged value differs from it, or is gone, is lost.
func (d *driver) tally(final map[string]string) tally {
	d.mu.Lock()
	defer d.mu.Unlock()
	ta := tally{calls: d.calls, acked: d.acked, unknown: d.unknownN, rerunCauses: map[string]int{}}
	for k, runs := range d.runs {
		extra := runs - 1
		if extra <= 0 {
			continue
		}
		withErr := min(extra, len(d.failedRuns[k]))
		ta.rerunWithError += withErr
		ta.rerunWithoutError += extra - withErr
		for _, c := range d.failedRuns[k][:withErr] {
			ta.rerunCauses[c]++
		}
	}
	for k, vals := range d.values {
		if len(vals) > 1 {
			ta.split = append(ta.split, k)
		}
		for v := range vals {
			if final != nil && final[k] != v {
				ta.lost++
			}
		}
	}
	sort.Strings(ta.split)
	for k, us := range d.unknown {
		for _, ranHere := range us {
			switch {
			case !ranHere:
				ta.unknownUnclaimed++ // the claim's outcome was unknown; a retry ran the key
			case d.runs[k] == 1:
				ta.unknownStored++ // the run's result had been stored: the retry replayed it
			default:
				ta.unknownRanAgain++ // the run's claim was released or taken over: ran again
			}
		}
	}
	return ta
}

// report logs the phases and the tally, and returns the tally's row for the table in docs/clusters.md.
func (d *driver) report(t *testing.T, scenario string, ta tally) string {
	d.mu.Lock()
	for _, p := range d.phases {
		pc := d.byPhase[p]
		t.Logf("%s / %s: %d calls, %d succeeded, errors %v", scenario, p, pc.calls, pc.ok, pc.errs)
	}
	for class, e := range d.examples {
		t.Logf("%s: first %q error: %s", d.name, class, e)
	}
	avail := strings.Join(d.avail, "; ")
	d.mu.Unlock()
	if avail == "" {
		avail = "-"
	}
	row := fmt.Sprintf("| %s | %s | %d | %d | %d | %d (%s) | %d | %d: %d stored, %d ran again, %d claim unknown | %s |",
		scenario, d.name, ta.calls, ta.acked, ta.lost, ta.rerunWithError, causes(ta.rerunCauses),
		ta.rerunWithoutError, ta.unknown, ta.unknownStored, ta.unknownRanAgain, ta.unknownUnclaimed, avail)
	t.Log("REPORT " + row)
	return row
}

func causes(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var out []string
	for c, n := range m {
		out = append(out, fmt.Sprintf("%d %s", n, c))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// classify names an error by what a client can tell from it.
func classify(err error) string {
	var (
		unavailable *gocql.RequestErrUnavailable
		writeTO     *gocql.RequestErrWriteTimeout
		readTO      *gocql.RequestErrReadTimeout
	)
	switch {
	case errors.Is(err, lwt.ErrOutcomeUnknown):
		return "outcome unknown"
	case errors.Is(err, lwt.ErrInProgress):
		return "in progress"
	case errors.Is(err, lwt.ErrLeaseLost):
		return "lease lost"
	case errors.As(err, &unavailable):
		return "unavailable"
	case errors.As(err, &writeTO):
		return "write timeout"
	case errors.As(err, &readTO):
		return "read timeout"
	case errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrConnectionClosed), errors.Is(err, syscall.ECONNRESET):
		return "no connection"
	case errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, context.DeadlineExceeded):
		return "client timeout"
	}
	return "other: " + err.Error()
}
