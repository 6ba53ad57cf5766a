#!/bin/sh
# usage: gpu_session_test.sh BUILD_DIR WORKDIR: runs scripts/gpu-session.sh on the CPU (one short
# scene, the repeat on cpu, no CUDA tests), from the build and from a package of it
# (scripts/gpu-pack.sh, --prebuilt), and checks each time its table: the cpu row ran (rc 0, the
# scene's 20 steps), the two seeded cpu runs wrote bitwise-identical output.h5, a batch of three
# episodes equals each run alone (with both --spmv values the script passes), and $OUT received
# summary.txt and gpu-session.tgz (exit 77 without HDF5); and that the CUDA test list both paths
# use (scripts/cuda-tests.sh, packed by gpu-pack.sh) holds the tests ctest's labels choose
build=$1; work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work"
cd "$root" || exit 1
check() {
  dir=$1
  grep -q "output.h5" "$dir/repeat.txt" || { echo "FAIL ($dir): no repeat result"; exit 1; }
  if grep -q "without HDF5" "$dir/repeat.txt"; then echo "skipped: built without HDF5"; exit 77; fi
  awk '$1 == "box_sliding" && $2 == "cpu" && $3 == 0 && $4 == 20 { ok = 1 } END { exit !ok }' "$dir/scenes.txt" ||
    { echo "FAIL ($dir): the cpu row of box_sliding is missing or wrong"; exit 1; }
  grep -q "bitwise identical" "$dir/repeat.txt" || { echo "FAIL ($dir): the seeded cpu repeat differs"; exit 1; }
  [ "$(grep -c "3 of 3 episodes bitwise equal" "$dir/batch.txt")" = 2 ] ||
    { echo "FAIL ($dir): a cpu batch (--spmv csr, rowloop) differs from its runs alone"; exit 1; }
  [ -s "$dir.out/summary.txt" ] && tar -tzf "$dir.out/gpu-session.tgz" > /dev/null ||
    { echo "FAIL ($dir): no summary.txt and gpu-session.tgz in \$OUT"; exit 1; }
}
run() {
  name=$1
  shift
  mkdir -p "$work/$name.out"
  OUT=$work/$name.out GPU_SESSION_WORK=$work/$name GPU_SESSION_SCENES="box_sliding:0.2" GPU_SESSION_REPEAT_BACKEND=cpu \
    GPU_SESSION_CUDA_TESTS=0 GPU_SESSION_PKG=$work/pkg.tgz bash scripts/gpu-session.sh "$@" > "$work/$name.stdout.txt" 2>&1
  cat "$work/$name.stdout.txt"
}
# the CUDA tests both paths run (scripts/cuda-tests.sh): as many gtest cases as ctest chooses
bash scripts/cuda-tests.sh "$build" > "$work/cuda-tests.txt" || { echo "FAIL: cuda-tests.sh"; exit 1; }
listed=$(awk '{ n += split($2, a, ":") } END { print n + 0 }' "$work/cuda-tests.txt")
count() { (cd "$build" && ctest -N "$@" | sed -n 's/^Total Tests: //p'); }
chosen=$(($(count -L cuda) + $(count -LE cuda -R Cuda)))
[ "$listed" = "$chosen" ] && [ "$listed" -gt 0 ] ||
  { echo "FAIL: cuda-tests.sh lists $listed tests, ctest -L cuda / -LE cuda -R Cuda choose $chosen"; exit 1; }
run session "$build"
check "$work/session"
if "$build/condsim" info | grep -q "CUDA backend *compiled"; then
  bash scripts/gpu-pack.sh "$build" "$work/pkg.tgz" || { echo "FAIL: gpu-pack.sh"; exit 1; }
  run prebuilt --prebuilt "$work/unpacked"
  check "$work/prebuilt"
  grep -q "prebuilt" "$work/prebuilt/summary.txt" || { echo "FAIL: the prebuilt binaries were not used"; exit 1; }
  tar -xzOf "$work/pkg.tgz" ./cuda-tests.txt | cmp -s - "$work/cuda-tests.txt" ||
    { echo "FAIL: the package's test list is not cuda-tests.sh's"; exit 1; }
fi
echo "gpu-session.sh: table and repeat check work on the cpu, from the build and from its package"
