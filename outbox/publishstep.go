//go:build !mutant_mark_before_publish

package outbox

import "context"

// publishStep publishes a bucket's due intents and returns their marks, which the caller
// writes after it: an intent is marked published only once the publisher accepted it.
// mutant_mark_before_publish.go plants the opposite order for the history checker's mutant run.
func (r *Relay) publishStep(ctx context.Context, sh *shard, _ int64, due []settled, st *Stats) ([]mark, error) {
	return r.publishDue(ctx, sh, due, st)
}
