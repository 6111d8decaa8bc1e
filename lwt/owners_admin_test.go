package lwt

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestForgetOwnersRepairsAnEpochThatWentBack: a scope whose epoch went back is listed with its
// epoch and no live lease; a dry run changes nothing; forgetting deletes it (and keeps a scope
// whose lease is live), after which Own at the small epoch takes it.
func TestForgetOwnersRepairsAnEpochThatWentBack(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, session, ks := newTestStore(t)
	// A long lease: the held scope's must stay live however slowly a loaded machine renews it.
	s := ownerStores(t, session, ks, 2, WithOwnership(30*time.Second, 5*time.Second))
	a, b := s[0], s[1]
	stale, held := Key{"tenant-reset"}, Key{"tenant-held"}
	require.NoError(t, a.Own(ctx, stale, 9, newNamespacePreCheck(t, "a"), noKeys))
	a.Disown(stale)
	require.NoError(t, a.Own(ctx, held, 9, newNamespacePreCheck(t, "a2"), noKeys))
	defer a.Disown(held)
	require.ErrorIs(t, b.Own(ctx, stale, 3, newNamespacePreCheck(t, "b"), noKeys), ErrEpochRegressed)

	var listed []Owner
	require.NoError(t, b.ListOwners(ctx, nil, func(o Owner) error { listed = append(listed, o); return nil }))
	require.Len(t, listed, 2)
	byScope := map[string]Owner{}
	for _, o := range listed {
		byScope[o.Scope[0].(string)] = o
	}
	require.Equal(t, int64(9), byScope["tenant-reset"].Epoch)
	require.False(t, byScope["tenant-reset"].Live())
	require.True(t, byScope["tenant-held"].Live())
	require.Equal(t, a.holder, byScope["tenant-held"].LeaseHolder)
	require.False(t, byScope["tenant-held"].Renewed.IsZero())

	var one []Owner
	require.NoError(t, b.ListOwners(ctx, Key{"tenant-held"}, func(o Owner) error { one = append(one, o); return nil }))
	require.Len(t, one, 1, "a prefix selects")

	dry, err := b.ForgetOwners(ctx, nil, true)
	require.NoError(t, err)
	require.Len(t, dry, 2)
	require.ErrorIs(t, b.Own(ctx, stale, 3, newNamespacePreCheck(t, "b"), noKeys), ErrEpochRegressed, "a dry run deletes nothing")

	done, err := b.ForgetOwners(ctx, nil, false)
	require.NoError(t, err)
	forgotten := map[string]bool{}
	for _, o := range done {
		forgotten[o.Scope[0].(string)] = o.Forgotten
	}
	require.Equal(t, map[string]bool{"tenant-reset": true, "tenant-held": false}, forgotten, "a live lease is kept")
	require.NoError(t, b.Own(ctx, stale, 3, newNamespacePreCheck(t, "b"), noKeys), "forgotten: the small epoch takes it")
	b.Disown(stale)
	_, err = a.ExecuteOnce(ctx, IdempotencyKey("tenant-held", "k"), func(context.Context) ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Stats().FastPath, "the held scope's owner kept it")
}

// TestScopeEncodingReadsBack: the owners table's scope encoding decodes to the key's values,
// integers as int64, and bytes it did not make are refused.
func TestScopeEncodingReadsBack(t *testing.T) {
	k := Key{"group", "topic", int32(7)}
	got, ok := decodeCacheKey([]byte(cacheKey(k)))
	require.True(t, ok)
	require.Equal(t, Key{"group", "topic", int64(7)}, got)
	for _, bad := range []string{"", "x", "s\x05ab", "i\x00\x01"} {
		_, ok := decodeCacheKey([]byte(bad))
		require.False(t, ok, "%q", bad)
	}
}
