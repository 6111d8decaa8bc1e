package main

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func line(typ, proc, op, arg, value string, replay bool, mono int64) Entry {
	return Entry{Type: typ, Proc: proc, Op: op, Key: "k", Arg: arg, Value: value, Replay: replay, Mono: mono}
}

func linearizable(history []Entry) bool {
	return porcupine.CheckOperations(recordModel.ToModel(), recordOperations(history))
}

func TestModelAcceptsCorrectHistories(t *testing.T) {
	cases := map[string][]Entry{
		"a run, then replays and a read": {
			line("invoke", "a", "exec", "va", "", false, 1), line("invoke", "b", "exec", "vb", "", false, 2),
			line("ok", "a", "exec", "va", "va", false, 3), line("ok", "b", "exec", "vb", "va", true, 4),
			line("invoke", "c", "read", "", "", false, 5), line("ok", "c", "read", "", "va", false, 6),
		},
		"a read before the run sees nothing": {
			line("invoke", "c", "read", "", "", false, 1), line("ok", "c", "read", "", "", false, 2),
			line("invoke", "a", "exec", "va", "", false, 3), line("ok", "a", "exec", "va", "va", false, 4),
		},
		"an unknown outcome stored its value later": {
			line("invoke", "a", "exec", "va", "", false, 1), line("info", "a", "exec", "va", "", false, 2),
			line("invoke", "c", "read", "", "", false, 3), line("ok", "c", "read", "", "", false, 4),
			line("invoke", "b", "exec", "vb", "", false, 5), line("ok", "b", "exec", "vb", "va", true, 6),
		},
		"a killed worker's call stored nothing, another ran": {
			line("invoke", "a", "exec", "va", "", false, 1),
			line("invoke", "b", "exec", "vb", "", false, 5), line("ok", "b", "exec", "vb", "vb", false, 6),
		},
		"a fenced-off worker failed": {
			line("invoke", "a", "exec", "va", "", false, 1), line("invoke", "b", "exec", "vb", "", false, 2),
			line("ok", "b", "exec", "vb", "vb", false, 3), line("fail", "a", "exec", "va", "", false, 4),
		},
	}
	for name, h := range cases {
		if !linearizable(h) {
			t.Errorf("%s: found not linearizable", name)
		}
	}
}

func TestModelRejectsBrokenHistories(t *testing.T) {
	cases := map[string][]Entry{
		"two runs acknowledged": {
			line("invoke", "a", "exec", "va", "", false, 1), line("invoke", "b", "exec", "vb", "", false, 2),
			line("ok", "a", "exec", "va", "va", false, 3), line("ok", "b", "exec", "vb", "vb", false, 4),
		},
		"a failed call's value stored": {
			line("invoke", "a", "exec", "va", "", false, 1), line("fail", "a", "exec", "va", "", false, 2),
			line("invoke", "b", "exec", "vb", "", false, 3), line("ok", "b", "exec", "vb", "va", true, 4),
		},
		"an acknowledged result changed": {
			line("invoke", "a", "exec", "va", "", false, 1), line("ok", "a", "exec", "va", "va", false, 2),
			line("invoke", "c", "read", "", "", false, 3), line("ok", "c", "read", "", "vx", false, 4),
		},
		"an acknowledged result lost": {
			line("invoke", "a", "exec", "va", "", false, 1), line("ok", "a", "exec", "va", "va", false, 2),
			line("invoke", "c", "read", "", "", false, 3), line("ok", "c", "read", "", "", false, 4),
		},
		"a replay of nothing": {
			line("invoke", "a", "exec", "va", "", false, 1), line("ok", "a", "exec", "va", "vz", true, 2),
		},
	}
	for name, h := range cases {
		if linearizable(h) {
			t.Errorf("%s: found linearizable", name)
		}
	}
}

func TestSetChecks(t *testing.T) {
	h := []Entry{
		line("invoke", "a", "exec", "va", "", false, 1), line("ok", "a", "exec", "va", "va", false, 2),
	}
	if vs := setChecks(h, map[string]finalState{"k": {Status: "COMPLETED", Result: "va", Fence: 1, Effect: "va", EffectFence: 1}}); len(vs) != 0 {
		t.Errorf("a correct run: %v", vs)
	}
	for name, f := range map[string]finalState{
		"lost":           {Status: "RELEASED", Fence: 1, Effect: "va", EffectFence: 1},
		"changed":        {Status: "COMPLETED", Result: "vb", Fence: 2, Effect: "vb", EffectFence: 2},
		"effect differs": {Status: "COMPLETED", Result: "va", Fence: 1, Effect: "vb", EffectFence: 2},
	} {
		if vs := setChecks(h, map[string]finalState{"k": f}); len(vs) == 0 {
			t.Errorf("%s: no violation", name)
		}
	}
}

func TestPlanIsReplayable(t *testing.T) {
	o := planOptions{length: time.Minute, clients: 3, nodes: 3, lease: 3 * time.Second}
	a, b := plan(42, o), plan(42, o)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("plans of one seed: %d and %d faults", len(a), len(b))
	}
	classes := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("fault %d: %+v and %+v", i, a[i], b[i])
		}
		if i < 4 {
			classes[faultClass[a[i].Kind]] = true
		}
		if i > 0 && a[i].At < a[i-1].At+a[i-1].For {
			t.Errorf("fault %d starts before fault %d ends", i, i-1)
		}
		if a[i].At+a[i].For > o.length {
			t.Errorf("fault %d ends after the run", i)
		}
		if faultClass[a[i].Kind] == "pause" && a[i].For <= o.lease {
			t.Errorf("pause %d lasts %v, not longer than the lease", i, a[i].For)
		}
	}
	if len(classes) != 4 {
		t.Errorf("the first four faults are of classes %v, not all four", classes)
	}
	if c := plan(43, o); len(c) == len(a) && c[0] == a[0] && c[1] == a[1] {
		t.Errorf("seeds 42 and 43 gave the same schedule")
	}
}

func TestCounterChecks(t *testing.T) {
	rec := func(typ, id string, mono int64) Entry {
		return Entry{Type: typ, Proc: "p/" + id, Op: "record", Key: "c", Arg: id, Mono: mono}
	}
	total := func(typ, value string, mono int64) Entry {
		return Entry{Type: typ, Proc: "reader", Op: "total", Key: "c", Value: value, Mono: mono}
	}
	h := []Entry{
		rec("invoke", "a", 1), rec("ok", "a", 2),
		rec("invoke", "b", 3), rec("info", "b", 4), // unknown: may count
		rec("invoke", "a", 5), rec("ok", "a", 6), // a redelivery: counts once
		total("invoke", "", 7), total("ok", "1", 8),
	}
	for _, good := range []int64{1, 2} {
		if vs := checkCounters(h, map[string]int64{"c": good}); len(vs) != 0 {
			t.Errorf("final total %d: %v", good, vs)
		}
	}
	for _, bad := range []int64{0, 3} {
		if vs := checkCounters(h, map[string]int64{"c": bad}); len(vs) != 1 {
			t.Errorf("final total %d: %v, not one violation", bad, vs)
		}
	}
	stale := append(h[:len(h):len(h)], total("invoke", "", 9), total("ok", "0", 10))
	if vs := checkCounters(stale, map[string]int64{"c": 1}); len(vs) != 1 || vs[0].Check != "counter-read" {
		t.Errorf("a read that missed an acknowledged increment: %v", vs)
	}
}

func TestMessageChecks(t *testing.T) {
	done := func(proc, value string) Entry {
		return Entry{Type: "ok", Proc: proc, Op: "process", Key: "m1", Value: value}
	}
	completed := map[string]messageState{"m1": {Redelivery: "duplicate", Effect: "b", EffectFence: 2}}
	h := []Entry{done("p0/w1", "processed"), done("p1/w0/m2", "duplicate"), {Type: "info", Proc: "p2/w3", Op: "process", Key: "m1"}}
	if vs := checkMessages(h, completed); len(vs) != 0 {
		t.Errorf("a message processed once and acknowledged twice: %v", vs)
	}
	cases := map[string]struct {
		h     []Entry
		final map[string]messageState
	}{
		"handler-once":      {append(h, done("p2/w0", "processed")), completed},
		"acknowledged-lost": {h, map[string]messageState{"m1": {Redelivery: "ran", EffectFence: 2}}},
		"effect-lost":       {h, map[string]messageState{"m1": {Redelivery: "duplicate"}}},
	}
	for check, c := range cases {
		if vs := checkMessages(c.h, c.final); len(vs) != 1 || vs[0].Check != check {
			t.Errorf("%s: %v, not that one violation", check, vs)
		}
	}
}
