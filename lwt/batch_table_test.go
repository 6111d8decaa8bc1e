package lwt

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecideFollowsTheStateMachine(t *testing.T) {
	fp := []byte("fp")
	rec := func(s Status) *Record { return &Record{Status: s, Fingerprint: fp} }
	cases := []struct {
		cur       *Record
		fp        []byte
		leaseLive bool
		want      decision
	}{
		{nil, fp, false, decideInsert},
		{rec(StatusCompleted), []byte("other"), false, decideKeyReuse},
		{rec(StatusCompleted), fp, true, decideReplay},
		{rec(StatusFailed), fp, false, decideReplay},
		{rec(StatusStarted), fp, true, decideInProgress},
		{rec(StatusStarted), fp, false, decideTakeover},
		{rec(StatusReleased), fp, true, decideTakeover},
		{&Record{Status: StatusCompleted}, nil, false, decideReplay}, // an empty blob equals no fingerprint
	}
	for i, c := range cases {
		assert.Equal(t, c.want, decide(c.cur, c.fp, c.leaseLive), "case %d", i)
	}
}

func TestBatchTableValidation(t *testing.T) {
	ok := BatchTable{Keyspace: "ks", Name: "t", PartitionColumns: []string{"p", "w"}, KeyColumn: "k"}
	st, err := ok.validate()
	require.NoError(t, err)
	assert.Contains(t, st.read, `WHERE "p" = ? AND "w" = ? AND "k" IN ?`)
	assert.True(t, strings.HasSuffix(st.takeover, "IF owner = ? AND fence = ? AND status = 'STARTED' AND lease_owner = null"))
	for _, bad := range []BatchTable{
		{Keyspace: "ks", Name: "t", KeyColumn: "k"},
		{Keyspace: "ks", Name: "t", PartitionColumns: []string{"p"}, KeyColumn: "status"},
		{Keyspace: "ks", Name: "t", PartitionColumns: []string{"p", "p"}, KeyColumn: "k"},
		{Keyspace: "ks", Name: "t", PartitionColumns: []string{"lease_owner"}, KeyColumn: "k"},
		{Keyspace: "k-s", Name: "t", PartitionColumns: []string{"p"}, KeyColumn: "k"},
		{Keyspace: "ks", Name: "t", PartitionColumns: []string{"p"}, KeyColumn: `k"`},
	} {
		_, err := bad.validate()
		assert.Error(t, err, "%+v", bad)
	}
}

func TestValidateItemsRejectsBadBatches(t *testing.T) {
	many := make([]BatchItem, MaxBatchRows+1)
	for i := range many {
		many[i].Key = strings.Repeat("k", i+1)
	}
	assert.ErrorIs(t, validateItems("k", nil, 255), ErrInvalidArgument)
	assert.ErrorIs(t, validateItems("k", many, 255), ErrInvalidArgument)
	assert.NoError(t, validateItems("k", many[:MaxBatchRows], 255))
	assert.ErrorIs(t, validateItems("k", []BatchItem{{Key: "a"}, {Key: "a"}}, 255), ErrInvalidKey)
	assert.ErrorIs(t, validateItems("k", []BatchItem{{Key: ""}}, 255), ErrInvalidKey)
	assert.ErrorIs(t, validateItems("k", []BatchItem{{Key: "\xff"}}, 255), ErrInvalidKey)
	assert.ErrorIs(t, validateItems("k", []BatchItem{{Key: "a", Fingerprint: make([]byte, 2000)}}, 255), ErrInvalidKey)
}

func FuzzValidateItems(f *testing.F) {
	f.Add("a", "b", []byte("fp"))
	f.Add("", "x", []byte(nil))
	f.Add("same", "same", []byte{})
	f.Add("\xff", "ok", []byte("x"))
	f.Fuzz(func(t *testing.T, a, b string, fp []byte) {
		err := validateItems("k", []BatchItem{{Key: a, Fingerprint: fp}, {Key: b}}, 64)
		valid := a != "" && b != "" && a != b && len(a) <= 64 && len(b) <= 64 && utf8Valid(a) && utf8Valid(b) && len(fp) <= maxFingerprint
		if valid != (err == nil) {
			t.Fatalf("validateItems(%q, %q, %d bytes) = %v", a, b, len(fp), err)
		}
	})
}
