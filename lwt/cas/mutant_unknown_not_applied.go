//go:build mutant_unknown_not_applied

package cas

// A planted bug for the history checker (make test-histories), never in a build of the
// library: a conditional write whose outcome is unknown is taken as not applied, without the
// serial read that would settle it.
const unknownNotApplied = true
