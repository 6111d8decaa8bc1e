package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gocql/gocql"
)

// Round is one phase of the comparison of the two services, as Summary.Rounds lists them.
type Round struct {
	Service           string  `json:"service"` // "repeatable" (one Paxos round per new order) or "plain" (two)
	Accepted          int     `json:"accepted"`
	AcceptedSeconds   float64 `json:"accepted_seconds"`
	AcceptedPerS      float64 `json:"accepted_per_s"`
	Requests          int64   `json:"requests"`
	EffectsExact      bool    `json:"effects_exact"`
	Lost              int     `json:"lost"`
	DuplicatedEffects int     `json:"duplicated_effects"`
}

func roundOf(service string, p Summary) Round {
	return Round{Service: service, Accepted: p.Accepted, AcceptedSeconds: p.AcceptedSeconds, AcceptedPerS: p.AcceptedPerS,
		Requests: p.Requests, EffectsExact: p.EffectsExact, Lost: p.Lost, DuplicatedEffects: p.DuplicatedEffects}
}

// compare measures the plain service against the repeatable one in the order repeatable, plain,
// plain, repeatable: the first measured phase (s) is the first round, and three phases of
// cfg.plain orders follow. A node's speed drifts over a run (memtables fill and flush,
// compactions start), and the phase that ran later would pay for it alone; in this order a
// steady drift weighs on both services alike. The rates compared are pooled over each service's
// two rounds (orders accepted over the seconds that took). It returns the next order number.
func compare(ctx context.Context, session *gocql.Session, cfg config, next int, s *Summary, out io.Writer) (int, error) {
	s.Rounds = []Round{roundOf("repeatable", *s)}
	for _, plain := range []bool{true, true, false} {
		pc := cfg
		pc.orders, pc.first, pc.plainService = cfg.plain, next, plain
		next += cfg.plain
		name := map[bool]string{true: "plain", false: "repeatable"}[plain]
		fmt.Fprintf(out, "comparison round %d: %d orders on the %s service\n", len(s.Rounds)+1, pc.orders, name)
		p, err := runPhase(ctx, session, pc, false, out)
		if err != nil {
			return next, fmt.Errorf("comparison round %d (%s): %w", len(s.Rounds)+1, name, err)
		}
		if plain && s.Plain == nil {
			s.Plain = &p
		}
		s.Rounds = append(s.Rounds, roundOf(name, p))
	}
	s.RepeatableAcceptedPerS, s.PlainAcceptedPerS = pooledRate(s.Rounds, "repeatable"), pooledRate(s.Rounds, "plain")
	if s.PlainAcceptedPerS > 0 {
		s.AcceptedVsPlain = s.RepeatableAcceptedPerS / s.PlainAcceptedPerS
	}
	return next, nil
}

// pooledRate is the orders the rounds of service accepted over the seconds they took.
func pooledRate(rounds []Round, service string) float64 {
	var n int
	var secs float64
	for _, r := range rounds {
		if r.Service == service {
			n, secs = n+r.Accepted, secs+r.AcceptedSeconds
		}
	}
	if secs == 0 {
		return 0
	}
	return float64(n) / secs
}

// inexact returns the first round of s that lost or duplicated an effect, or nil.
func (s Summary) inexact() *Round {
	for i, r := range s.Rounds {
		if r.Lost != 0 || r.DuplicatedEffects != 0 || !r.EffectsExact {
			return &s.Rounds[i]
		}
	}
	return nil
}
