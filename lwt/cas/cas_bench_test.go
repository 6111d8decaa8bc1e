package cas

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/testnode"
)

// BenchmarkCAS measures one conditional insert of a claim's cells (the statement lwtbench's
// lwt-new sends) through Exec: allocs/op is the client's cost per LWT, the decoding of the
// result included, on the recommended session (cqlsession). new-key is applied (the node
// returns [applied] alone); existing-key is rejected (the node returns the whole row);
// plain-insert is the same statement without its condition, the floor the others compare to.
func BenchmarkCAS(b *testing.B) {
	_, ks := testnode.NewSession(b)
	session := testnode.RecommendedSession(b, ks)
	ctx := context.Background()
	const stmt = `INSERT INTO idempotency_keys (namespace, key, fingerprint, status, owner, fence,
		lease_until, attempts, created_at, updated_at, expires_at)
		VALUES (?, ?, ?, 'STARTED', ?, 0, ?, 1, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	fp := make([]byte, 32)
	insert := func(key string) *gocql.Query {
		now := time.Now()
		return session.Query(stmt, "bench-cas", key, fp, gocql.TimeUUID(), now.Add(30*time.Second), now, now, now.Add(time.Hour), 3600)
	}
	n := 0 // across the sub-benchmark's runs, so that every new key is new
	run := func(name string, key func(i int) string, want bool) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				applied, _, err := Exec(ctx, insert(key(n)), gocql.Serial)
				if err != nil || applied != want {
					b.Fatalf("applied %v, err %v", applied, err)
				}
				n++
			}
		})
	}
	prefix := strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	run("new-key", func(i int) string { return prefix + strconv.Itoa(i) }, true)
	run("existing-key", func(int) string { return prefix + "0" }, false)
	plain := strings.Replace(stmt, " IF NOT EXISTS", "", 1)
	b.Run("plain-insert", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			now := time.Now()
			err := session.Query(plain, "bench-cas", prefix+"plain-"+strconv.Itoa(n), fp, gocql.TimeUUID(),
				now.Add(30*time.Second), now, now, now.Add(time.Hour), 3600).WithContext(ctx).Exec()
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	})
}
