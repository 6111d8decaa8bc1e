package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: writes from many goroutines all land, whole (run with -race).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("ab"))
			}
		})
	}
	wg.Wait()
	if b.Len() != 3200 || strings.Count(b.String(), "ab") != 1600 {
		t.Fatalf("wrote 1600 pairs, have %d bytes, %d pairs", b.Len(), strings.Count(b.String(), "ab"))
	}
}
