//go:build soak

package soak

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/outbox"
)

// forensics says, for each lost order, what the node holds of it when the run ends: its
// record in idempotency_keys, its intents (with their state and attempts), the guard's record
// of its event and the event's rows in the log, so a failed run tells whether the order was
// never committed, committed and never published, or published and never applied. The node's data is removed with the run, so this is the only trace left.
func forensics(s *gocql.Session, lost map[string]int64) []string {
	ids := make([]string, 0, len(lost))
	for id := range lost {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []string
	for _, id := range ids {
		var b strings.Builder
		fmt.Fprintf(&b, "%s (amount %d):", id, lost[id])
		describe(&b, s, "record", `SELECT namespace, status, owner, fence, attempts, created_at, updated_at, expires_at, outbox FROM `+
			keyspace+`.idempotency_keys WHERE key = ? ALLOW FILTERING`, id)
		describe(&b, s, "intent", `SELECT bucket, shard, owner, fence, staged_at, state, settled_at, committed, attempts, last_error, events FROM `+
			keyspace+`.outbox_intents WHERE key = ? ALLOW FILTERING`, id)
		describe(&b, s, "parked", `SELECT shard, reason, attempts, last_error FROM `+keyspace+`.outbox_parked WHERE key = ? ALLOW FILTERING`, id)
		// The consumer's side: the guard's record of the order's event, and its rows in the
		// event log (on time, or claimed late).
		var ns string
		_ = s.Query(`SELECT namespace FROM `+keyspace+`.idempotency_keys WHERE key = ? LIMIT 1 ALLOW FILTERING`, id).
			Consistency(gocql.One).Scan(&ns)
		ev := outbox.EventID(ns, id, 0)
		describe(&b, s, "guard", `SELECT topic, partition, window_start, status, attempts, created_at, result FROM `+keyspace+
			`.processed_messages_bucketed WHERE message_id = ? ALLOW FILTERING`, ev)
		describe(&b, s, "event", `SELECT counter, bucket, part, delta FROM `+keyspace+`.counter_window_events WHERE event_id = ? ALLOW FILTERING`, ev)
		describe(&b, s, "late", `SELECT counter, second, target FROM `+keyspace+`.counter_late_slices WHERE event_id = ? ALLOW FILTERING`, ev)
		out = append(out, b.String())
	}
	return out
}

// describe appends what q finds for id, one "what{column=value ...}" per row; blobs by length.
func describe(b *strings.Builder, s *gocql.Session, what, q, id string) {
	iter := s.Query(q, id).Consistency(gocql.One).Iter()
	rows := 0
	for {
		m := map[string]any{}
		if !iter.MapScan(m) {
			break
		}
		rows++
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(b, " %s{", what)
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			v := m[k]
			if bs, ok := v.([]byte); ok {
				v = fmt.Sprintf("%d bytes", len(bs))
			}
			fmt.Fprintf(b, "%s=%v", k, v)
		}
		b.WriteString("}")
	}
	if err := iter.Close(); err != nil {
		fmt.Fprintf(b, " %s: %v", what, err)
	} else if rows == 0 {
		fmt.Fprintf(b, " no %s", what)
	}
}

// countedTwice checks, for each order whose handler ran more than once, how many rows its
// event has in the log: one whatever the reruns (the rows are keyed by the event's id, and a
// late event is claimed once), more if the log counted it again. It returns how many orders
// were counted more than once and (up to maxNamed of) them with their amounts.
func countedTwice(t *testing.T, s *gocql.Session, rerun map[string]int64) (int, map[string]int64) {
	twice, named := 0, map[string]int64{}
	for id, amount := range rerun {
		var ns string
		_ = s.Query(`SELECT namespace FROM `+keyspace+`.idempotency_keys WHERE key = ? LIMIT 1 ALLOW FILTERING`, id).
			Consistency(gocql.One).Scan(&ns)
		var rows int64
		err := s.Query(`SELECT count(*) FROM `+keyspace+`.counter_window_events WHERE event_id = ? ALLOW FILTERING`,
			outbox.EventID(ns, id, 0)).Consistency(gocql.One).Scan(&rows)
		if err != nil {
			t.Errorf("soak: count the log's rows of %s: %v", id, err)
			continue
		}
		t.Logf("soak: order %s ran its handler more than once: %d row(s) in the log", id, rows)
		if rows > 1 {
			twice++
			if len(named) < maxNamed {
				named[id] = amount
			}
		}
	}
	return twice, named
}
