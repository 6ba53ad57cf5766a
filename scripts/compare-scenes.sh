#!/usr/bin/env bash
# Runs every shipped scene with two condsim binaries and compares their output.h5 datasets
# bitwise (restructurings must not change a number). Usage:
#   scripts/compare-scenes.sh OLD_CONDSIM NEW_CONDSIM [--duration S] [scene.json ...]
# Without scene arguments, every scenes/*.json. --duration shortens each run (default: the
# scene's own). Exit 0 when every dataset is identical; 1 on any difference or failed run.
# Environment: OUT (default /tmp/condsim-compare), PYTHON (default /usr/bin/python3, which
# has h5py and numpy on Debian), REUSE_OLD=1 (keep the old side's outputs from an earlier
# call with the same OUT instead of running the old binary again), NEW_ENV (VAR=value words set for
# the new side's runs only, e.g. NEW_ENV=CONDSIM_CPU_ORDER=reverse with the same binary twice).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_CONDSIM NEW_CONDSIM [--duration S] [scene.json ...]" >&2
  exit 2
fi
old=$(realpath "$1") new=$(realpath "$2")
shift 2
extra=()
if [ "${1:-}" = "--duration" ]; then extra=(--duration "$2"); shift 2; fi
scenes=("$@")
[ ${#scenes[@]} -gt 0 ] || scenes=(scenes/*.json)
out=${OUT:-/tmp/condsim-compare}
python=${PYTHON:-/usr/bin/python3}
[ "${REUSE_OLD:-0}" = 1 ] || rm -rf "$out/old"
rm -rf "$out/new"
mkdir -p "$out"
status=0
for scene in "${scenes[@]}"; do
  name=$(basename "$scene" .json)
  for side in old new; do
    bin=$old; [ $side = new ] && bin=$new
    [ $side = old ] && [ "${REUSE_OLD:-0}" = 1 ] && [ -f "$out/old/$name/output.h5" ] && continue
    side_env=(); [ $side = new ] && [ -n "${NEW_ENV:-}" ] && read -r -a side_env <<<"$NEW_ENV"
    env OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "${side_env[@]}" "$bin" run "$scene" --backend cpu --quiet "${extra[@]}" \
      --out "$out/$side/$name" >"$out/$side.$name.log" 2>&1 \
      || { echo "$name: the $side run failed (log: $out/$side.$name.log)"; status=1; }
  done
  [ -f "$out/old/$name/output.h5" ] && [ -f "$out/new/$name/output.h5" ] || { echo "$name: no output.h5 on both sides"; status=1; continue; }
  "$python" - "$out/old/$name/output.h5" "$out/new/$name/output.h5" "$name" <<'EOF' || status=1
import sys, h5py, numpy as np
a, b, name = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), sys.argv[3]
def datasets(f):
    out = {}
    f.visititems(lambda k, v: out.__setitem__(k, v) if isinstance(v, h5py.Dataset) else None)
    return out
da, db = datasets(a), datasets(b)
bad = sorted(set(da) ^ set(db))
# timings differ from run to run; every other dataset must match bit for bit
timed = lambda k: "seconds" in k or k.endswith("_s")
for k in sorted(set(da) & set(db)):
    if timed(k):
        continue
    x, y = da[k][()], db[k][()]
    if np.asarray(x).dtype.kind == "f":
        same = np.array_equal(np.asarray(x).view(np.uint8), np.asarray(y).view(np.uint8)) if np.shape(x) == np.shape(y) else False
    else:
        same = np.array_equal(x, y)
    if not same:
        bad.append(k)
n = len(set(da) & set(db))
print(f"{name}: {n} datasets, " + ("identical" if not bad else "DIFFER: " + ", ".join(bad)))
sys.exit(1 if bad else 0)
EOF
done
exit $status
