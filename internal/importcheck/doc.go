// Package importcheck keeps the layout's import rules (DESIGN.md, "The layout shows the
// architecture") true: its tests list the module's packages with internal/depcheck and fail
// when a package imports what its level forbids, naming the package and the import it made.
//
// Run them with go test ./internal/importcheck/; they need no Cassandra node.
package importcheck
