#!/usr/bin/env bash
# saturation.sh finds, for each operation, the request rate at which its p99 leaves its floor:
# it runs lwtbench open-loop on one operation at a time at each rate of SWEEP_RATES (lowest
# first) and calls the operation saturated at the first rate where the p99 passes twice the
# p99 at the lowest rate, or fewer than 90% of the requests succeed on schedule.
#
#   saturation.sh LWTBENCH OUT_DIR [lwtbench flags...]
#
# Settings: SWEEP_OPS (default insert,lwt-new,once-new), SWEEP_RATES (default 25,50,100,200,400),
# SWEEP_DURATION (default 8s). The table goes to stdout and OUT_DIR/saturation.md.
set -euo pipefail
bench=$1
out=$2
shift 2
ops=${SWEEP_OPS:-insert,lwt-new,once-new}
rates=${SWEEP_RATES:-25,50,100,200,400}
duration=${SWEEP_DURATION:-8s}
mkdir -p "$out/saturation"
ks="lwtbench_sweep_$$"
for op in ${ops//,/ }; do
  for rate in ${rates//,/ }; do
    dir="$out/saturation/$op-$rate"
    "$bench" -quiet -ops "$op" -concurrency "" -warmup 2s -duration "$duration" -rate "$rate" \
      -keyspace "$ks" -keep-keyspace -out "$dir" "$@" >"$dir.log" 2>&1 || { tail -5 "$dir.log" >&2; exit 1; }
  done
done
python3 - "$out/saturation" "$ops" "$rates" <<'PY' | tee "$out/saturation.md"
import glob, json, os, sys
root, ops, rates = sys.argv[1], sys.argv[2].split(","), [float(r) for r in sys.argv[3].split(",")]
print("| operation | " + " | ".join("p99 at %g/s" % r for r in rates) + " | saturates at |")
print("|---" * (len(rates) + 2) + "|")
for op in ops:
    cells, floor, sat = [], None, None
    for r in rates:
        path = glob.glob(os.path.join(root, "%s-%g" % (op, r), "*.json"))
        phase = [p for p in json.load(open(sorted(path)[-1]))["phases"] if p["mode"] == "open"][0]
        s = [o for o in phase["operations"] if o["op"] == op][0]
        planned = r * phase["duration_s"]
        ok = s["requests"] / planned if planned else 0
        floor = floor or s["p99_ms"]
        cells.append("%.1f ms%s" % (s["p99_ms"], "" if ok >= 0.9 else " (%d%% ok)" % (100 * ok)))
        if sat is None and (s["p99_ms"] > 2 * floor or ok < 0.9):
            sat = r
    print("| %s | %s | %s |" % (op, " | ".join(cells), ("%g/s" % sat) if sat else "above %g/s" % rates[-1]))
PY
