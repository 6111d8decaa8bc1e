package lwt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/cas"
)

// Owner is one scope of the store's record table in the owners table (see Own), as an operator
// sees it.
type Owner struct {
	Scope Key // the scope's key values; integers read back as int64
	// Epoch and Holder are the last Own's: only a greater epoch, or a new holder at this one
	// once the lease is gone, takes the scope.
	Epoch  int64
	Holder gocql.UUID
	// LeaseHolder is the holder whose lease is live on the server; zero when none is.
	LeaseHolder gocql.UUID
	// Renewed is when the epoch and holder were last written (the last Own or renewal).
	Renewed time.Time
	// Forgotten reports, in ForgetOwners' answer, that the row was deleted (or would be, for
	// a dry run); false for a row whose lease was live, which is kept.
	Forgotten bool
}

// Live reports whether a holder's lease is live on the server.
func (o Owner) Live() bool { return o.LeaseHolder != (gocql.UUID{}) }

// ListOwners calls yield with every scope of the store's record table that the owners table
// records and whose key values start with prefix (Key{group} for a consumer group's partitions;
// an empty prefix for all), in no particular order. It reads the whole owners table, one row per
// scope ever owned within the row's TTL, at the store's consistency. An error from yield stops
// the listing and is returned.
func (s *Store) ListOwners(ctx context.Context, prefix Key, yield func(Owner) error) error {
	if err := s.checkCall(ctx); err != nil {
		return err
	}
	if yield == nil {
		return fmt.Errorf("%w: nil yield", ErrInvalidArgument)
	}
	want, ok := appendCacheKey(nil, prefix)
	if !ok || len(prefix) >= len(s.keyCols) {
		return &KeyError{Column: "scope", Reason: fmt.Sprintf("a prefix of the scope's %d values, strings or integers", len(s.keyCols)-1)}
	}
	iter := s.session.Query(s.own.list).WithContext(ctx).Consistency(s.cfg.commit).Iter()
	rt := s.ownerTable()
	for {
		row := map[string]any{}
		if !iter.MapScan(row) {
			break
		}
		scope, _ := row["scope"].([]byte)
		if row["record_table"] != rt || !bytes.HasPrefix(scope, want) {
			continue
		}
		key, ok := decodeCacheKey(scope)
		if !ok {
			continue // not a scope this package wrote
		}
		o := Owner{Scope: key, Epoch: get[int64](row, "epoch"), Holder: get[gocql.UUID](row, "holder"),
			LeaseHolder: get[gocql.UUID](row, "lease_holder")}
		if w := get[int64](row, "renewed"); w > 0 {
			o.Renewed = time.UnixMicro(w)
		}
		if err := yield(o); err != nil {
			_ = iter.Close()
			return err
		}
	}
	return iter.Close()
}

// ForgetOwners deletes the owners table's rows of the scopes ListOwners(prefix) yields, so the
// next Own of each takes it at any epoch: the repair of ErrEpochRegressed (the group's epochs
// went back). A row whose lease is live is kept (its holder owns the scope now; a conditional
// delete, at SERIAL, so one taken meanwhile is kept too). With dry, nothing is deleted: the
// answer says what would be. Delete only once no process of the old epochs runs: a row forgotten
// no longer tells such a process it was superseded, so it may take the scope back until a newer
// owner's Own takes it from it (nothing runs twice: the lease still fences each owner).
func (s *Store) ForgetOwners(ctx context.Context, prefix Key, dry bool) ([]Owner, error) {
	var out []Owner
	err := s.ListOwners(ctx, prefix, func(o Owner) error {
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rt := s.ownerTable()
	for i := range out {
		o := &out[i]
		if o.Live() {
			continue
		}
		if dry {
			o.Forgotten = true
			continue
		}
		enc, _ := appendCacheKey(nil, o.Scope)
		applied, row, err := cas.Exec(ctx, s.session.Query(s.own.forget, rt, enc), ownerSerial)
		if err != nil {
			return out, s.ownerErr(err)
		}
		o.Forgotten = applied
		if !applied {
			o.LeaseHolder = get[gocql.UUID](row, "lease_holder")
		}
	}
	return out, nil
}

// decodeCacheKey reads back a key that appendCacheKey encoded; ok is false for bytes it did not
// make.
func decodeCacheKey(b []byte) (k Key, ok bool) {
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		switch tag {
		case 's':
			n, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return nil, false
			}
			k = append(k, string(b[w:w+int(n)]))
			b = b[w+int(n):]
		case 'i':
			if len(b) < 8 {
				return nil, false
			}
			k = append(k, int64(binary.BigEndian.Uint64(b)))
			b = b[8:]
		default:
			return nil, false
		}
	}
	return k, len(k) > 0
}
