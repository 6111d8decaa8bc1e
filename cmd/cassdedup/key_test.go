package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// planter makes records in each state with lwt's own API. Its short store holds one-second
// leases, so a claim it leaves STARTED is soon one whose lease the server has expired.
type planter struct {
	t            *testing.T
	store, short *lwt.Store
	keyspace     string
	session      *gocql.Session
}

func newPlanter(t *testing.T) *planter {
	session, ks := testnode.NewSession(t)
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks))
	require.NoError(t, err)
	short, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks), lwt.WithLease(time.Second))
	require.NoError(t, err)
	return &planter{t: t, store: store, short: short, keyspace: ks, session: session}
}

// plant leaves key in status st; short makes a STARTED claim's lease one second long.
func (p *planter) plant(ns, key string, st lwt.Status, short bool) {
	p.t.Helper()
	ctx := context.Background()
	s := p.store
	if short {
		s = p.short
	}
	c, rec, err := s.Begin(ctx, lwt.IdempotencyKey(ns, key), nil)
	require.NoError(p.t, err)
	require.Nil(p.t, rec)
	switch st {
	case lwt.StatusCompleted:
		require.NoError(p.t, s.Complete(ctx, c, []byte(`{"charge":"ch_1","amount":1000}`)))
	case lwt.StatusFailed:
		require.NoError(p.t, s.Fail(ctx, c, []byte("card declined")))
	case lwt.StatusReleased:
		require.NoError(p.t, s.Release(ctx, c, []byte("gateway timeout")))
	}
}

// expire waits until the server has expired the lease of every key planted with short.
func (p *planter) expire(ns string, keys ...string) {
	p.t.Helper()
	for _, k := range keys {
		require.Eventually(p.t, func() bool {
			rec, err := p.store.Get(context.Background(), lwt.IdempotencyKey(ns, k))
			return err == nil && rec.LeaseOwner == (gocql.UUID{})
		}, 10*time.Second, 100*time.Millisecond, "the server never expired the lease of %s", k)
	}
}

func TestKeyGetShowsEachState(t *testing.T) {
	t.Parallel()
	p := newPlanter(t)
	p.plant("shop", "started", lwt.StatusStarted, false)
	p.plant("shop", "completed", lwt.StatusCompleted, false)
	p.plant("shop", "failed", lwt.StatusFailed, false)
	p.plant("shop", "released", lwt.StatusReleased, false)
	p.plant("shop", "expired", lwt.StatusStarted, true)
	p.expire("shop", "expired")

	for _, tc := range []struct {
		key, status string
		live        bool
		result      int
		preview     string
		meaning     string
	}{
		{"started", "STARTED", true, 0, "", "held by a running claim"},
		{"completed", "COMPLETED", false, 31, `"{\"charge\":\"ch_1\",\"amount\":1000}"`, "replays the stored result"},
		{"failed", "FAILED", false, 13, `"card declined"`, "failed permanently"},
		{"released", "RELEASED", false, 15, `"gateway timeout"`, "the next attempt runs again with fence 2"},
		{"expired", "STARTED", false, 0, "", "its lease expired on the server and no attempt took it over"},
	} {
		var v recordView
		okJSON(t, &v, "key", "get", "shop", tc.key, "-keyspace", p.keyspace)
		assert.Equal(t, tc.status, v.Status, tc.key)
		assert.Equal(t, tc.live, v.LeaseLive, tc.key)
		assert.EqualValues(t, 1, v.Fence, tc.key)
		assert.Equal(t, 1, v.Attempts, tc.key)
		assert.Equal(t, tc.result, v.ResultBytes, tc.key)
		assert.Equal(t, tc.preview, v.ResultPreview, tc.key)
		assert.Contains(t, v.Meaning, tc.meaning, tc.key)
		assert.Equal(t, []any{"shop", tc.key}, v.Key)
		require.NotNil(t, v.ExpiresAt, tc.key)
		assert.InDelta(t, time.Until(*v.ExpiresAt).Seconds(), float64(v.TTLSeconds), 5, "the node's TTL agrees with the expiry: %s", tc.key)
	}

	table := ok(t, "key", "get", "shop", "completed", "-keyspace", p.keyspace, "-preview", "10")
	assert.Regexp(t, `(?m)^status +COMPLETED$`, table)
	assert.Regexp(t, `(?m)^preview +"\{\\"charge\\":" \.\.\. \(21 more bytes\)$`, table)
	assert.NotContains(t, table, "lease", "an ended claim's lease is not shown")
	assert.Regexp(t, `(?m)^lease +live until \S+ \(in \d+s\), held by [0-9a-f-]{36}$`, ok(t, "key", "get", "shop", "started", "-keyspace", p.keyspace))
	assert.Regexp(t, `(?m)^lease +expired \(the server dropped the lease cells\)$`, ok(t, "key", "get", "shop", "expired", "-keyspace", p.keyspace))
	r := cli(t, nil, "key", "get", "shop", "none", "-keyspace", p.keyspace)
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "no record of shop none")
	r = cli(t, nil, "key", "get", "", "x", "-keyspace", p.keyspace)
	assert.Equal(t, exitUsage, r.code, r.stderr)
}

func TestKeyReleaseAndPurgeRefuseALiveLeaseThenWorkWithForce(t *testing.T) {
	t.Parallel()
	p := newPlanter(t)
	ks := p.keyspace
	p.plant("shop", "held", lwt.StatusStarted, false)

	for _, verb := range []string{"release", "purge"} {
		r := cli(t, nil, "key", verb, "shop", "held", "-keyspace", ks)
		assert.Equal(t, exitFailure, r.code, verb)
		assert.Contains(t, r.stderr, "refused: shop held is held by a live lease until", verb)
		assert.Contains(t, r.stderr, "-force", verb)
	}
	var v recordView
	okJSON(t, &v, "key", "get", "shop", "held", "-keyspace", ks)
	assert.Equal(t, "STARTED", v.Status, "nothing was written")

	out := ok(t, "key", "release", "shop", "held", "-force", "-yes", "-note", "INC-7: worker gone", "-keyspace", ks)
	assert.Contains(t, out, "released  shop held")
	assert.Contains(t, out, "before    STARTED, fence 1, attempts 1")
	assert.Contains(t, out, "after     RELEASED: the next attempt claims it again with fence 2")
	okJSON(t, &v, "key", "get", "shop", "held", "-keyspace", ks)
	assert.Equal(t, "RELEASED", v.Status)
	assert.Equal(t, `"INC-7: worker gone"`, v.ResultPreview)
	assert.Contains(t, ok(t, "key", "release", "shop", "held", "-keyspace", ks), "already RELEASED: nothing written")

	p.plant("shop", "held2", lwt.StatusStarted, false)
	out = ok(t, "key", "purge", "-keyspace", ks, "shop", "-force", "held2", "-yes")
	assert.Contains(t, out, "purged  shop held2")
	assert.Contains(t, out, "runs as a new one")
	r := cli(t, nil, "key", "get", "shop", "held2", "-keyspace", ks)
	assert.Equal(t, exitFailure, r.code)

	p.plant("shop", "dead", lwt.StatusStarted, true)
	p.expire("shop", "dead")
	var res map[string]any
	okJSON(t, &res, "key", "purge", "shop", "dead", "-keyspace", ks)
	assert.Equal(t, true, res["changed"], "an expired lease needs no force")
}

// TestDestructiveCommandsDryRunAndConfirm: a dry run prints what would be done and writes
// nothing; releasing or purging a COMPLETED record without a terminal needs -yes (exit 2
// without it), is asked on a terminal, and acts once confirmed.
func TestDestructiveCommandsDryRunAndConfirm(t *testing.T) {
	t.Parallel()
	p := newPlanter(t)
	ks := p.keyspace
	p.plant("shop", "done", lwt.StatusCompleted, false)
	status := func() string {
		var v recordView
		okJSON(t, &v, "key", "get", "shop", "done", "-keyspace", ks)
		return v.Status
	}

	for _, verb := range []string{"release", "purge"} {
		out := ok(t, "key", verb, "shop", "done", "-dry-run", "-keyspace", ks)
		assert.Contains(t, out, "will "+verb+" shop done\nnow:  COMPLETED, fence 1, attempts 1, 31-byte result\n", verb)
		assert.Contains(t, out, "warning: shop done is COMPLETED: its next retry runs the operation again", verb)
		assert.Contains(t, out, "dry run: nothing written", verb)
		var dry map[string]any
		okJSON(t, &dry, "key", verb, "shop", "done", "-dry-run", "-keyspace", ks)
		assert.Equal(t, true, dry["dry_run"], verb)
		assert.Equal(t, "COMPLETED", status(), "%s -dry-run wrote nothing", verb)

		r := cli(t, nil, "key", verb, "shop", "done", "-keyspace", ks)
		assert.Equal(t, exitUsage, r.code, "%s: %s", verb, r.stderr)
		assert.Contains(t, r.stdout, "will "+verb+" shop done", verb)
		assert.Contains(t, r.stderr, "not confirmed: shop done is COMPLETED", verb)
		assert.Contains(t, r.stderr, "pass -yes to confirm", verb)
		assert.Equal(t, "COMPLETED", status(), "%s without -yes wrote nothing", verb)

		r = cliWith(t, input{r: strings.NewReader("n\n"), terminal: true}, nil, "key", verb, "shop", "done", "-keyspace", ks)
		assert.Equal(t, exitFailure, r.code, verb)
		assert.Contains(t, r.stderr, "proceed? [y/N] ", verb)
		assert.Contains(t, r.stderr, "declined: nothing written", verb)
		assert.Equal(t, "COMPLETED", status(), "%s declined wrote nothing", verb)
	}

	r := cliWith(t, input{r: strings.NewReader("y\n"), terminal: true}, nil, "key", "release", "shop", "done", "-keyspace", ks)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "released  shop done")
	assert.Equal(t, "RELEASED", status(), "confirmed on the terminal")

	// A RELEASED record's next retry runs anyway: no confirmation.
	out := ok(t, "key", "purge", "shop", "done", "-keyspace", ks)
	assert.Contains(t, out, "purged  shop done")
	p.plant("shop", "done", lwt.StatusCompleted, false)
	assert.Contains(t, ok(t, "key", "purge", "shop", "done", "-yes", "-keyspace", ks), "purged  shop done")
	assert.Equal(t, exitFailure, cli(t, nil, "key", "get", "shop", "done", "-keyspace", ks).code, "-yes acted")
}

func TestKeysStuckFindsExactlyThePlantedClaims(t *testing.T) {
	t.Parallel()
	p := newPlanter(t)
	want := map[string]string{}
	var dead []string
	for i := range 4 {
		k := fmt.Sprint("dead-", i)
		p.plant("shop", k, lwt.StatusStarted, true)
		dead = append(dead, k)
		want["shop "+k] = string(lwt.StuckLeaseExpired)
	}
	p.expire("shop", dead...)
	for i := range 3 {
		k := fmt.Sprint("flaky-", i)
		for range 3 {
			p.plant("shop", k, lwt.StatusReleased, false)
		}
		want["shop "+k] = string(lwt.StuckReleasedRepeatedly)
	}
	p.plant("shop", "running", lwt.StatusStarted, false)
	p.plant("shop", "retried-once", lwt.StatusReleased, false)
	p.plant("shop", "failed", lwt.StatusFailed, false)
	const healthy = 300
	var wg sync.WaitGroup
	errs := make(chan error, healthy)
	for i := range healthy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.store.PutCompleted(context.Background(), lwt.IdempotencyKey(fmt.Sprint("tenant-", i%9), fmt.Sprint("ok-", i)), nil, []byte("{}"), 1)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	var out struct {
		Stuck []stuckView `json:"stuck"`
		Scan  struct {
			Ranges, Rows int
		} `json:"scan"`
	}
	okJSON(t, &out, "keys", "stuck", "-keyspace", p.keyspace, "-splits", "8", "-page-size", "40", "-rate", "-1")
	got := map[string]string{}
	for _, s := range out.Stuck {
		got[keyText(s.Key)] = s.Reason
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 8, out.Scan.Ranges)
	assert.Equal(t, healthy+len(want)+3, out.Scan.Rows)

	table := ok(t, "keys", "stuck", "-keyspace", p.keyspace, "-limit", "2", "-min-attempts", "10")
	assert.Contains(t, table, "KEY")
	assert.Contains(t, table, "lease-expired")
	assert.NotContains(t, table, "released-repeatedly", "-min-attempts 10")
	assert.Contains(t, table, "2 stuck (stopped at -limit 2)")
}
