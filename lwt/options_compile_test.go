package lwt_test

import (
	"strings"
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestStoreOptionsDoNotCompileWithABatchStore: the options a Store alone uses (its cache, its
// ownership of scopes, the fast path's recorder) passed to NewBatchStore are type errors, not
// options silently ignored. The shared options, and each constructor's own, type-check with
// every constructor that takes them, so the harness itself is shown to work.
func TestStoreOptionsDoNotCompileWithABatchStore(t *testing.T) {
	t.Parallel()
	files := typecheck.Load(t, "github.com/cassdedup/cassdedup/lwt", "time")
	const head = "package main\n\nimport (\n\t\"time\"\n\n\t\"github.com/cassdedup/cassdedup/lwt\"\n)\n\n" +
		"var _ = time.Hour\n\n"
	own := head + "func main() {\n" +
		"\tlwt.NewStore(nil, lwt.Table{}, lwt.WithLease(time.Minute), lwt.WithCache(10), lwt.WithOwnership(10*time.Second, 3*time.Second))\n" +
		"\tlwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithLease(time.Minute), lwt.WithRetention(time.Hour))\n" +
		"\tshared := []lwt.Option{lwt.WithLease(time.Minute)}\n" +
		"\tvar store []lwt.StoreOption\n" +
		"\tfor _, o := range shared {\n\t\tstore = append(store, o)\n\t}\n" +
		"\tlwt.NewStore(nil, lwt.Table{}, append(store, lwt.WithWriteRequestTimeout(time.Second))...)\n" +
		"\tlwt.NewBatchStore(nil, lwt.BatchTable{}, shared...)\n}\n"
	if errs := files.Check(t, own); len(errs) != 0 {
		t.Fatalf("each constructor's own options do not type-check: %v", errs)
	}
	for name, call := range map[string]string{
		"cache":                 "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithCache(10))",
		"ownership":             "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithOwnership(10*time.Second, 3*time.Second))",
		"write request timeout": "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithWriteRequestTimeout(time.Second))",
		"owners table":          "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithOwnersTable(\"owners\"))",
		"recorder":              "lwt.NewBatchStore(nil, lwt.BatchTable{}, lwt.WithRecorder(nil))",
		"a store's slice":       "lwt.NewBatchStore(nil, lwt.BatchTable{}, []lwt.StoreOption{lwt.WithLease(time.Minute)}...)",
	} {
		errs := files.Check(t, head+"func main() {\n\t"+call+"\n}\n")
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "cannot use") {
			t.Errorf("%s: %s type-checks (errors: %v); it must not compile", name, call, errs)
		}
	}
}
