#!/usr/bin/env bash
# vulndb.sh prepares what `make vulncheck` needs where the public vulnerability database
# (vuln.go.dev) cannot be reached: govulncheck from the Go module proxy, and a local copy of the
# Go vulnerability database built from the golang.org/x/vulndb module, whose zip holds the
# database's OSV reports (data/osv), with that module's own indexer (cmd/indexdb). Both are kept
# in a cache outside the repository, one directory per version, and built only once.
#
#   vulndb.sh db           print the database's file:// URL, building it first when needed
#   vulndb.sh govulncheck  print the govulncheck binary's path, installing it first when needed,
#                          built by the Go that GOTOOLCHAIN names (the one it will check with)
#
# Settings (environment):
#   VULNDB_VERSION       version of golang.org/x/vulndb (default latest: the newest reports)
#   GOVULNCHECK_VERSION  version of golang.org/x/vuln   (default v1.9.0)
#   CASSDEDUP_CACHE      cache directory                (default $XDG_CACHE_HOME/cassdedup)
#   GO                   the go command                 (default go)
set -euo pipefail

go=${GO:-go}
cache=${CASSDEDUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cassdedup}
# Outside any module: the repository's go.mod must not take part in resolving the tools.
cd "${TMPDIR:-/tmp}"
export GOFLAGS= GOWORK=off

case ${1:-} in
db)
  version=$("$go" list -m -f '{{.Version}}' "golang.org/x/vulndb@${VULNDB_VERSION:-latest}")
  out=$cache/vulndb/$version
  if [ ! -s "$out/index/modules.json" ]; then
    src=$("$go" mod download -json "golang.org/x/vulndb@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -d "$src/data/osv" ] || { echo "vulndb.sh: golang.org/x/vulndb@$version has no data/osv" >&2; exit 1; }
    echo "vulndb.sh: indexing $(ls "$src/data/osv" | wc -l) reports of golang.org/x/vulndb@$version into $out" >&2
    rm -rf "$out.tmp"
    mkdir -p "$(dirname "$out")"
    "$go" run "golang.org/x/vulndb/cmd/indexdb@$version" -vulns "$src/data/osv" -out "$out.tmp" >&2
    rm -rf "$out"
    mv "$out.tmp" "$out"
  fi
  echo "file://$out"
  ;;
govulncheck)
  # govulncheck type-checks the standard library of the Go that runs it: it must be built by the
  # same release (one built by 1.26 cannot read 1.27's), so the cache keeps one per Go version.
  version=${GOVULNCHECK_VERSION:-v1.9.0}
  bin=$cache/govulncheck/$version-$("$go" env GOVERSION)
  if [ ! -x "$bin/govulncheck" ]; then
    GOBIN=$bin "$go" install "golang.org/x/vuln/cmd/govulncheck@$version" >&2
  fi
  echo "$bin/govulncheck"
  ;;
*)
  echo "usage: vulndb.sh db | govulncheck" >&2
  exit 2
  ;;
esac
