package lwt_test

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestStoreOptionsDoNotCompileWithABatchStore: the options a Store alone uses (its cache, its
// ownership of scopes, the fast path's recorder) passed to NewBatchStore are type errors, not
// options silently ignored. The shared options, and each constructor's own, type-check with
// every constructor that takes them, so the harness itself is shown to work.
func TestStoreOptionsDoNotCompileWithABatchStore(t *testing.T) {
	t.Parallel()
	typecheck.Rejects(t, []string{"time", "github.com/cassdedup/cassdedup/lwt"}, []string{
		"lwt.NewStore(nil, lwt.Table{}, lwt.WithLease(time.Minute), lwt.WithCache(10), lwt.WithOwnership(10*time.Second, 3*time.Second))",
		"lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithLease(time.Minute), lwt.WithRetention(time.Hour))",
		"shared := []lwt.Option{lwt.WithLease(time.Minute)}",
		"var store []lwt.StoreOption",
		"for _, o := range shared {\n\t\tstore = append(store, o)\n\t}",
		"lwt.NewStore(nil, lwt.Table{}, append(store, lwt.WithWriteRequestTimeout(time.Second))...)",
		"lwt.NewBatchStore(nil, lwt.BatchTable{}, shared...)",
	}, map[string]string{
		"cache":                 "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithCache(10))",
		"ownership":             "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithOwnership(10*time.Second, 3*time.Second))",
		"write request timeout": "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithWriteRequestTimeout(time.Second))",
		"owners table":          "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithOwnersTable(\"owners\"))",
		"recorder":              "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithRecorder(nil))",
		"a store's slice":       "lwt.NewBatchStore(nil, lwt.BatchTable{}, []lwt.StoreOption{lwt.WithLease(time.Minute)}...)",
	})
}
