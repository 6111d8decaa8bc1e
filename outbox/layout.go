package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/cas"
)

// The tables of 015_outbox_durable.cql (outbox_layout's key_order: 020_outbox_key_order.cql). They keep their names whatever WithTables says: their
// rows are keyed by the intents table's name, so outboxes of several names share them.
const (
	layoutTable = "outbox_layout"
	parkedTable = "outbox_parked"
)

// Layout is what stagers, relays and admins of one intents table must agree on, as stored in
// outbox_layout by the first of them.
type Layout struct {
	Shards   int
	Bucket   time.Duration
	Horizon  time.Duration
	KeyOrder bool // WithKeyOrder: intents in the shard of their events' key, published in key order
}

func (c config) layout() Layout {
	return Layout{Shards: c.shards, Bucket: c.bucket, Horizon: c.horizon, KeyOrder: c.keyOrder}
}

// layoutGuard checks the configured layout against the stored one once per instance: the
// first check that succeeds is kept, a failed one is tried again by the next call.
type layoutGuard struct {
	mu           sync.Mutex
	done         bool
	key          string // the intents table's name
	read, insert string
	// since is the stored layout's recorded_at (zero if it has none): no stager wrote an
	// intent of this table before it, as every stager checks the layout first.
	since time.Time
}

func newLayoutGuard(cfg config) *layoutGuard {
	return &layoutGuard{key: cfg.intents,
		read:   "SELECT shards, bucket_seconds, horizon_seconds, key_order, recorded_at FROM " + cfg.q.layout + " WHERE intents = ?",
		insert: "INSERT INTO " + cfg.q.layout + " (intents, shards, bucket_seconds, horizon_seconds, key_order, recorded_at) VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS",
	}
}

// ensure checks cfg's layout against the stored one. A writer (store) records it when none is
// stored; an admin (adopt) takes the stored one for each setting its options left at the
// default and returns the config to use.
func (g *layoutGuard) ensure(ctx context.Context, session *gocql.Session, cfg *config, store, adopt bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return nil
	}
	stored, since, found, err := g.load(ctx, session, *cfg)
	if err != nil {
		return err
	}
	if !found && store {
		want, now := cfg.layout(), cfg.now()
		applied, row, err := cas.InsertIfNotExists(ctx, session.Query(g.insert, g.key, want.Shards,
			int(want.Bucket/time.Second), int(want.Horizon/time.Second), want.KeyOrder, now).Consistency(cfg.consistency), cfg.serial)
		if err != nil {
			return fmt.Errorf("outbox: record layout: %w", err)
		}
		since = now
		if !applied { // another one recorded it meanwhile
			stored, found, since = layoutOf(row), true, recordedAt(row)
		}
	}
	if found {
		if adopt {
			if !cfg.shardsSet {
				cfg.shards, cfg.maxShards = stored.Shards, max(cfg.maxShards, stored.Shards)
			}
			if !cfg.bucketSet {
				cfg.bucket = stored.Bucket
			}
			if !cfg.horizonSet {
				cfg.horizon = stored.Horizon
			}
			if !cfg.keyOrderSet {
				cfg.keyOrder = stored.KeyOrder
			}
		}
		if err := compareLayout(g.key, stored, cfg.layout()); err != nil {
			return err
		}
	}
	g.done, g.since = true, since
	return nil
}

// load reads the stored layout and when it was recorded.
func (g *layoutGuard) load(ctx context.Context, session *gocql.Session, cfg config) (Layout, time.Time, bool, error) {
	m := map[string]any{}
	err := session.Query(g.read, g.key).WithContext(ctx).Consistency(cfg.consistency).MapScan(m)
	if errors.Is(err, gocql.ErrNotFound) {
		return Layout{}, time.Time{}, false, nil
	}
	if err != nil {
		return Layout{}, time.Time{}, false, fmt.Errorf("outbox: read layout: %w", err)
	}
	return layoutOf(m), recordedAt(m), true, nil
}

func layoutOf(row map[string]any) Layout {
	shards, _ := row["shards"].(int)
	bucket, _ := row["bucket_seconds"].(int)
	horizon, _ := row["horizon_seconds"].(int)
	keyOrder, _ := row["key_order"].(bool) // null in a layout stored before 020_outbox_key_order.cql: off
	return Layout{Shards: shards, Bucket: time.Duration(bucket) * time.Second, Horizon: time.Duration(horizon) * time.Second,
		KeyOrder: keyOrder}
}

// recordedAt is a layout row's recorded_at, zero when it has none.
func recordedAt(row map[string]any) time.Time {
	t, _ := row["recorded_at"].(time.Time)
	return t
}

// recorded returns when the layout was first stored (zero if unknown), once ensure succeeded.
func (g *layoutGuard) recorded() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.since
}

// compareLayout is nil when configured matches stored, else an ErrLayoutMismatch naming each
// setting that differs (and ErrShardCountChanged for the shard count).
func compareLayout(table string, stored, configured Layout) error {
	var errs []error
	if stored.Shards != configured.Shards {
		errs = append(errs, fmt.Errorf("%w: shards: stored %d, configured %d", ErrShardCountChanged, stored.Shards, configured.Shards))
	}
	if stored.Bucket != configured.Bucket {
		errs = append(errs, fmt.Errorf("bucket: stored %v, configured %v", stored.Bucket, configured.Bucket))
	}
	if stored.Horizon != configured.Horizon {
		errs = append(errs, fmt.Errorf("horizon: stored %v, configured %v", stored.Horizon, configured.Horizon))
	}
	if stored.KeyOrder != configured.KeyOrder {
		errs = append(errs, fmt.Errorf("key order (WithKeyOrder): stored %v, configured %v", stored.KeyOrder, configured.KeyOrder))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w (outbox_layout of %s): %w", ErrLayoutMismatch, table, errors.Join(errs...))
}
