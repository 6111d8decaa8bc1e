package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// fault is one planned fault of a schedule: Kind at At after the run's start, on Target, for
// For (then it ends: the process or node resumes or restarts, the partition heals, the clock
// comes back).
type fault struct {
	At     time.Duration `json:"at"`
	Kind   string        `json:"kind"`
	Target string        `json:"target"` // n1..n3 (a node) or p0.. (a client process)
	For    time.Duration `json:"for"`
	Skew   time.Duration `json:"skew,omitempty"` // clock faults: added to the process's clock
}

// The kinds of fault, and the class each counts as in the results' fault_kinds.
var faultClass = map[string]string{
	"kill-node": "kill", "kill-client": "kill",
	"pause-node": "pause", "pause-client": "pause",
	"partition-node": "partition",
	"clock-client":   "clock",
}

// planOptions is what a schedule is drawn for.
type planOptions struct {
	length  time.Duration // the run's length: every fault ends before it
	clients int
	nodes   int           // 0: no node faults (a single shared node)
	lease   time.Duration // pauses last longer than the lease as Cassandra judges it
}

// plan draws the schedule of seed: the same seed and options give the same schedule. The
// first faults are one of each class, in an order of the seed's, so that a short run has every
// class; then classes are drawn at random. A fault starts 1 to 3 s after the previous one
// ended, and one at a time: the cluster keeps a quorum (RF 3) through every fault. A node is
// killed at most once a run, since its restart takes the better part of a minute.
func plan(seed uint64, o planOptions) []fault {
	r := rand.New(rand.NewPCG(seed, 0x6e656d65736973))
	classes := []string{"kill", "pause", "partition", "clock"}
	r.Shuffle(len(classes), func(i, j int) { classes[i], classes[j] = classes[j], classes[i] })
	var out []fault
	at := 4 * time.Second
	nodeKilled := false
	for i := 0; ; i++ {
		class := classes[r.IntN(len(classes))]
		if i < len(classes) {
			class = classes[i]
		}
		f := draw(r, class, o, &nodeKilled)
		f.At = at
		if f.At+f.For > o.length-2*time.Second {
			return out
		}
		out = append(out, f)
		at += f.For + time.Duration(1000+r.IntN(2000))*time.Millisecond
	}
}

// draw picks one fault of class.
func draw(r *rand.Rand, class string, o planOptions, nodeKilled *bool) fault {
	client := fmt.Sprintf("p%d", r.IntN(o.clients))
	node := fmt.Sprintf("n%d", 1+r.IntN(max(o.nodes, 1)))
	onNode := o.nodes > 0 && r.IntN(2) == 0
	pause := o.lease + time.Duration(2000+r.IntN(4000))*time.Millisecond
	switch class {
	case "kill":
		if onNode && !*nodeKilled {
			*nodeKilled = true
			return fault{Kind: "kill-node", Target: node, For: time.Duration(1000+r.IntN(2000)) * time.Millisecond}
		}
		return fault{Kind: "kill-client", Target: client, For: time.Duration(500+r.IntN(2000)) * time.Millisecond}
	case "pause":
		if onNode {
			return fault{Kind: "pause-node", Target: node, For: pause}
		}
		return fault{Kind: "pause-client", Target: client, For: pause}
	case "partition":
		if o.nodes == 0 {
			return fault{Kind: "pause-client", Target: client, For: pause}
		}
		return fault{Kind: "partition-node", Target: node, For: time.Duration(3000+r.IntN(5000)) * time.Millisecond}
	}
	skew := time.Duration(1+r.IntN(10)) * time.Minute
	if r.IntN(2) == 0 {
		skew = -skew
	}
	return fault{Kind: "clock-client", Target: client, For: time.Duration(3000+r.IntN(5000)) * time.Millisecond, Skew: skew}
}
