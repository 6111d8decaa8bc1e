package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

func TestCatalogNamesAreUniqueAndComplete(t *testing.T) {
	catalog := Catalog()
	require.NotEmpty(t, catalog)
	assert.Equal(t, Baseline, catalog[0].Name, "the floor comes first in every table")
	seen := map[string]bool{}
	for _, s := range catalog {
		assert.False(t, seen[s.Name], "%s registered twice", s.Name)
		seen[s.Name] = true
		assert.NotEmpty(t, s.Description, s.Name)
		assert.NotNil(t, s.New, s.Name)
		assert.NotContains(t, s.Name, ",", "names are listed comma-separated in -ops")
		// The namespace is a key value (a consumer group for guard): it must fit both limits.
		ns := Env{RunID: newRunID(time.Now())}.Namespace(s.Name)
		assert.LessOrEqual(t, len(ns), min(lwt.DefaultMaxKeyLength, guard.MaxMessageField))
	}
	for _, want := range []string{"insert", "lwt-new", "lwt-dup", "once-new", "once-commit-new", "once-commit-outbox", "once-dup-node", "once-dup-cache", "guard", "bloom", "http-bare", "http-new", "http-dup"} {
		assert.True(t, seen[want], "%s is in the catalog", want)
	}
}

func TestPoolIndexVisitsEveryKey(t *testing.T) {
	for _, w := range []int{0, 1, 63} {
		hit := make([]bool, duplicatePool)
		for seq := range duplicatePool {
			i := poolIndex(Request{Phase: 2, Worker: w, Seq: seq})
			require.GreaterOrEqual(t, i, 0)
			require.Less(t, i, duplicatePool)
			hit[i] = true
		}
		assert.NotContains(t, hit, false, "worker %d's requests visit every pool key", w)
	}
}

func TestCheckFirstRun(t *testing.T) {
	assert.NoError(t, checkFirstRun(lwt.Result{Value: onceResult}))
	assert.ErrorIs(t, checkFirstRun(lwt.Result{Value: onceResult, Replay: true}), errUnexpectedOutcome)
	assert.ErrorIs(t, checkFirstRun(lwt.Result{Value: []byte("other")}), errUnexpectedOutcome)
}

func TestCheckReplay(t *testing.T) {
	node := lwt.Result{Value: onceResult, Replay: true}
	cache := lwt.Result{Value: onceResult, Replay: true, FromCache: true}
	assert.NoError(t, checkReplay(node, false))
	assert.NoError(t, checkReplay(cache, true))
	assert.ErrorIs(t, checkReplay(cache, false), errUnexpectedOutcome, "the node was to answer")
	assert.ErrorIs(t, checkReplay(node, true), errUnexpectedOutcome, "a cache miss is not a cache hit")
	assert.ErrorIs(t, checkReplay(lwt.Result{Value: onceResult}, false), errUnexpectedOutcome, "a duplicate that ran")
	assert.ErrorIs(t, checkReplay(lwt.Result{Value: []byte("x"), Replay: true}, false), errUnexpectedOutcome)
}

func TestCheckProcessed(t *testing.T) {
	assert.NoError(t, checkProcessed(guard.Processed, true))
	err := checkProcessed(guard.Duplicate, false)
	assert.ErrorIs(t, err, errUnexpectedOutcome)
	assert.True(t, strings.Contains(err.Error(), "duplicate"), err.Error())
	assert.ErrorIs(t, checkProcessed(guard.Processed, false), errUnexpectedOutcome)
}

func TestCheckHTTPAnswer(t *testing.T) {
	assert.NoError(t, checkHTTPAnswer(201, false, httpResponse, false))
	assert.NoError(t, checkHTTPAnswer(201, true, httpResponse, true))
	assert.ErrorIs(t, checkHTTPAnswer(201, false, httpResponse, true), errUnexpectedOutcome, "a duplicate that ran")
	assert.ErrorIs(t, checkHTTPAnswer(201, true, httpResponse, false), errUnexpectedOutcome, "a new key replayed")
	assert.ErrorIs(t, checkHTTPAnswer(409, false, []byte("{}"), false), errUnexpectedOutcome)
	assert.ErrorIs(t, checkHTTPAnswer(201, false, []byte("other"), false), errUnexpectedOutcome)
}

func TestUnexpectedOutcomeCountsAsError(t *testing.T) {
	// A wrong answer must never pass for a fast success, nor for a timeout.
	assert.Equal(t, outcomeError, classify(checkReplay(lwt.Result{}, false)))
	assert.Equal(t, outcomeError, classify(checkProcessed(guard.Duplicate, false)))
}

func TestSmallLatenciesAndRatiosStayReadable(t *testing.T) {
	assert.Equal(t, "0.004", ms(0.004), "a cache hit is shown to the microsecond")
	assert.Equal(t, "0.25", ms(0.25))
	assert.Equal(t, "0.005", ratio(0.005))
	assert.Equal(t, "<0.001", ratio(0.0004))
	assert.Equal(t, "2.37", ratio(2.37))
	assert.Equal(t, "-", ratio(0))
}
