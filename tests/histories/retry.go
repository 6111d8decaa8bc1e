package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"
)

// A stalled client's requests are retried by the others, as a load balancer retries a request
// on another instance once the first stops answering. The nemesis pauses a client while one of
// its workers holds a claim whose effect is written, and names the keys its workers hold in the
// retry file; the other clients' workers call ExecuteOnce on each until one returns. Their calls
// wait out the paused claim's lease and take the key over before the pause ends, so every
// client pause brings about the race fencing exists for: the paused worker wakes holding a claim
// that is no longer its own. On the library as built it stores nothing; the fence mutant's
// worker overwrites the result another call acknowledged. Leaving the race to the workload's
// random keys let a run of seven seeds miss it.

// heldClaim is an ExecuteOnce of a client's history with no completion yet: the key, and when
// its function wrote its effect (0: not yet).
type heldClaim struct {
	key    string
	effect int64
}

// heldClaims reads a client process's history file and returns the ExecuteOnce calls in flight.
func heldClaims(file string) []heldClaim {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	open := map[string]heldClaim{} // by worker
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a line being written
		}
		switch {
		case e.Type == "invoke" && e.Op == "exec":
			open[e.Proc] = heldClaim{key: e.Key}
		case e.Type == "effect":
			if c, ok := open[e.Proc]; ok && c.key == e.Key {
				c.effect = e.Mono
				open[e.Proc] = c
			}
		case e.Op == "exec":
			delete(open, e.Proc)
		}
	}
	out := make([]heldClaim, 0, len(open))
	for _, c := range open {
		out = append(out, c)
	}
	return out
}

// effectWritten is how recently a claim's effect must have been written for the nemesis to
// pause its process: well within the function's remaining work (fnWork), so the pause lands
// while the worker holds the claim.
const effectWritten = fnWork / 2

// awaitHeldEffect waits, up to patience, until a worker of the process whose history is file
// has written its effect in the last effectWritten, and reports whether one did.
func awaitHeldEffect(file string, patience time.Duration) bool {
	deadline := time.Now().Add(patience)
	for {
		now := monotonic()
		for _, c := range heldClaims(file) {
			if c.effect != 0 && now-c.effect < int64(effectWritten) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeRetries names the keys held by the paused process slot for the others to retry; no keys
// clears the file.
func writeRetries(file, slot string, keys []string) error {
	if len(keys) == 0 {
		return os.WriteFile(file, nil, 0o644)
	}
	return os.WriteFile(file, []byte(slot+"\n"+strings.Join(keys, "\n")+"\n"), 0o644)
}

// retries is a client's view of the retry file: the keys to retry, and for each whether a
// worker of this process is on it or one already returned.
type retries struct {
	slot  string // this process's slot (p1): its own keys are not its to retry
	mu    sync.Mutex
	state map[string]retryState
}

type retryState int

const (
	retryWaiting retryState = iota
	retryTaken
	retryDone
)

func newRetries(name string) *retries {
	slot, _, _ := strings.Cut(name, ".")
	return &retries{slot: slot, state: map[string]retryState{}}
}

// set replaces the keys with those of the file's contents b; a key still listed keeps its state.
func (r *retries) set(b []byte) {
	lines := strings.Fields(string(b))
	next := map[string]retryState{}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(lines) > 1 && lines[0] != r.slot {
		for _, k := range lines[1:] {
			next[k] = r.state[k]
		}
	}
	r.state = next
}

// take returns a key no worker of this process is retrying or has retried, and marks it taken;
// "" if there is none.
func (r *retries) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, s := range r.state {
		if s == retryWaiting {
			r.state[k] = retryTaken
			return k
		}
	}
	return ""
}

// finish records how a retry of key ended: a call that returned is done; any other is retried.
func (r *retries) finish(key string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, listed := r.state[key]; !listed {
		return
	}
	r.state[key] = retryWaiting
	if ok {
		r.state[key] = retryDone
	}
}

// followFile calls apply with file's contents every 100 ms until ctx ends; a file that cannot
// be read is skipped.
func followFile(ctx context.Context, file string, apply func([]byte)) {
	for ctx.Err() == nil {
		if b, err := os.ReadFile(file); err == nil {
			apply(b)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
