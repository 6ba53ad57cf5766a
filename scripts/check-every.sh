#!/usr/bin/env bash
# The convergence-check period k (solver.check_every, docs/solver.md "Convergence checks"): every
# shipped scene run with k = 1, 2, 4, 8 on one backend; per run the mean COND iterations per step,
# the solver's time per step, and the loop's downloads and launches per iteration (summary.json).
# usage: bash scripts/check-every.sh [CONDSIM] [BACKEND] [STEPS]   (defaults build/condsim cpu 30)
# Environment: CHECK_EVERY (default "1 2 4 8"), SCENES (default every scenes/*.json), THREADS
# (default 1), PYTHON (default /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/condsim}")
backend=${2:-cpu}
steps=${3:-30}
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"; rm -f scenes/.check-every-*.json' EXIT
printf '%-20s %3s %10s %12s %14s %16s\n' scene k iterations solver_ms downloads/it launches/it
for scene in ${SCENES:-scenes/*.json}; do
  name=$(basename "$scene" .json)
  for k in ${CHECK_EVERY:-1 2 4 8}; do
    # a copy beside the original (its mesh paths are relative to it) with solver.check_every = k
    copy=scenes/.check-every-$k-$name.json
    "$python" - "$scene" "$copy" "$k" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s.setdefault("solver", {})["check_every"] = int(sys.argv[3])
json.dump(s, open(sys.argv[2], "w"))
EOF
    OMP_NUM_THREADS=${THREADS:-1} "$bin" run "$copy" --backend "$backend" --steps "$steps" --threads "${THREADS:-1}" --quiet \
      --no-output --out "$out/$name-$k" >/dev/null
    "$python" - "$out/$name-$k/summary.json" "$name" "$k" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
it = s["backend_counters"]["per_iteration"]
print("%-20s %3s %10.2f %12.2f %14.3f %16.1f" % (sys.argv[2], sys.argv[3], s["mean_iterations"], s["solver_ms_per_step"],
                                                 it["downloads"], it["launches"]))
EOF
  done
done
