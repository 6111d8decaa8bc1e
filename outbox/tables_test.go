package outbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTablesNamed: an outbox whose tables have other names stages into them and its relay
// publishes from them; the default tables stay empty.
func TestTablesNamed(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	// The columns of schema/cql/010_outbox.cql, 012_guard_outbox.cql, 015_outbox_durable.cql and
	// 019_outbox_arrivals.cql and 020_outbox_key_order.cql, under other names.
	for _, stmt := range []string{
		`CREATE TABLE ` + e.ks + `.shop_intents (bucket bigint, shard int, namespace text, key text, fence bigint,
			owner uuid, staged_at timestamp, state text, settled_at timestamp, relay_fence bigint STATIC, record text,
			events blob, expires_at timestamp, committed boolean, attempts int, next_attempt timestamp, last_error text,
			order_key text, PRIMARY KEY ((bucket, shard), namespace, key, fence))`,
		`CREATE TABLE ` + e.ks + `.shop_relays (relay text, shard int, fingerprint blob, status text, owner uuid,
			fence bigint, lease_until timestamp, lease_owner uuid, attempts int, result blob, created_at timestamp,
			updated_at timestamp, expires_at timestamp, epoch bigint, shards int, frontier bigint, pending set<bigint>,
			PRIMARY KEY ((relay, shard)))`,
		`CREATE TABLE ` + e.ks + `.shop_arrivals (bucket bigint, shard int, staged_at timestamp, namespace text, key text,
			fence bigint, owner uuid, record text, expires_at timestamp, committed boolean, PRIMARY KEY ((bucket, shard), staged_at, namespace, key, fence))`,
	} {
		require.NoError(t, e.session.Query(stmt).WithContext(ctx).Exec())
	}
	e.opts = append(e.opts, WithTables("shop_intents", "shop_relays", "shop_arrivals"))
	box, err := New(e.session, with[StagerOption](e.opts)...)
	require.NoError(t, err)
	e.box = box

	_, err = e.placeOrder(ctx, "o-named", 2)
	require.NoError(t, err)
	pub := &recorder{}
	drain(t, ctx, e.relay(t, pub))
	assert.Len(t, pub.ids(), 2, "both events, published from the named tables")

	for _, table := range []string{DefaultIntentsTable, DefaultRelaysTable, DefaultArrivalsTable} {
		var n int
		require.NoError(t, e.session.Query("SELECT count(*) FROM "+e.ks+"."+table).WithContext(ctx).Scan(&n))
		assert.Zero(t, n, "%s is not used", table)
	}
	for _, table := range []string{"shop_relays", "shop_arrivals"} {
		var n int
		require.NoError(t, e.session.Query("SELECT count(*) FROM "+e.ks+"."+table).WithContext(ctx).Scan(&n))
		assert.Positive(t, n, "%s is used", table)
	}
}

// TestOptionsNameThemselves: every refused option says which it was, and matches ErrInvalidOption.
// The options of one constructor alone are converted to Option, so that New applies them all.
func TestOptionsNameThemselves(t *testing.T) {
	for want, o := range map[string]Option{
		`outbox: WithTables("intents", "no such", "arr"): `: WithTables("intents", "no such", "arr"),
		`outbox: WithRecordsTable(""): `:                    WithRecordsTable(""),
		`outbox: WithKeyspace("a-b"): `:                     WithKeyspace("a-b"),
		"outbox: WithShards(0): ":                           WithShards(0),
		"outbox: WithBucket(1.5s): ":                        WithBucket(1500 * time.Millisecond),
		"outbox: WithHorizon(1s): ":                         WithHorizon(time.Second),
		"outbox: WithRetention(0s): ":                       WithRetention(0),
		"outbox: WithRelayLease(10ms): ":                    Option(WithRelayLease(10 * time.Millisecond)),
		"outbox: WithPollInterval(0s): ":                    Option(WithPollInterval(0)),
		"outbox: WithMaxShards(0): ":                        Option(WithMaxShards(0)),
		`outbox: WithRelayName(""): `:                       Option(WithRelayName("")),
		"outbox: WithPublishBatch(0): ":                     Option(WithPublishBatch(0)),
		"outbox: WithMaxSize(0): ":                          Option(WithMaxSize(0)),
		"outbox: WithSerialConsistency(":                    WithSerialConsistency(gocql.SerialConsistency(1)),
		"outbox: WithConsistency(ONE): ":                    WithConsistency(gocql.One),
		"outbox: WithClock(nil): ":                          WithClock(nil),
		"outbox: WithPendingGrace(1m0s): ":                  WithPendingGrace(time.Minute),
		"outbox: WithPublishTimeout(10ms): ":                Option(WithPublishTimeout(10 * time.Millisecond)),
		"outbox: WithSlowPublish(0s): ":                     Option(WithSlowPublish(0)),
		"outbox: WithMaxAttempts(0): ":                      Option(WithMaxAttempts(0)),
		"outbox: WithPublishBackoff(0s, 1s): ":              Option(WithPublishBackoff(0, time.Second)),
		"outbox: WithArrivalLag(0s): ":                      Option(WithArrivalLag(0)),
		"outbox: WithLogger(nil): ":                         WithLogger(nil),
		"outbox: option 0: nil":                             nil,
	} {
		_, err := New(&gocql.Session{}, o)
		require.True(t, errors.Is(err, ErrInvalidOption), "%v", err)
		require.True(t, strings.HasPrefix(err.Error(), want), "%v does not begin %q", err, want)
	}
}
