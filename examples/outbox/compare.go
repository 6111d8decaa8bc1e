package main

import (
	"cmp"
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
// plain, repeatable, each round cfg.plain orders from cfg.compareClients clients. A node's speed
// drifts over a run (memtables fill and flush, compactions start, the JIT warms up), and a
// service measured later would be measured on a faster or slower node alone; in this order a
// steady drift weighs on both alike. The rates compared are pooled over each service's two
// rounds (orders accepted over the seconds that took).
//
// What is compared is what each service reaches, so the rounds must load both to their limit:
// with too few clients the repeatable service waits on its clients (every tenth order is slow,
// and its client waits for it), and the rounds would compare the clients. When the clients are
// the first phase's own, that phase is the first round. It returns the next order number.
func compare(ctx context.Context, session *gocql.Session, cfg config, next int, s *Summary, out io.Writer) (int, error) {
	clients := cmp.Or(cfg.compareClients, cfg.clients)
	services := []string{"repeatable", "plain", "plain", "repeatable"}
	s.CompareClients = clients
	if clients == cfg.clients {
		s.Rounds, services = []Round{roundOf("repeatable", *s)}, services[1:]
	}
	for _, name := range services {
		pc := cfg
		pc.orders, pc.first, pc.plainService, pc.clients = cfg.plain, next, name == "plain", clients
		next += cfg.plain
		n := len(s.Rounds) + 1
		fmt.Fprintf(out, "comparison round %d: %d orders from %d clients on the %s service\n", n, pc.orders, clients, name)
		p, err := runPhase(ctx, session, pc, false, out)
		if err != nil {
			return next, fmt.Errorf("comparison round %d (%s): %w", n, name, err)
		}
		if name == "plain" && s.Plain == nil {
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
