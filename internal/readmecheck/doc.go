// Package readmecheck keeps the README honest: its tests type-check every Go block of README.md
// against the module's current API, and check that every relative link of README.md and
// docs/*.md names a file (and, for a Markdown file, a heading) that exists.
//
// Run them with go test ./internal/readmecheck/; they need no Cassandra node. Each Go block of
// the README must be a whole file (package clause, imports, declarations), gofmt-formatted, so
// that a reader can copy it as it is.
package readmecheck
