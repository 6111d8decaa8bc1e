package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows the run's advance on a terminal: one bar over the planned time of all phases,
// described with the current phase and the requests answered so far. It owns one goroutine,
// started by newProgress and stopped by close.
type progress struct {
	bar  *progressbar.ProgressBar
	live *live
	stop chan struct{}
	done chan struct{}

	mu         sync.Mutex
	phaseStart time.Time
	before     time.Duration // planned time of the phases already finished
	planned    time.Duration // planned time of the current phase
}

// isTerminal reports whether w is a character device: a progress bar written to a file or a
// pipe is only noise in a log.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress starts the display on w, or returns nil (a valid, silent progress) when quiet.
func newProgress(w io.Writer, quiet bool, total time.Duration, lv *live) *progress {
	if quiet || !isTerminal(w) {
		return nil
	}
	p := &progress{
		bar: progressbar.NewOptions64(total.Milliseconds(),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionShowDescriptionAtLineEnd()),
		live: lv,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go p.loop()
	return p
}

// phase marks the start of a phase of planned length d, after phases planned to last before.
func (p *progress) phase(before, d time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phaseStart, p.before, p.planned = time.Now(), before, d
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			at := p.before + min(time.Since(p.phaseStart), p.planned)
			p.mu.Unlock()
			label := ""
			if s := p.live.phase.Load(); s != nil {
				label = *s
			}
			p.bar.Describe(fmt.Sprintf("%s: %d answered, %d failed", label, p.live.done.Load(), p.live.failed.Load()))
			_ = p.bar.Set64(at.Milliseconds())
		}
	}
}

// close stops the display and clears its line, so the table starts on a clean terminal.
func (p *progress) close() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	_ = p.bar.Finish()
}
