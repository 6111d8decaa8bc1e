package guard

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/textcheck"
	"github.com/cassdedup/cassdedup/lwt"
)

// Owner is a partition of a consumer group as the owners table records it (see Own).
type Owner struct {
	Scope Scope
	// Epoch and Holder are the last Own's (the generation the partition was assigned at, and
	// the guard that owned it).
	Epoch  int64
	Holder gocql.UUID
	// LeaseHolder is the guard whose lease is live on the server; zero when none is.
	LeaseHolder gocql.UUID
	Renewed     time.Time // when the epoch and holder were last written
	// Forgotten reports, in ForgetOwners' answer, that the row was deleted (or would be).
	Forgotten bool
}

// Live reports whether a guard's lease on the partition is live on the server.
func (o Owner) Live() bool { return o.LeaseHolder != (gocql.UUID{}) }

// ListOwners calls yield with each partition of group the owners table records (lwt
// Store.ListOwners): what Own took, at which epoch, and whether a lease is live.
func (g *Guard) ListOwners(ctx context.Context, group string, yield func(Owner) error) error {
	if err := g.checkCall(ctx); err != nil {
		return err
	}
	if err := textcheck.Check(ErrInvalidMessage, "group", group, MaxMessageField); err != nil {
		return err
	}
	if yield == nil {
		return fmt.Errorf("%w: nil yield", lwt.ErrInvalidArgument)
	}
	return g.store.ListOwners(ctx, lwt.Key{group}, func(o lwt.Owner) error {
		if v, ok := ownerOf(o); ok {
			return yield(v)
		}
		return nil
	})
}

// ForgetOwners deletes the owners table's rows of group's partitions that no guard holds a live
// lease on (lwt Store.ForgetOwners), so the next Own of each takes it at any epoch: the repair
// when the group's generations went back (lwt.ErrEpochRegressed: the group was deleted or
// expired and made again, moved to another cluster, or switched to KIP-848). With dry it
// deletes nothing and says what it would. Run it once no consumer of the group's old
// generations runs (docs/operating.md).
func (g *Guard) ForgetOwners(ctx context.Context, group string, dry bool) ([]Owner, error) {
	if err := g.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := textcheck.Check(ErrInvalidMessage, "group", group, MaxMessageField); err != nil {
		return nil, err
	}
	owners, err := g.store.ForgetOwners(ctx, lwt.Key{group}, dry)
	out := make([]Owner, 0, len(owners))
	for _, o := range owners {
		if v, ok := ownerOf(o); ok {
			out = append(out, v)
		}
	}
	if err != nil {
		return out, fmt.Errorf("guard: forget the owners of %q: %w", group, err)
	}
	return out, nil
}

// ownerOf is o as a partition; ok is false for a row that is not one of the guard's scopes.
func ownerOf(o lwt.Owner) (Owner, bool) {
	if len(o.Scope) != 3 {
		return Owner{}, false
	}
	group, ok1 := o.Scope[0].(string)
	topic, ok2 := o.Scope[1].(string)
	p, ok3 := o.Scope[2].(int64)
	if !ok1 || !ok2 || !ok3 {
		return Owner{}, false
	}
	return Owner{Scope: Scope{Group: group, Topic: topic, Partition: int32(p)}, Epoch: o.Epoch, Holder: o.Holder,
		LeaseHolder: o.LeaseHolder, Renewed: o.Renewed, Forgotten: o.Forgotten}, true
}
