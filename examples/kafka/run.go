package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gocql/gocql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Settings of the run that the command line does not change.
const (
	partitions = 4
	dupEvery   = 10 // every 10th payment is produced twice
	maxPoll    = 500
	lease      = 3 * time.Second // short, so the dead consumer's claims are taken over quickly
)

// runConfig is what run needs to know.
type runConfig struct {
	brokers         []string
	hosts, keyspace string // for the consumer processes
	messages        int
	bloom           bool
	// spawn returns the command that starts a consumer process with args: this program, or the
	// test binary.
	spawn func(args []string) *exec.Cmd
}

// summary is what run observed, for the test to check.
type summary struct {
	produced
	applied, rerun int   // messages that took effect; of them, the ones whose effect came under a later claim (fence > 1)
	runs           int64 // handler runs
	redelivered    int64 // deliveries the survivor found processed that only a redelivery explains
	waitedLease    int64 // deliveries the survivor found held by the dead consumer's live claims
	takeovers      int64 // the dead consumer's claims the survivor took over once their leases lapsed
	polled         int64 // records the survivor polled
}

// run produces the payments, starts two consumers, kills the first mid-poll, waits until every
// payment took effect, stops the second and reports.
func run(ctx context.Context, session *gocql.Session, cfg runConfig, out io.Writer) (summary, error) {
	var s summary
	suffix := time.Now().Format("150405.000000")
	topic, group := "payments-"+suffix, "billing-"+suffix
	fx := effects{session: session, keyspace: cfg.keyspace}
	if err := fx.create(ctx); err != nil {
		return s, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.brokers...))
	if err != nil {
		return s, err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		return s, fmt.Errorf("create topic %s: %w", topic, err)
	}
	if s.produced, err = produce(ctx, cl, topic, cfg.messages, dupEvery); err != nil {
		return s, err
	}
	fmt.Fprintf(out, "produced %d records to %s: %d payments, %d of them twice\n", s.records, topic, s.distinct, s.duplicates)

	// The first consumer stalls inside a handler once it has done an eighth of the work, and is
	// killed there; the second runs to the end.
	victim, err := startConsumer(cfg, "consumer-1", topic, group, int64(cfg.messages/8))
	if err != nil {
		return s, err
	}
	defer victim.kill()
	survivor, err := startConsumer(cfg, "consumer-2", topic, group, 0)
	if err != nil {
		return s, err
	}
	defer survivor.kill()
	select {
	case <-victim.stalled:
	case <-victim.exited:
		return s, fmt.Errorf("consumer-1 exited before it stalled: %v", victim.err())
	case <-ctx.Done():
		return s, ctx.Err()
	}
	victim.kill()
	fmt.Fprintf(out, "killed consumer-1 (SIGKILL) in the middle of a poll, after: %s\n", victim.last())
	if err := awaitApplied(ctx, fx, topic, s.distinct, survivor); err != nil {
		return s, err
	}
	if err := survivor.stop(); err != nil {
		return s, err
	}
	err = s.report(ctx, fx, topic, survivor, out) // before s is returned: it fills s
	return s, err
}

// report reads the survivor's last tally and the effects of topic into s, prints them, and
// fails unless every payment took effect exactly once.
func (s *summary) report(ctx context.Context, fx effects, topic string, survivor *child, out io.Writer) error {
	final := parseTally(survivor.last())
	s.redelivered, s.waitedLease, s.polled, s.takeovers = final["redelivered"], final["inprogress"], final["polled"], final["takeovers"]
	var err error
	if s.applied, s.rerun, s.runs, err = fx.tally(ctx, topic); err != nil {
		return err
	}
	fmt.Fprintf(out, "consumer-2 after the rebalance: %s\n", survivor.last())
	fmt.Fprintf(out, "payments that took effect: %d of %d; handler runs %d (%d more than payments: handlers that ran in the dead consumer's unfinished poll); "+
		"%d claims taken over from the dead consumer, %d effects written under a takeover's fence\n",
		s.applied, s.distinct, s.runs, s.runs-int64(s.distinct), s.takeovers, s.rerun)
	if s.applied != s.distinct {
		return fmt.Errorf("%d payments took effect, want %d", s.applied, s.distinct)
	}
	return nil
}

// awaitApplied waits until want payments of topic took effect, while survivor consumes them.
func awaitApplied(ctx context.Context, fx effects, topic string, want int, survivor *child) error {
	for {
		applied, _, _, err := fx.tally(ctx, topic)
		if err != nil {
			return err
		}
		if applied >= want {
			return nil
		}
		select {
		case <-survivor.exited:
			return fmt.Errorf("%s exited early: %v", survivor.name, survivor.err())
		case <-ctx.Done():
			return fmt.Errorf("%d of %d payments took effect: %w", applied, want, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// child is one consumer process.
type child struct {
	name    string
	cmd     *exec.Cmd
	stalled chan struct{}
	exited  chan struct{}
	mu      sync.Mutex
	lastOut string
	waitErr error
	stderr  strings.Builder
}

func startConsumer(cfg runConfig, name, topic, group string, stallAfter int64) (*child, error) {
	args := []string{"-hosts", cfg.hosts, "-keyspace", cfg.keyspace, "-brokers", strings.Join(cfg.brokers, ","),
		"-name", name, "-topic", topic, "-group", group, "-lease", lease.String(),
		"-dup-every", fmt.Sprint(dupEvery), "-max-poll", fmt.Sprint(maxPoll), fmt.Sprintf("-stall-after=%d", stallAfter)}
	if cfg.bloom {
		args = append(args, "-bloom")
	}
	c := &child{name: name, cmd: cfg.spawn(args), stalled: make(chan struct{}), exited: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), consumerEnv+"=1")
	c.cmd.Stderr = &c.stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go c.read(stdout)
	return c, nil
}

// read follows the consumer's output until it exits, then reaps it.
func (c *child) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	stalled := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "stalled ") && !stalled:
			stalled = true
			close(c.stalled)
		case strings.HasPrefix(line, "progress "), strings.HasPrefix(line, "final "):
			c.mu.Lock()
			c.lastOut = line[strings.Index(line, " ")+1:]
			c.mu.Unlock()
		}
	}
	err := c.cmd.Wait()
	c.mu.Lock()
	c.waitErr = err
	c.mu.Unlock()
	close(c.exited)
}

func (c *child) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastOut
}

func (c *child) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.waitErr, errors.New(strings.TrimSpace(c.stderr.String())))
}

// kill ends the process with SIGKILL (no cleanup, no group leave) and waits for it.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// stop asks the process to leave the group and exit, and waits for it.
func (c *child) stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.kill()
		return fmt.Errorf("%s did not stop within 30s", c.name)
	}
	if err := c.err(); c.waitErr != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// parseTally reads the counters of a progress line ("name polled=1 processed=2 ...").
func parseTally(line string) map[string]int64 {
	m := map[string]int64{}
	for _, f := range strings.Fields(line) {
		var k string
		var v int64
		if i := strings.IndexByte(f, '='); i > 0 {
			k = f[:i]
			if _, err := fmt.Sscan(f[i+1:], &v); err == nil {
				m[k] = v
			}
		}
	}
	return m
}
