//go:build cluster

package clustertest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// client is one way into the cluster: a session and the name of the side it is on.
type client struct {
	via     string
	session *gocql.Session
}

// testLease is short so that a retry after an unknown outcome waits seconds, not half a minute.
const testLease = 10 * time.Second

// onceWork calls ExecuteOnce on the idempotency_keys table of ks through a client picked at
// random for each call, four stores per client as four processes would have. Duplicates wait
// for the stored result (WithWait) as a client that wants the answer does.
func onceWork(t *testing.T, ks string, clients []client, opts ...lwt.StoreOption) work {
	t.Helper()
	type proc struct {
		via   string
		store *lwt.Store
	}
	var procs []proc
	for _, c := range clients {
		for range 4 {
			s, err := lwt.NewStore(c.session, lwt.IdempotencyKeys(ks), append([]lwt.StoreOption{lwt.WithLease(testLease)}, opts...)...)
			require.NoError(t, err)
			procs = append(procs, proc{c.via, s})
		}
	}
	return func(ctx context.Context, key string, ran func() int) (string, string, error) {
		p := procs[rand.IntN(len(procs))]
		res, err := p.store.ExecuteOnce(ctx, lwt.Key{"cluster", key}, func(context.Context) ([]byte, error) {
			return []byte(fmt.Sprintf("%s#%d", key, ran())), nil
		}, lwt.WithWait())
		return string(res.Value), p.via, err
	}
}

// consumer is the guard and the event log together, as a consumer uses them: the handler of
// each message records one event whose id is the message's id, so even a handler that runs
// twice adds the message once. Every message adds 1 to the consumer's counter.
type consumer struct {
	log     *events.Log
	counter string
}

// consumerWork processes one delivery of the message named key through a guard of a client
// picked at random.
func consumerWork(t *testing.T, ks, counter string, clients []client, cl gocql.Consistency, sc gocql.SerialConsistency) (work, *consumer) {
	t.Helper()
	type proc struct {
		via   string
		guard *guard.Guard
		log   *events.Log
	}
	var procs []proc
	for _, c := range clients {
		for range 4 {
			g, err := guard.New(c.session, guard.WithKeyspace(ks), guard.WithConsistency(cl),
				guard.WithSerialConsistency(sc), guard.WithLease(testLease), guard.WithMaxAttempts(1000))
			require.NoError(t, err)
			// Every event carries the workload's start time and is recorded throughout the
			// scenario: the grace period admits it for the whole run.
			l, err := events.NewLog(c.session, events.WithKeyspace(ks), events.WithConsistency(cl),
				events.WithSerialConsistency(sc), events.WithGracePeriod(time.Hour))
			require.NoError(t, err)
			procs = append(procs, proc{c.via, g, l})
		}
	}
	at := time.Now()
	w := func(ctx context.Context, key string, ran func() int) (string, string, error) {
		p := procs[rand.IntN(len(procs))]
		h := fnv.New32a()
		h.Write([]byte(key))
		m := guard.Message{Scope: guard.Scope{Group: "cluster", Topic: "orders", Partition: int32(h.Sum32() % 4)}, ID: key}
		_, err := p.guard.Process(ctx, m, func(ctx context.Context, m guard.Message) error {
			ran()
			return p.log.Record(ctx, events.Event{Counter: counter, ID: m.ID, Delta: 1, Time: at})
		})
		return "", p.via, err
	}
	return w, &consumer{log: procs[0].log, counter: counter}
}

// checkTotal compares the counter's total with the number of messages acknowledged.
func (c *consumer) checkTotal(t *testing.T, d *driver) (lost, extra int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	total, err := c.log.Total(ctx, c.counter)
	require.NoError(t, err)
	d.mu.Lock()
	want := int64(len(d.values))
	d.mu.Unlock()
	t.Logf("%s: event log total %d, messages acknowledged %d", d.name, total, want)
	if total < want {
		return int(want - total), 0
	}
	return 0, int(total - want)
}

// readBack reads every key of d's executor workload at SERIAL (which finishes any Paxos round
// left in flight) and at ALL, and returns the value SERIAL gave with the number of keys on
// which the two reads disagree.
func readBack(t *testing.T, s *gocql.Session, ks string, d *driver, serial gocql.SerialConsistency) (map[string]string, int) {
	t.Helper()
	d.mu.Lock()
	keys := make([]string, 0, len(d.values))
	for k := range d.values {
		keys = append(keys, k)
	}
	d.mu.Unlock()
	q := "SELECT status, result FROM " + ks + ".idempotency_keys WHERE namespace = ? AND key = ?"
	read := func(k string, cl gocql.Consistency) string {
		var status string
		var result []byte
		err := s.Query(q, "cluster", k).Consistency(cl).Scan(&status, &result)
		if err == gocql.ErrNotFound {
			return "<none>"
		}
		require.NoError(t, err, "read %s at %v", k, cl)
		if status != string(lwt.StatusCompleted) {
			return "<" + status + ">"
		}
		return string(result)
	}
	final := map[string]string{}
	diverged := 0
	for _, k := range keys {
		final[k] = read(k, gocql.Consistency(serial))
		if all := read(k, gocql.All); all != final[k] {
			diverged++
			t.Logf("%s: %s at SERIAL %q, at ALL %q", d.name, k, final[k], all)
		}
	}
	return final, diverged
}
