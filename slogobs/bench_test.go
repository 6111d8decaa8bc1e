package slogobs_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/slogobs"
)

// BenchmarkObserve measures an observation below the handler's level (the usual case for
// routine LWTs) and one that is written, as JSON to io.Discard.
func BenchmarkObserve(b *testing.B) {
	o, err := slogobs.New(slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})), "orders")
	if err != nil {
		b.Fatal(err)
	}
	key := lwt.IdempotencyKey("tenant-1", "k-1")
	for name, ob := range map[string]lwt.Observation{
		"below-level": {Kind: lwt.ObservedLWT, Key: key, Op: "claim", Applied: true, Latency: 2 * time.Millisecond},
		"written":     {Kind: lwt.ObservedTakeover, Key: key},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				o.Observe(ob)
			}
		})
	}
}
