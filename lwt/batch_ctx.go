package lwt

import "context"

// ContextWithClaim returns a ctx from which ClaimFromContext returns a copy of c: for work run
// under a claim that the caller made itself, such as one of BatchStore.BeginBatch, so that code
// written for ExecuteOnce's fn finds its fencing token the same way.
func ContextWithClaim(ctx context.Context, c *Claim) context.Context {
	return context.WithValue(ctx, claimCtxKey{}, &claimHolder{claim: *c})
}
