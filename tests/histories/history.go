package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Entry is one line of a history: an operation's invocation or completion, or a fault's start
// or end. Type is "invoke", then "ok" (it took effect, with its value), "fail" (it certainly
// took no effect) or "info" (its outcome is unknown: it may have taken effect, now or later);
// "nemesis" lines are the faults, "effect" lines an ExecuteOnce's function writing its effect
// (the nemesis pauses a client while a worker holds such a claim). An invocation without a
// completion (its process was killed) is an "info" too.
type Entry struct {
	Type  string `json:"type"`
	Proc  string `json:"process"`         // the worker: client process, incarnation and goroutine
	Op    string `json:"op"`              // exec, read, record, total, or the fault's kind
	Key   string `json:"key,omitempty"`   // the record's key or the counter
	Arg   string `json:"arg,omitempty"`   // exec: the value its function returns; record: the event id
	Value string `json:"value,omitempty"` // ok: the value returned
	// Replay reports an exec answered with a result stored earlier (its function did not run).
	Replay bool   `json:"replay,omitempty"`
	Fence  int64  `json:"fence,omitempty"`
	Error  string `json:"error,omitempty"` // fail and info: the error's class
	Msg    string `json:"msg,omitempty"`   // fail and info: the error's text
	Mono   int64  `json:"mono"`            // CLOCK_MONOTONIC of the machine, ns: one clock for every process
	Wall   string `json:"wall"`
	// Phase is a fault's "start" or "end"; Target what it hit (n2, p1).
	Phase  string `json:"phase,omitempty"`
	Target string `json:"target,omitempty"`
}

// monotonic reads the machine's CLOCK_MONOTONIC, which every process of the run shares (Go's
// own monotonic reading is relative to its process), so the histories of all processes merge
// into one order. It is not the clock the library is given: a skewed client's wall clock moves,
// this one does not.
func monotonic() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(fmt.Sprintf("histories: clock_gettime: %v", errno)) // cannot happen on Linux
	}
	return ts.Nano()
}

// recorder appends entries to a history file, one JSON line each, flushed at once so that a
// process killed with SIGKILL loses at most the line it was writing.
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &recorder{f: f}, nil
}

// add stamps e with both clocks and writes it.
func (r *recorder) add(e Entry) {
	e.Mono = monotonic()
	e.Wall = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // Entry always marshals
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.f.Write(append(b, '\n'))
}

func (r *recorder) close() error { return r.f.Close() }

// readHistory reads the entries of files, skips a torn last line (a process killed while
// writing it), and sorts them by the monotonic clock.
func readHistory(files ...string) ([]Entry, error) {
	var all []Entry
	for _, name := range files {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a client stopped before it wrote anything
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e Entry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				all = append(all, e)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("histories: read %s: %w", name, err)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Mono < all[j].Mono })
	return all, nil
}

// writeHistory writes entries to path as JSON lines.
func writeHistory(path string, entries []Entry) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
