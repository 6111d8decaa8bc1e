//go:build !mutant_unknown_not_applied

package cas

// unknownNotApplied is false: an unknown outcome is read back at serial, never guessed.
// mutant_unknown_not_applied.go sets it for the history checker's mutant run.
const unknownNotApplied = false
