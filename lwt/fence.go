//go:build !mutant_nofence

package lwt

// finishCondition fences every ending of a claim (complete, fail, release): it applies only
// while the record is still this claim's, STARTED. mutant_nofence.go replaces it (and the two
// below) for the history checker's mutant run; the library is always built with this file.
const finishCondition = " IF owner = ? AND fence = ? AND status = 'STARTED'"

// finishFence binds finishCondition's owner and fence.
func finishFence(c *Claim) []any { return []any{c.Owner, c.Fence} }

// checkLeaseLost: a run whose lease was lost while its function ran stores nothing.
const checkLeaseLost = true
