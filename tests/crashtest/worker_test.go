//go:build faults

package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/syncbuf"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// workerEnv, when set, makes the test binary run as a worker process with the spec it holds
// (JSON) instead of running the tests: the tests start several OS processes this way.
const workerEnv = "CRASHTEST_WORKER"

// workerSpec tells a worker process what to do.
type workerSpec struct {
	// Mode is "share" (run every key through the executor), "fenced" (one key, a fenced
	// downstream write), "owner" (own a scope on the fast path and deliver every key; see
	// ownScope) or "reaper" (stop a node if the test binary dies; see startReaper).
	Mode       string
	Hosts      string
	Keys       []string
	Goroutines int           // share: concurrent calls in the process
	Seed       uint64        // share: the order in which this process visits the keys
	Lease      time.Duration // the store's lease
	Value      string        // fenced: what the function writes downstream and returns
	Hold       bool          // fenced: inside the function, wait for a line on stdin before writing
	Epoch      uint64        // owner: the epoch it owns the scope at
	Freeze     int           // owner: stop itself (SIGSTOP) before its Freeze-th record write is sent; 0: never
	Time       time.Time     // owner: the messages' time
	Script     string        // reaper: node.sh, run with the reaper's environment
	Repo       string        // reaper: where node.sh runs
}

// workerReport is one JSON line a worker prints: "running" from inside a fenced function,
// "done" at the end.
type workerReport struct {
	Event      string
	Ran        int // share: calls that ran the function; fenced: 1 if it ran
	Replayed   int
	Unknown    int // calls that returned lwt.ErrOutcomeUnknown and were retried
	InProgress int // calls that returned lwt.ErrInProgress and were retried
	Failed     int // share: runs of the function whose write returned an error (the key may run again)
	Transient  int // share: calls that returned a timeout or an unavailable node and were retried
	Waited     int // share: calls that met a live claim and waited for its result (lwt Stats.Conflicts)
	Errors     []string
	Fence      int64 // fenced: the claim's fencing token
	Downstream bool  // fenced: the fenced downstream write applied
	LeaseLost  bool  // fenced: ExecuteOnce returned lwt.ErrLeaseLost
	Err        string
	Key        string            // owner: the key whose record write it froze before ("frozen")
	Outcomes   map[string]string // owner: each key's last outcome (guard.Outcome, lower case)
	Errs       map[string]string // owner: each key's last error
}

func runWorker(raw string) int {
	var spec workerSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker: bad spec:", err)
		return 2
	}
	switch spec.Mode {
	case "reaper":
		return reap(spec)
	case "owner":
		return ownScope(spec)
	}
	s, err := connect(spec.Hosts, keyspace)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker:", err)
		return 1
	}
	defer s.Close()
	store, err := lwt.NewStore(s, lwt.IdempotencyKeys(keyspace), lwt.WithLease(spec.Lease))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker:", err)
		return 1
	}
	out := json.NewEncoder(os.Stdout)
	switch spec.Mode {
	case "share":
		err = out.Encode(shareKeys(s, store, spec))
	case "fenced":
		err = out.Encode(fencedRun(s, store, spec, out))
	default:
		err = fmt.Errorf("unknown mode %q", spec.Mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker:", err)
		return 1
	}
	return 0
}

// reap waits until its stdin closes. Unless the test wrote "stopped" first, the test binary
// died without running its cleanups (a -timeout panic, a signal), and reap stops the node.
func reap(spec workerSpec) int {
	said, _ := io.ReadAll(os.Stdin)
	if strings.TrimSpace(string(said)) == "stopped" {
		return 0
	}
	cmd := exec.Command(spec.Script, "down")
	cmd.Dir = spec.Repo
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, workerEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "crashtest reaper: node.sh down:", err)
		return 1
	}
	return 0
}

// shareKeys runs every key of the spec through the executor, in an order of its own, with
// spec.Goroutines calls at a time. The function records its run in crash_runs, one row per
// run, and returns the run's id.
func shareKeys(s *gocql.Session, store *lwt.Store, spec workerSpec) workerReport {
	keys := append([]string(nil), spec.Keys...)
	rand.New(rand.NewPCG(spec.Seed, 0)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var (
		next, ran, replayed, unknown, inProgress atomic.Int64
		failed, transient                        atomic.Int64
		mu                                       sync.Mutex
		errs                                     []string
		wg                                       sync.WaitGroup
	)
	pid := os.Getpid()
	fn := func(key string) func(context.Context) ([]byte, error) {
		return func(ctx context.Context) ([]byte, error) {
			run, err := gocql.RandomUUID()
			if err != nil {
				return nil, err
			}
			if err := s.Query(`INSERT INTO crash_runs (key, run, pid) VALUES (?, ?, ?)`, key, run, pid).
				WithContext(ctx).Exec(); err != nil {
				// The row may have been written all the same: the claim is released and the
				// key may run again, as the toolkit documents for a function that fails.
				failed.Add(1)
				return nil, err
			}
			return []byte(run.String()), nil
		}
	}
	call := func(key string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			res, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey(namespace, key), fn(key), lwt.WithWait())
			switch {
			case err == nil && res.Replay:
				replayed.Add(1)
				return nil
			case err == nil:
				ran.Add(1)
				return nil
			case errors.Is(err, lwt.ErrOutcomeUnknown):
				unknown.Add(1)
			case errors.Is(err, lwt.ErrInProgress):
				inProgress.Add(1)
				time.Sleep(50 * time.Millisecond)
			case retryable(err) && ctx.Err() == nil:
				// A loaded machine times requests out now and then; a client tries again.
				transient.Add(1)
				time.Sleep(100 * time.Millisecond)
			default:
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	for range spec.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) {
					return
				}
				if err := call(keys[i]); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return workerReport{Event: "done", Ran: int(ran.Load()), Replayed: int(replayed.Load()),
		Unknown: int(unknown.Load()), InProgress: int(inProgress.Load()), Waited: int(store.Stats().Conflicts), Errors: errs,
		Failed: int(failed.Load()), Transient: int(transient.Load())}
}

// fencedRun runs the spec's one key through the executor. The function reports that it runs,
// optionally waits for a line on stdin (the test freezes the process meanwhile), and writes its
// value to crash_ledger on the condition that no writer with a newer fence came first.
func fencedRun(s *gocql.Session, store *lwt.Store, spec workerSpec, out *json.Encoder) workerReport {
	rep := workerReport{Event: "done"}
	fn := func(ctx context.Context) ([]byte, error) {
		claim, ok := lwt.ClaimFromContext(ctx)
		if !ok {
			return nil, errors.New("no claim in the function's context")
		}
		rep.Ran, rep.Fence = 1, claim.Fence
		if err := out.Encode(workerReport{Event: "running", Fence: claim.Fence}); err != nil {
			return nil, err
		}
		if spec.Hold {
			if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
				return nil, err
			}
		}
		// A stalled worker may not notice that its ctx was canceled when its lease was lost, as
		// one blocked in a call would not: the fence, not the ctx, is what stops its write.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		applied, _, err := cas.UpdateIf(wctx, s.Query(`UPDATE crash_ledger SET value = ?, fence = ? WHERE key = ? IF fence < ?`,
			spec.Value, claim.Fence, spec.Keys[0], claim.Fence), gocql.Serial)
		if err != nil {
			return nil, err
		}
		rep.Downstream = applied
		return []byte(spec.Value), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey(namespace, spec.Keys[0]), fn, lwt.WithWait())
	if err != nil {
		rep.Err = err.Error()
		rep.LeaseLost = errors.Is(err, lwt.ErrLeaseLost)
	}
	return rep
}

// report is a JSON line a child process prints; its kind names what happened.
type report interface{ kind() string }

func (r workerReport) kind() string { return r.Event }

// process is a child process started by a test, which prints JSON lines of R on stdout.
type process[R report] struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan R // closed when the process's stdout ends
	stderr syncbuf.Buffer
}

// worker is a worker process: the test binary run again with workerEnv set.
type worker = process[workerReport]

// startWorker starts a worker process. It is killed, if still running, when the test ends.
func startWorker(t *testing.T, spec workerSpec) *worker {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	return startProcess(t, cmd, func(line string) workerReport { return workerReport{Event: "unreadable", Err: line} })
}

// startProcess starts cmd and decodes its stdout into p.lines; a line that is not JSON becomes
// unreadable(line). The process is killed, if still running, when the test ends.
func startProcess[R report](t *testing.T, cmd *exec.Cmd, unreadable func(string) R) *process[R] {
	t.Helper()
	w := &process[R]{cmd: cmd, lines: make(chan R, 16)}
	w.cmd.Stderr = &w.stderr
	var err error
	w.stdin, err = w.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := w.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r R
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				r = unreadable(sc.Text())
			}
			w.lines <- r
		}
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill() // SIGKILL ends a stopped process too
		for range w.lines {
		}
		_ = w.cmd.Wait()
		if t.Failed() && w.stderr.Len() > 0 {
			t.Logf("crashtest: process %d stderr:\n%s", w.cmd.Process.Pid, tail(w.stderr.String(), 40))
		}
	})
	return w
}

// next returns the process's next report of the given kind, failing the test on anything else.
func (w *process[R]) next(t *testing.T, event string, timeout time.Duration) R {
	t.Helper()
	select {
	case r, ok := <-w.lines:
		if !ok {
			t.Fatalf("crashtest: process %d ended before reporting %q; stderr:\n%s", w.cmd.Process.Pid, event, w.stderr.String())
		}
		if r.kind() != event {
			t.Fatalf("crashtest: process %d reported %+v, expected %q", w.cmd.Process.Pid, r, event)
		}
		return r
	case <-time.After(timeout):
		t.Fatalf("crashtest: process %d did not report %q within %s", w.cmd.Process.Pid, event, timeout)
	}
	var zero R
	return zero
}
