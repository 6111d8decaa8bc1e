package slogobs_test

import (
	"log/slog"
	"os"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/slogobs"
)

// Give each store its own observer, named after it, on one logger:
//
//	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"), lwt.WithObserver(obs))
//	g, err := guard.New(session, guard.WithObserver(consumerObs))
func ExampleNew() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable example
			}
			return a
		},
	}))
	obs, err := slogobs.New(logger, "idempotency_keys")
	if err != nil {
		panic(err)
	}
	// What a store reports when a claim's response is lost and a takeover follows.
	obs.Observe(lwt.Observation{Kind: lwt.ObservedLWT, Key: lwt.IdempotencyKey("tenant-42", "charge-7f3a"), Op: "claim", Latency: 2 * time.Second})
	obs.Observe(lwt.Observation{Kind: lwt.ObservedTakeover, Key: lwt.IdempotencyKey("tenant-42", "charge-7f3a")})
	// Output:
	// level=WARN msg=lwt store=idempotency_keys key="[tenant-42 charge-7f3a]" op=claim applied=false latency=2s
	// level=WARN msg=takeover store=idempotency_keys key="[tenant-42 charge-7f3a]"
}
