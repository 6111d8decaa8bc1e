#!/usr/bin/env bash
# test-summary.sh LOG: counts the tests in a `go test -v` log and fails the run when any test
# failed or was skipped (a skipped integration test would hide a missing Cassandra).
set -euo pipefail
log=$1
passed=$(grep -cE '^\s*--- PASS' "$log" || true)
failed=$(grep -cE '^\s*--- FAIL' "$log" || true)
skipped=$(grep -cE '^\s*--- SKIP' "$log" || true)
broken=$(grep -cE '^(FAIL|panic:)' "$log" || true)
if [ "$failed" -gt 0 ] || [ "$broken" -gt 0 ]; then
  echo "failures (the full log is $log):"
  grep -E -B30 '^\s*--- FAIL|^panic:' "$log" | grep -vE '^=== (RUN|PAUSE|CONT)' | tail -n 120 || true
  # A package can fail with no failed test: TestMain's goroutine leak check, a failed build, a
  # crash outside a test. Print the end of such a package's output, where its reason is.
  awk '
    /^(ok|FAIL)[ \t]/ || /^go test / {
      if ($1 == "FAIL" && !testfailed) {
        print "package failed without a failed test: " $2
        for (i = (n > 60 ? n - 60 : 0); i < n; i++) print "  " buf[i % 60]
      }
      n = 0; testfailed = 0; next
    }
    /^[ \t]*--- FAIL/ { testfailed = 1 }
    /^(=== (RUN|PAUSE|CONT|NAME)|[ \t]*--- PASS|PASS$)/ { next }
    { buf[n % 60] = $0; n++ }
  ' "$log"
fi
if [ "$skipped" -gt 0 ]; then
  echo "skipped tests (not allowed here):"
  grep -E -A2 '^\s*--- SKIP' "$log"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$skipped" -eq 0 ] && [ "$broken" -eq 0 ]
