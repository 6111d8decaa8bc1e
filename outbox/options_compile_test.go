package outbox_test

import (
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
	typecheck.Rejects(t, []string{"time", "github.com/cassdedup/cassdedup/outbox"}, []string{
		"outbox.New(nil, outbox.WithShards(4), outbox.WithKeyOrder(), outbox.WithMaxSize(1024))",
		"outbox.NewRelay(nil, nil, outbox.WithShards(4), outbox.WithPollInterval(time.Second), outbox.WithRelayName(\"r\"))",
		"outbox.NewAdmin(nil, outbox.WithShards(4), outbox.WithRelayName(\"r\"))",
		"shared := []outbox.Option{outbox.WithKeyspace(\"ks\"), outbox.WithBucket(time.Minute)}",
		"var relay []outbox.RelayOption",
		"for _, o := range shared {\n\t\trelay = append(relay, o)\n\t}",
		"outbox.NewRelay(nil, nil, append(relay, outbox.WithRelayLease(time.Minute))...)",
	}, map[string]string{
		"relay option to New":          "outbox.New(nil, outbox.WithPollInterval(time.Second))",
		"relay lease to New":           "outbox.New(nil, outbox.WithRelayLease(time.Minute))",
		"relay option to NewAdmin":     "outbox.NewAdmin(nil, outbox.WithPublishBatch(10))",
		"relay name to New":            "outbox.New(nil, outbox.WithRelayName(\"r\"))",
		"stager option to NewRelay":    "outbox.NewRelay(nil, nil, outbox.WithMaxSize(1024))",
		"stager option to NewAdmin":    "outbox.NewAdmin(nil, outbox.WithMaxSize(1024))",
		"relay options as a New slice": "outbox.New(nil, []outbox.RelayOption{outbox.WithShards(4)}...)",
	})
}
