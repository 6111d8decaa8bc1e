package outbox_test

import (
	"strings"
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestOptionsOfAnotherConstructorDoNotCompile: a relay's own option passed to New or NewAdmin,
// the stager's WithMaxSize passed to NewRelay or NewAdmin, and the relay group's name passed to
// New are type errors, not options silently ignored. The layout's options, and each
// constructor's own, type-check with every constructor that takes them, so the harness itself
// is shown to work.
func TestOptionsOfAnotherConstructorDoNotCompile(t *testing.T) {
	t.Parallel()
	files := typecheck.Load(t, "github.com/cassdedup/cassdedup/outbox", "time")
	const head = "package main\n\nimport (\n\t\"time\"\n\n\t\"github.com/cassdedup/cassdedup/outbox\"\n)\n\n" +
		"var _ = time.Hour\n\n"
	own := head + "func main() {\n" +
		"\toutbox.New(nil, outbox.WithShards(4), outbox.WithKeyOrder(), outbox.WithMaxSize(1024))\n" +
		"\toutbox.NewRelay(nil, nil, outbox.WithShards(4), outbox.WithPollInterval(time.Second), outbox.WithRelayName(\"r\"))\n" +
		"\toutbox.NewAdmin(nil, outbox.WithShards(4), outbox.WithRelayName(\"r\"))\n" +
		"\tshared := []outbox.Option{outbox.WithKeyspace(\"ks\"), outbox.WithBucket(time.Minute)}\n" +
		"\tvar relay []outbox.RelayOption\n" +
		"\tfor _, o := range shared {\n\t\trelay = append(relay, o)\n\t}\n" +
		"\toutbox.NewRelay(nil, nil, append(relay, outbox.WithRelayLease(time.Minute))...)\n}\n"
	if errs := files.Check(t, own); len(errs) != 0 {
		t.Fatalf("each constructor's own options do not type-check: %v", errs)
	}
	for name, call := range map[string]string{
		"relay option to New":          "outbox.New(nil, outbox.WithPollInterval(time.Second))",
		"relay lease to New":           "outbox.New(nil, outbox.WithRelayLease(time.Minute))",
		"relay option to NewAdmin":     "outbox.NewAdmin(nil, outbox.WithPublishBatch(10))",
		"relay name to New":            "outbox.New(nil, outbox.WithRelayName(\"r\"))",
		"stager option to NewRelay":    "outbox.NewRelay(nil, nil, outbox.WithMaxSize(1024))",
		"stager option to NewAdmin":    "outbox.NewAdmin(nil, outbox.WithMaxSize(1024))",
		"relay options as a New slice": "outbox.New(nil, []outbox.RelayOption{outbox.WithShards(4)}...)",
	} {
		errs := files.Check(t, head+"func main() {\n\t"+call+"\n}\n")
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "cannot use") {
			t.Errorf("%s: %s type-checks (errors: %v); it must not compile", name, call, errs)
		}
	}
}
