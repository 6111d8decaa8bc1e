package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// violation is one thing the checker found wrong, with the file of its counterexample: the
// history lines of the key it concerns.
type violation struct {
	Check          string `json:"check"`
	Key            string `json:"key"`
	Detail         string `json:"detail"`
	Counterexample string `json:"counterexample,omitempty"`
}

// finalState is what a key's record and effect row hold once the run is over, read at SERIAL
// after every fault healed and every client stopped.
type finalState struct {
	Status      string
	Result      string
	Fence       int64
	Effect      string
	EffectFence int64
}

// checkTimeout bounds Porcupine's search on one key; a key it cannot decide is reported as
// unchecked, not as passed.
const checkTimeout = 30 * time.Second

// checkRecords checks the record operations of history, key by key: linearizability against
// recordModel with Porcupine, then the set checks against the final states. It returns the
// keys checked, those Porcupine could not decide in time, and the violations, whose
// counterexamples it writes under dir.
func checkRecords(dir string, history []Entry, final map[string]finalState) (keys, undecided int, vs []violation) {
	model := recordModel.ToModel()
	byKey := map[string][]porcupine.Operation{}
	for _, op := range recordOperations(history) {
		k := op.Input.(recordInput).Key
		byKey[k] = append(byKey[k], op)
	}
	for _, k := range sortedKeys(byKey) {
		res, info := porcupine.CheckOperationsVerbose(model, byKey[k], checkTimeout)
		switch res {
		case porcupine.Illegal:
			v := violation{Check: "linearizable", Key: k, Detail: "no order of the key's operations satisfies the record's model"}
			_ = porcupine.VisualizePath(model, info, filepath.Join(dir, "counterexample-"+k+".html"))
			vs = append(vs, v)
		case porcupine.Unknown:
			undecided++
		}
	}
	vs = append(vs, setChecks(history, final)...)
	for i := range vs {
		vs[i].Counterexample = writeCounterexample(dir, history, vs[i].Key)
	}
	return len(byKey), undecided, vs
}

// setChecks: no function's result acknowledged as fresh twice for a key (its effect would have
// happened twice), no acknowledged result lost or changed, and on every completed key the
// effect row holds the stored result, written under the completing claim's fence.
func setChecks(history []Entry, final map[string]finalState) []violation {
	acked := map[string]map[string]bool{}
	fresh := map[string]int{}
	for _, e := range history {
		if e.Op != "exec" || e.Type != "ok" {
			continue
		}
		if acked[e.Key] == nil {
			acked[e.Key] = map[string]bool{}
		}
		acked[e.Key][e.Value] = true
		if !e.Replay {
			fresh[e.Key]++
		}
	}
	var vs []violation
	for _, k := range sortedKeys(acked) {
		f := final[k]
		if fresh[k] > 1 {
			vs = append(vs, violation{Check: "effect-once", Key: k, Detail: fmt.Sprintf("%d calls ran the function and had their result acknowledged", fresh[k])})
		}
		if len(acked[k]) > 1 {
			vs = append(vs, violation{Check: "acknowledged-changed", Key: k, Detail: fmt.Sprintf("acknowledged results %v", sortedKeys(acked[k]))})
		}
		for v := range acked[k] {
			switch {
			case f.Status != "COMPLETED":
				vs = append(vs, violation{Check: "acknowledged-lost", Key: k, Detail: fmt.Sprintf("acknowledged %q, the record is %q", v, f.Status)})
			case f.Result != v:
				vs = append(vs, violation{Check: "acknowledged-changed", Key: k, Detail: fmt.Sprintf("acknowledged %q, the record holds %q", v, f.Result)})
			}
		}
	}
	for _, k := range sortedKeys(final) {
		f := final[k]
		if f.Status == "COMPLETED" && (f.Effect != f.Result || f.EffectFence != f.Fence) {
			vs = append(vs, violation{Check: "effect-fenced", Key: k, Detail: fmt.Sprintf("the record holds %q at fence %d, the effect row %q at fence %d",
				f.Result, f.Fence, f.Effect, f.EffectFence)})
		}
	}
	return vs
}

// writeCounterexample writes the history lines of key, with every fault, to a file of its own
// and returns its path ("" if it could not be written).
func writeCounterexample(dir string, history []Entry, key string) string {
	var lines []Entry
	for _, e := range history {
		if e.Key == key || e.Type == "nemesis" {
			lines = append(lines, e)
		}
	}
	path := filepath.Join(dir, "counterexample-"+key+".jsonl")
	if err := writeHistory(path, lines); err != nil {
		fmt.Fprintf(os.Stderr, "histories: %v\n", err)
		return ""
	}
	return path
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
