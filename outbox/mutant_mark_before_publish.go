//go:build mutant_mark_before_publish

package outbox

import "context"

// A planted bug for the history checker (make test-histories), never in a build of the
// library: the relay marks a bucket's due intents published before it publishes them, and
// trusts the publication, so an event whose publication fails (or whose relay dies between
// the two) is never published.
func (r *Relay) publishStep(ctx context.Context, sh *shard, b int64, due []settled, st *Stats) ([]mark, error) {
	pre := make([]mark, 0, len(due))
	for _, v := range due {
		pre = append(pre, mark{v: v, state: StatePublished})
	}
	if _, err := r.mark(ctx, sh, b, pre); err != nil {
		return nil, err
	}
	_, err := r.publishDue(ctx, sh, due, st)
	return pre, err // the relay goes on as if every one of them had been published
}
