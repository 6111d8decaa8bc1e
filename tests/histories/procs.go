package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// clientProc is one client slot (p0, p1, ...): the process running in it now, and the
// incarnations it had, each with a history file of its own.
type clientProc struct {
	index int
	inc   int
	cmd   *exec.Cmd
	done  chan struct{}
	files []string
}

// clients starts, kills and stops the client processes of one run.
type clients struct {
	mu    sync.Mutex
	bin   string // the binary the clients run: the mutant's, in a mutant's run
	dir   string
	args  []string // the flags every client gets
	seed  uint64
	procs []*clientProc
}

func (cs *clients) skewFile(i int) string { return filepath.Join(cs.dir, fmt.Sprintf("p%d.skew", i)) }

// retryFile names a paused client's held keys for the others to retry (retry.go).
func (cs *clients) retryFile() string { return filepath.Join(cs.dir, "retry") }

// history is the history file of the process in slot i now.
func (cs *clients) history(i int) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	files := cs.procs[i].files
	return files[len(files)-1]
}

// start starts a new incarnation in slot i.
func (cs *clients) start(i int) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for len(cs.procs) <= i {
		cs.procs = append(cs.procs, &clientProc{index: len(cs.procs)})
	}
	p := cs.procs[i]
	p.inc++
	name := fmt.Sprintf("p%d.%d", i, p.inc)
	hist := filepath.Join(cs.dir, name+".jsonl")
	args := append([]string{"client", "-name", name, "-history", hist, "-skew-file", cs.skewFile(i), "-retry-file", cs.retryFile(),
		"-seed", fmt.Sprint(cs.seed*1000 + uint64(i*100+p.inc))}, cs.args...)
	cmd := exec.Command(cs.bin, args...)
	log, err := os.Create(filepath.Join(cs.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	p.cmd, p.done, p.files = cmd, make(chan struct{}), append(p.files, hist)
	go func(done chan struct{}) {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}(p.done)
	return nil
}

// signal sends sig to the process in slot i.
func (cs *clients) signal(i int, sig syscall.Signal) error {
	cs.mu.Lock()
	p := cs.procs[i]
	cs.mu.Unlock()
	return p.cmd.Process.Signal(sig)
}

// kill kills the process in slot i with SIGKILL and waits for it to be gone.
func (cs *clients) kill(i int) error {
	if err := cs.signal(i, syscall.SIGKILL); err != nil {
		return err
	}
	<-cs.procs[i].done
	return nil
}

// stopAll resumes and stops every client (SIGCONT, SIGTERM: the operations in flight finish),
// and kills those that have not exited after grace.
func (cs *clients) stopAll(grace time.Duration) {
	for i := range cs.procs {
		_ = cs.signal(i, syscall.SIGCONT)
		_ = cs.signal(i, syscall.SIGTERM)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	expired := false
	for i, p := range cs.procs {
		if !expired {
			select {
			case <-p.done:
				continue
			case <-t.C:
				expired = true
			}
		}
		_ = cs.kill(i)
	}
}

// files returns every history file written by the clients.
func (cs *clients) files() []string {
	var out []string
	for _, p := range cs.procs {
		out = append(out, p.files...)
	}
	return out
}
