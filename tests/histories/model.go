package main

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// recordInput is one operation on a key's idempotency record: an ExecuteOnce whose function
// returns Arg, or a read of the stored result (Store.Get, at SERIAL).
type recordInput struct {
	Key string
	Op  string // "exec" or "read"
	Arg string
}

// recordOutput is how the operation ended: Type "ok", "fail" (it certainly stored nothing) or
// "info" (unknown: it may have stored its value, then or later). Value is what an ok returned
// (a read of a key with no completed result returns ""), Replay whether an ok exec was answered
// from a result stored earlier.
type recordOutput struct {
	Type   string
	Value  string
	Replay bool
}

// recordModel is the idempotency record as ExecuteOnce's documentation states it, one key at a
// time (the histories are partitioned by key). The state is the stored result, "" while there
// is none. An exec that ran its function and returned its own value (not a replay) stored it,
// which is possible only on a key with no stored result; a replay returns the stored result; a
// failed exec stored nothing; an exec of unknown outcome stored its value or nothing (a
// Porcupine "maybe": its return is at infinity, so it may take effect at any point after its
// call). A read returns the stored result, or "" before there is one. Fencing is what makes the
// first rule hold under takeovers: a worker whose claim was taken over cannot store its value.
var recordModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []interface{} { return []interface{}{""} },
	Step: func(state, input, output interface{}) []interface{} {
		st, in, out := state.(string), input.(recordInput), output.(recordOutput)
		return stepRecord(st, in, out)
	},
	Equal: func(a, b interface{}) bool { return a.(string) == b.(string) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(recordInput), output.(recordOutput)
		return describeRecordOp(in, out)
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("%q", state.(string)) },
}

// stepRecord returns the states the record may be in after the operation, none if the
// operation could not have returned what it did from st.
func stepRecord(st string, in recordInput, out recordOutput) []interface{} {
	same := []interface{}{st}
	switch {
	case in.Op == "read" && out.Type == "ok":
		if out.Value == st {
			return same
		}
		return nil
	case in.Op == "read", out.Type == "fail":
		return same
	case out.Type == "info":
		if st == "" {
			return []interface{}{"", in.Arg}
		}
		return same
	case out.Replay:
		if st != "" && out.Value == st {
			return same
		}
		return nil
	default: // ok, its function ran and its result was stored
		if st == "" && out.Value == in.Arg {
			return []interface{}{in.Arg}
		}
		return nil
	}
}

func describeRecordOp(in recordInput, out recordOutput) string {
	switch {
	case out.Type != "ok":
		return fmt.Sprintf("%s(%s) %s", in.Op, in.Arg, out.Type)
	case out.Replay:
		return fmt.Sprintf("%s(%s) -> %q replay", in.Op, in.Arg, out.Value)
	}
	return fmt.Sprintf("%s(%s) -> %q", in.Op, in.Arg, out.Value)
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	var order []string
	for _, op := range history {
		k := op.Input.(recordInput).Key
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	parts := make([][]porcupine.Operation, 0, len(order))
	for _, k := range order {
		parts = append(parts, byKey[k])
	}
	return parts
}

// recordOperations pairs the record operations of a history (exec and read) into Porcupine's
// operations: each invocation with the next completion of the same worker. An invocation that
// has none (its process was killed) and every info completion return at infinity. Reads that
// failed are left out: they observed nothing.
func recordOperations(history []Entry) []porcupine.Operation {
	open := map[string]Entry{}
	clients := map[string]int{}
	var ops []porcupine.Operation
	add := func(inv Entry, out recordOutput, ret int64) {
		if inv.Op == "read" && out.Type != "ok" {
			return
		}
		id, ok := clients[inv.Proc]
		if !ok {
			id = len(clients)
			clients[inv.Proc] = id
		}
		ops = append(ops, porcupine.Operation{ClientId: id, Input: recordInput{Key: inv.Key, Op: inv.Op, Arg: inv.Arg},
			Call: inv.Mono, Output: out, Return: ret})
	}
	for _, e := range history {
		if e.Op != "exec" && e.Op != "read" {
			continue
		}
		if e.Type == "invoke" {
			open[e.Proc] = e
			continue
		}
		inv, ok := open[e.Proc]
		if !ok {
			continue
		}
		delete(open, e.Proc)
		ret := e.Mono
		if e.Type == "info" {
			ret = math.MaxInt64
		}
		add(inv, recordOutput{Type: e.Type, Value: e.Value, Replay: e.Replay}, ret)
	}
	for _, inv := range open {
		add(inv, recordOutput{Type: "info"}, math.MaxInt64)
	}
	return ops
}
