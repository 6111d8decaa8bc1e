//go:build cluster

package clustertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/lwt"
)

// TestOwnersAcrossDatacentres: stores in the two datacentres, each with its datacentre's
// sessions at LOCAL_QUORUM and LOCAL_SERIAL (what cqlsession.WithLocalDC chooses), race to own
// the same scopes at one epoch. Ownership is decided at SERIAL whatever the stores use, so a
// scope never has two live owners: with the datacentres connected, and with them cut apart,
// when only dc1 (two of the three replicas) can reach SERIAL and dc2's Own is refused with
// lwt.ErrSerialUnavailable. At LOCAL_SERIAL, each datacentre decided alone: cut apart, both
// owned every scope. How many scopes a race owns is availability: reported, not asserted.
//
// Both Owns of a scope may succeed one after the other: a winner whose renewals are lost under
// the race's contention lets its lease cell expire, and the other, still trying at the same
// epoch, takes the scope over as it would from a restarted process (Store.Own). The first
// winner's fast path stopped a margin before its cell expired, and its next renewal finds the
// scope taken; so each scope is probed through both winners after the race, and at most one
// may run a call (the other gets lwt.ErrNoLease).
func TestOwnersAcrossDatacentres(t *testing.T) {
	c := newCluster(t)
	ks := c.keyspace("cluster_owners", threeReplicas)
	sessions := map[string]*gocql.Session{"dc1": c.session(c.dcConfig("dc1")), "dc2": c.session(c.dcConfig("dc2"))}
	stores := map[string]*lwt.Store{}
	for dc, s := range sessions {
		st, err := lwt.NewStore(s, lwt.IdempotencyKeys(ks), lwt.WithConsistency(gocql.LocalQuorum),
			lwt.WithSerialConsistency(gocql.LocalSerial), lwt.WithOwnership(3*time.Second, 1500*time.Millisecond))
		require.NoError(t, err)
		stores[dc] = st
	}
	connected := raceOwners(t, stores, "connected", 20)
	owned := 0
	for scope, won := range connected.won {
		assert.LessOrEqual(t, len(connected.live[scope]), 1, "connected: %s has one live owner at most: %v of %v", scope, connected.live[scope], won)
		owned += len(won)
	}
	// How many scopes the race owned is availability, reported by raceOwners: under contention
	// most Owns may end unknown (a run owned 9 of 20). One owned scope is enough to show the
	// check above is not empty.
	assert.Positive(t, owned, "connected: the race owned a scope, so that the check of its owners is not empty")

	c.run("cut", "1", "3")
	c.run("cut", "2", "3")
	detected(t, c, ks, "the other datacentre down", seen{c.nodes[0], 2}, seen{c.nodes[1], 2}, seen{c.nodes[2], 1})
	apart := raceOwners(t, stores, "apart", 5)
	owned = 0
	for scope, won := range apart.won {
		assert.NotContains(t, won, "dc2", "cut apart: %s is not owned from dc2, which cannot reach SERIAL", scope)
		owned += len(won)
	}
	assert.Positive(t, owned, "cut apart: dc1 (two of the three replicas) owns scopes")
	assert.Equal(t, 5, apart.refused["dc2: serial unavailable"], "cut apart: dc2's Own is refused with lwt.ErrSerialUnavailable: %v", apart.refused)
	c.run("heal")
}

// race is what raceOwners saw: the datacentres whose Own of each scope succeeded, those of them
// whose store still ran a call of the scope after the race (live), and the refusals by
// datacentre and kind.
type race struct {
	won, live map[string][]string
	refused   map[string]int
}

// raceOwners makes each store Own n scopes named by label at epoch 1, all at once, probes the
// winners (liveOwners) and logs what it saw. Every owner disowns at the end.
func raceOwners(t *testing.T, stores map[string]*lwt.Store, label string, n int) race {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	won := map[string][]string{}
	refused := map[string]int{}
	var wg sync.WaitGroup
	for i := range n {
		won[fmt.Sprintf("%s-%d", label, i)] = nil // a scope nobody owned shows in the report too
	}
	for i := range n {
		scope := fmt.Sprintf("%s-%d", label, i)
		for dc, st := range stores {
			pre, err := bloom.NewPreCheck(dc+scope, bloom.WithRetention(lwt.DefaultRetention+time.Hour))
			require.NoError(t, err)
			wg.Go(func() {
				err := st.Own(ctx, lwt.Key{scope}, 1, pre, func(context.Context, func(string, time.Time) error) error { return nil })
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won[scope] = append(won[scope], dc)
				case errors.Is(err, lwt.ErrSuperseded):
					refused[dc+": superseded"]++
				case errors.Is(err, lwt.ErrSerialUnavailable):
					refused[dc+": serial unavailable"]++
				case errors.Is(err, lwt.ErrOutcomeUnknown):
					refused[dc+": outcome unknown"]++
				default:
					refused[dc+": "+err.Error()]++
				}
			})
		}
	}
	wg.Wait()
	live, probes := liveOwners(ctx, stores, won)
	for scope, dcs := range won {
		for _, dc := range dcs {
			stores[dc].Disown(lwt.Key{scope})
		}
	}
	owners, byLive := map[int]int{}, map[int]int{}
	for scope, dcs := range won {
		owners[len(dcs)]++
		byLive[len(live[scope])]++
	}
	t.Logf("REPORT owners %s: %d scopes raced from both datacentres at LOCAL_SERIAL: scopes by number of owners %v, "+
		"by number of live owners after the race %v (probes %v); refusals %v", label, n, owners, byLive, probes, refused)
	return race{won: won, live: live, refused: refused}
}

// liveOwners runs a call of a new key of each won scope through each of its winners: a store
// whose lease lapsed refuses it with lwt.ErrNoLease before anything is sent, one whose lease is
// live runs it on the fast path. A probe that ends in any other error passed that lease check
// too, so it counts as live: the check of one live owner cannot pass because a probe timed out
// (only a probe sent after the race's deadline is left undecided).
// It returns the live winners by scope, and how the probes ended.
func liveOwners(ctx context.Context, stores map[string]*lwt.Store, won map[string][]string) (map[string][]string, map[string]int) {
	live, probes := map[string][]string{}, map[string]int{}
	for scope, dcs := range won {
		for _, dc := range dcs {
			_, err := stores[dc].ExecuteOnce(ctx, lwt.Key{scope, "probe-" + dc}, func(context.Context) ([]byte, error) { return nil, nil })
			switch {
			case errors.Is(err, lwt.ErrNoLease):
				probes["no lease"]++
				continue
			case ctx.Err() != nil: // the race's deadline passed: the probe may not have begun
				probes["undecided: "+err.Error()]++
				continue
			case err == nil:
				probes["ran"]++
			default:
				probes["error after the lease check: "+err.Error()]++
			}
			live[scope] = append(live[scope], dc)
		}
	}
	return live, probes
}
