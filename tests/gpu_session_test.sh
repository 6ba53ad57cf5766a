#!/bin/sh
# usage: gpu_session_test.sh BUILD_DIR WORKDIR: runs scripts/gpu-session.sh on the CPU (one short
# scene, the repeat on cpu) and checks its table: the cpu row ran (rc 0, the scene's 20 steps)
# and the two seeded cpu runs wrote bitwise-identical output.h5, and a batch of three episodes equals
# each run alone (with both --spmv values the script passes) (exit 77 without HDF5)
build=$1; work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work"
cd "$root" || exit 1
OUT=$work GPU_SESSION_SCENES="box_sliding:0.2" GPU_SESSION_REPEAT_BACKEND=cpu bash scripts/gpu-session.sh "$build" > "$work/stdout.txt" 2>&1
cat "$work/stdout.txt"
grep -q "output.h5" "$work/repeat.txt" || { echo "FAIL: no repeat result"; exit 1; }
if grep -q "without HDF5" "$work/repeat.txt"; then echo "skipped: built without HDF5"; exit 77; fi
awk '$1 == "box_sliding" && $2 == "cpu" && $3 == 0 && $4 == 20 { ok = 1 } END { exit !ok }' "$work/scenes.txt" ||
  { echo "FAIL: the cpu row of box_sliding is missing or wrong"; exit 1; }
grep -q "bitwise identical" "$work/repeat.txt" || { echo "FAIL: the seeded cpu repeat differs"; exit 1; }
[ "$(grep -c "3 of 3 episodes bitwise equal" "$work/batch.txt")" = 2 ] ||
  { echo "FAIL: a cpu batch (--spmv csr, rowloop) differs from its runs alone"; exit 1; }
echo "gpu-session.sh: table and repeat check work on the cpu"
