//go:build mutant_nofence

package lwt

// A planted bug for the history checker (make test-histories), never in a build of the
// library: a claim's ending is sent without fencing, neither the condition on owner, fence and
// status nor the local check of a lost lease, so a worker whose claim was taken over still
// stores its result.

const finishCondition = " IF EXISTS"

func finishFence(*Claim) []any { return nil }

const checkLeaseLost = false
