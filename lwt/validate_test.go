package lwt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordTTLConsistentAndExpiry: every cell of a record expires at the same instant through
// claim, release, re-claim and completion; after expiry the key runs again.
func TestRecordTTLConsistentAndExpiry(t *testing.T) {
	t.Parallel()
	s, session, _ := newTestStore(t, WithRetention(4*time.Second), WithLease(time.Second))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "ttl")
	runs := 0
	_, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs++; return nil, errors.New("retry me") })
	require.Error(t, err)
	assertTTLsEqual(t, session, key, 4)
	time.Sleep(1100 * time.Millisecond) // a later write must not drift from the first ones
	_, err = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs++; return []byte("v"), nil })
	require.NoError(t, err)
	assertTTLsEqual(t, session, key, 4)

	rec := readRecord(t, s, key)
	time.Sleep(time.Until(rec.ExpiresAt) + 1500*time.Millisecond)
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs++; return []byte("again"), nil })
	require.NoError(t, err)
	assert.False(t, res.Replay, "an expired record lets the key run again")
	assert.Equal(t, 1, res.Attempts, "an expired record's attempts are gone with it")
	assert.Equal(t, 3, runs)
}

// assertTTLsEqual checks that every record column has a TTL, all within one second, at most limit.
func assertTTLsEqual(t *testing.T, session *gocql.Session, key Key, limit int) {
	t.Helper()
	cols := recordColumns
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = "TTL(" + c + ")"
	}
	vals := make([]any, len(cols))
	ttls := make([]*int, len(cols))
	for i := range vals {
		vals[i] = &ttls[i]
	}
	require.NoError(t, session.Query("SELECT "+strings.Join(sel, ", ")+" FROM idempotency_keys WHERE namespace = ? AND key = ?", key...).
		Consistency(gocql.Quorum).Scan(vals...))
	lo, hi := 1<<30, 0
	for i, v := range ttls {
		if (cols[i] == "result" || cols[i] == "epoch") && v == nil {
			continue // a null result, or the epoch of a record claimed by LWT, is no cell at all
		}
		if cols[i] == "lease_owner" || cols[i] == "lease_until" {
			// The lease cells carry the lease's own, shorter TTL: the server ends the lease.
			if v != nil {
				assert.LessOrEqual(t, *v, limit, "lease cell %s outlives the record", cols[i])
			}
			continue
		}
		if !assert.NotNil(t, v, "column %s has no TTL", cols[i]) {
			continue
		}
		lo, hi = min(lo, *v), max(hi, *v)
	}
	assert.LessOrEqual(t, hi-lo, 1, "TTLs differ: from %d to %d", lo, hi)
	assert.LessOrEqual(t, hi, limit)
}

func TestBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	s, session, _ := newTestStore(t, WithMaxResultSize(1024))
	ctx := ctxT(t)
	ok := IdempotencyKey("tenant", "kept")
	_, err := s.ExecuteOnce(ctx, ok, func(context.Context) ([]byte, error) { return []byte("kept"), nil })
	require.NoError(t, err)

	never := func(context.Context) ([]byte, error) { t.Error("fn ran on bad input"); return nil, nil }
	for name, key := range map[string]Key{
		"empty key":       IdempotencyKey("tenant", ""),
		"empty namespace": IdempotencyKey("", "k"),
		"oversized key":   IdempotencyKey("tenant", strings.Repeat("k", DefaultMaxKeyLength+1)),
		"invalid utf-8":   IdempotencyKey("tenant", "k\xff"),
		"too few values":  {"tenant"},
		"wrong type":      {"tenant", 3.5},
		"nil key":         nil,
	} {
		_, err := s.ExecuteOnce(ctx, key, never)
		var ke *KeyError
		assert.ErrorAs(t, err, &ke, name)
		assert.ErrorIs(t, err, ErrInvalidKey, name)
		_, _, err = s.Begin(ctx, key, nil)
		assert.ErrorIs(t, err, ErrInvalidKey, name)
	}
	_, _, err = s.Begin(ctx, IdempotencyKey("tenant", "fp"), make([]byte, 2000))
	assert.ErrorIs(t, err, ErrInvalidKey, "oversized fingerprint")

	big := IdempotencyKey("tenant", "big")
	_, err = s.ExecuteOnce(ctx, big, func(context.Context) ([]byte, error) { return make([]byte, 1025), nil })
	assert.ErrorIs(t, err, ErrResultTooLarge)
	rec := readRecord(t, s, big)
	assert.Equal(t, StatusReleased, rec.Status, "the result was not stored; a retry may run again")
	assert.Less(t, len(rec.Result), 1025)

	var n int
	require.NoError(t, session.Query("SELECT COUNT(*) FROM idempotency_keys").Scan(&n))
	assert.Equal(t, 2, n, "only the good key and the released big one exist")
	assert.Equal(t, "kept", string(readRecord(t, s, ok).Result), "nothing stored was lost")
}

func TestNewStoreValidates(t *testing.T) {
	t.Parallel()
	s, session, ks := newTestStore(t)
	_ = s
	for name, table := range map[string]Table{
		"bad keyspace":        {Keyspace: "a-b", Name: "t", KeyColumns: []string{"k"}},
		"bad table":           {Keyspace: ks, Name: `x"; DROP`, KeyColumns: []string{"k"}},
		"no key columns":      {Keyspace: ks, Name: "t"},
		"bad key column":      {Keyspace: ks, Name: "t", KeyColumns: []string{"1k"}},
		"record column key":   {Keyspace: ks, Name: "t", KeyColumns: []string{"status"}},
		"repeated key column": {Keyspace: ks, Name: "t", KeyColumns: []string{"k", "k"}},
	} {
		_, err := NewStore(session, table)
		assert.Error(t, err, name)
	}
	_, err := NewStore(nil, IdempotencyKeys(ks))
	assert.Error(t, err)
}

// TestBadOptionNamesItself: every option given a bad value is refused with an error that
// matches ErrInvalidOption and names the option, so a caller with many options sees which.
func TestBadOptionNamesItself(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]StoreOption{
		"WithRetention":         {WithRetention(time.Millisecond)},
		"WithLease":             {WithLease(0)},
		"WithSerialConsistency": {WithSerialConsistency(gocql.SerialConsistency(gocql.One))},
		"WithConsistency":       {WithConsistency(gocql.Any)},
		"WithMaxResultSize":     {WithMaxResultSize(MaxResultSizeLimit + 1)},
		"WithMaxKeyLength":      {WithMaxKeyLength(0)},
		"WithCache":             {WithCache(-1)},
		"WithCommitTimeout":     {WithCommitTimeout(0)},
		"WithClock":             {WithClock(nil)},
		"WithRecorder":          {WithRecorder(nil)},
		"WithLease exceeds":     {WithRetention(time.Minute), WithLease(2 * time.Minute)},
		"nil option":            {nil},
	} {
		_, err := NewStore(&gocql.Session{}, IdempotencyKeys("ks"), opts...)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
		if err != nil {
			assert.Contains(t, err.Error(), strings.Fields(name)[0], "the error names the option")
		}
	}
	for name, o := range map[string]ScanOptions{"ScanOptions.Splits": {Splits: -1},
		"ScanOptions.Parallelism": {Parallelism: 65}, "ScanOptions.PageSize": {PageSize: -3}} {
		_, err := o.withDefaults(0)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
		if err != nil {
			assert.Contains(t, err.Error(), name)
		}
	}
}

// TestProcessedMessagesTable runs the state machine on the consumer guard's table, keyed by
// (consumer_group, topic, partition, message_id), counting attempts across releases.
func TestProcessedMessagesTable(t *testing.T) {
	t.Parallel()
	_, session, ks := newTestStore(t)
	s, err := NewStore(session, Table{Keyspace: ks, Name: "processed_messages", KeyColumns: []string{"consumer_group", "topic", "partition", "message_id"}})
	require.NoError(t, err)
	ctx := ctxT(t)
	key := Key{"billing", "payments", 3, "msg-1"}
	for i := 1; i <= 3; i++ {
		c, rec, err := s.Begin(ctx, key, nil)
		require.NoError(t, err)
		require.Nil(t, rec)
		assert.Equal(t, i, c.Attempts)
		require.NoError(t, s.Release(ctx, c, []byte("handler failed")))
	}
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	assert.Equal(t, 4, res.Attempts)
	_, rec, err := s.Begin(ctx, key, nil)
	require.NoError(t, err)
	assert.Equal(t, StatusCompleted, rec.Status)
}

func FuzzValidateKey(f *testing.F) {
	f.Add("tenant", "key-1")
	f.Add("", "k")
	f.Add("t", "\xff\xfe")
	f.Add("ns", strings.Repeat("x", 300))
	f.Add("a\x00b", "日本語")
	cols := []string{`"namespace"`, `"key"`}
	f.Fuzz(func(t *testing.T, ns, k string) {
		err := validateKey(cols, IdempotencyKey(ns, k), DefaultMaxKeyLength)
		valid := ns != "" && k != "" && len(ns) <= DefaultMaxKeyLength && len(k) <= DefaultMaxKeyLength &&
			utf8Valid(ns) && utf8Valid(k)
		if valid != (err == nil) {
			t.Fatalf("validateKey(%q, %q) = %v, want valid=%v", ns, k, err, valid)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Fatalf("error %v does not match ErrInvalidKey", err)
		}
		// Distinct keys never share a cache slot.
		if ns != "" && cacheKey(IdempotencyKey(ns, k)) == cacheKey(IdempotencyKey(ns+k[:min(1, len(k))], k[min(1, len(k)):])) && k != "" {
			t.Fatalf("cache keys collide for %q/%q", ns, k)
		}
	})
}

// TestBadArgumentsNeverPanicOrWrite: a nil function, codec or claim is ErrInvalidArgument
// before anything is written; a non-string key value on an owned scope is ErrInvalidKey, not a
// panic.
func TestBadArgumentsNeverPanicOrWrite(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "bad-args")
	_, err := s.ExecuteOnce(ctx, key, nil)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	ran := false
	_, _, err = Execute[string](ctx, s, key, nil, func(context.Context) (string, error) { ran = true; return "", nil })
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.False(t, ran, "a nil codec is refused before the function runs")
	_, _, err = Execute[string](ctx, nil, key, JSON[string]{}, func(context.Context) (string, error) { return "", nil })
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.ErrorIs(t, s.Complete(ctx, nil, nil), ErrInvalidArgument)
	assert.ErrorIs(t, s.Fail(ctx, nil, nil), ErrInvalidArgument)
	assert.ErrorIs(t, s.Release(ctx, nil, nil), ErrInvalidArgument)
	assert.ErrorIs(t, s.Renew(ctx, nil), ErrInvalidArgument)
	_, err = s.Get(ctx, key)
	assert.ErrorIs(t, err, ErrNotFound, "nothing was written")
	_, err = NewStore(nil, IdempotencyKeys("ks"))
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewStore(s.session, IdempotencyKeys("ks"), WithClock(nil))
	assert.ErrorIs(t, err, ErrInvalidOption)

	pre := newNamespacePreCheck(t, "owned")
	require.NoError(t, s.Own(ctx, Key{"owned"}, 1, pre, func(context.Context, func(string, time.Time) error) error { return nil }))
	defer s.Disown(Key{"owned"})
	assert.NotPanics(t, func() {
		_, err = s.ExecuteOnce(ctx, Key{"owned", 42}, func(context.Context) ([]byte, error) { return nil, nil })
	})
	assert.ErrorIs(t, err, ErrInvalidKey)
	assert.ErrorIs(t, s.Own(ctx, Key{"owned"}, 2, nil, nil), ErrInvalidArgument)
}

// TestClaimReadableWhileRenewing reads the claim fn sees while its lease is renewed several
// times (run with -race): each read is a consistent copy, and the lease it shows only moves
// forward. The lease is 3 s, renewed every second: a 1 s lease left a renewal a third of a
// second, which a loaded CI run's node once took longer than, and the run lost its lease.
func TestClaimReadableWhileRenewing(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t, WithLease(3*time.Second))
	ctx := ctxT(t)
	var leases []time.Time
	_, err := s.ExecuteOnce(ctx, IdempotencyKey("tenant", "renewing"), func(ctx context.Context) ([]byte, error) {
		deadline := time.Now().Add(3500 * time.Millisecond) // three renewals
		for time.Now().Before(deadline) {
			c, ok := ClaimFromContext(ctx)
			if !ok {
				return nil, errors.New("no claim in ctx")
			}
			leases = append(leases, c.LeaseUntil)
			time.Sleep(5 * time.Millisecond)
		}
		return []byte("v"), nil
	})
	require.NoError(t, err)
	distinct := 0
	for i := 1; i < len(leases); i++ {
		require.False(t, leases[i].Before(leases[i-1]), "the lease never moves back")
		if !leases[i].Equal(leases[i-1]) {
			distinct++
		}
	}
	assert.GreaterOrEqual(t, distinct, 2, "fn saw the lease renewed")
}

// TestCacheKeyEncoding: integers of every supported type encode alike (they bind the same
// bigint), strings and integers never collide, and unsupported values are reported.
func TestCacheKeyEncoding(t *testing.T) {
	assert.Equal(t, cacheKey(Key{"a", 5}), cacheKey(Key{"a", int64(5)}))
	assert.Equal(t, cacheKey(Key{int32(-7)}), cacheKey(Key{-7}))
	assert.NotEqual(t, cacheKey(Key{"5"}), cacheKey(Key{5}))
	assert.NotEqual(t, cacheKey(Key{"ab", "c"}), cacheKey(Key{"a", "bc"}))
	_, ok := appendCacheKey(nil, Key{"a", 1.5})
	assert.False(t, ok)
	_, ok = appendCacheKey(nil, Key{"a", 1})
	assert.True(t, ok)
}
