#!/usr/bin/env bash
# The GPU work of a session in one device call (../shared/device/README.md; docs/performance.md
# "On a GPU machine"): the CUDA tests with CONDSIM_REQUIRE_CUDA=1 (no silent skips), every shipped
# scene on cuda and on cpu with their summary.json side by side, a bitwise repeat on cuda (same
# scene, backend and seed), a batch of three episodes against each run alone, compute-sanitizer's
# memcheck, racecheck, initcheck and synccheck on three steps of a contact scene, and with --bench
# the convergence-check period k = 1, 2, 4, 8 on cuda (scripts/check-every.sh), Nsight Compute's
# per-kernel times (four scenes, two whole gripping steps, a batch step at N = 4096 and N = 1) and
# the benchmarks.
# Logs go to a work folder; when $OUT is set (the device tool), $OUT/summary.txt and
# $OUT/gpu-session.tgz (everything) after each phase. Phases that would not fit the time left of
# GPU_SESSION_BUDGET seconds (default 560) are skipped with a line saying so. Copy the numbers into
# docs/performance.md (device, date, commit) and docs/scenarios.md.
#
# usage: bash scripts/gpu-session.sh [--bench] [--prebuilt] [BUILD_DIR]
#   BUILD_DIR: a CUDA build made on that machine (default /tmp/condsim-gpu-build, by
#              bash .devdeps/gpu-check.sh);
#   --prebuilt: the binaries of .gpucarry/pkg.tgz (bash scripts/gpu-pack.sh here, .gpucarry
#              carried; GPU_SESSION_PKG names another), unpacked into BUILD_DIR: nothing is built
#              there.
# GPU_SESSION_SCENES="name:seconds ..." narrows the scene list; GPU_SESSION_CUDA_TESTS=0 skips the
# CUDA tests; GPU_SESSION_SKIP="key ..." skips phases by key (tests scenes repeat memcheck racecheck
# initcheck synccheck check-every spmv solver modes detect fem vector ncu-SCENE ncu-step ncu-batch batch); GPU_SESSION_WORK names the work folder (default /tmp/gpu-session-out); GPU_SESSION_REPEAT_BACKEND=cpu
# checks the repeat on the CPU instead (a machine without a GPU); PYTHON names an interpreter with
# h5py and numpy (default /usr/bin/python3 when it has them, else python3).
set -uo pipefail
bench=0
prebuilt=0
while [ $# -gt 0 ]; do
  case $1 in
    --bench) bench=1 ;;
    --prebuilt) prebuilt=1 ;;
    *) break ;;
  esac
  shift
done
build=$(realpath -m "${1:-/tmp/condsim-gpu-build}")
out=$(realpath -m "${GPU_SESSION_WORK:-/tmp/gpu-session-out}")
[ -n "${GPU_SESSION_PKG:-}" ] && GPU_SESSION_PKG=$(realpath -m "$GPU_SESSION_PKG")
cd "$(dirname "$0")/.."
t0=$(date +%s)
budget=${GPU_SESSION_BUDGET:-560}
left() { echo $((t0 + budget - $(date +%s))); }
# the work folder is replaced only when it is empty or an earlier session's
if [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -f "$out/summary.txt" ]; then
  echo "gpu-session: $out is not empty and not a session's work folder; name another GPU_SESSION_WORK"
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/scenes"
say() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$out/summary.txt"; }
pack() {
  [ -n "${OUT:-}" ] || return 0
  cp "$out/summary.txt" "$OUT/summary.txt"
  tar -C "$(dirname "$out")" -czf "$OUT/gpu-session.tgz" "$(basename "$out")"
}
# a command's time limit: $1 seconds, or what is left of the budget (10 s at least)
cap() {
  local t=$1 l
  l=$(left)
  [ "$l" -lt "$t" ] && t=$l
  [ "$t" -lt 10 ] && t=10
  echo "$t"
}
# a phase needs about $1 seconds; $3, its key, may be named in GPU_SESSION_SKIP
fits() {
  case " ${GPU_SESSION_SKIP:-} " in
    *" $3 "*) say "skipped: $2 (GPU_SESSION_SKIP)"; return 1 ;;
  esac
  [ "$(left)" -ge "$1" ] && return 0
  say "skipped: $2 (about $1 s, $(left) s left of GPU_SESSION_BUDGET)"
  return 1
}
python=${PYTHON:-}
if [ -z "$python" ]; then
  python=python3
  /usr/bin/python3 -c "import h5py, numpy" 2>/dev/null && python=/usr/bin/python3
fi

if [ $prebuilt -eq 1 ]; then
  pkg=${GPU_SESSION_PKG:-.gpucarry/pkg.tgz}
  [ -f "$pkg" ] || { echo "gpu-session: $pkg not found (bash scripts/gpu-pack.sh, then carry .gpucarry)"; exit 1; }
  # only a folder this script unpacked into is replaced (never a build of the project)
  if [ -e "$build" ] && [ ! -f "$build/.gpu-session-prebuilt" ]; then
    echo "gpu-session: $build exists and is not a folder of --prebuilt; name another BUILD_DIR"
    exit 1
  fi
  rm -rf "$build"
  mkdir -p "$build/pkg" "$build/need"
  touch "$build/.gpu-session-prebuilt"
  tar -C "$build/pkg" -xzf "$pkg"
  # of the packed libraries only those the machine lacks; the others it lacks (CUDA's, e.g.
  # libcusparse) from wherever its toolkit keeps them
  libs=$build/need
  for pass in 1 2 3 4 5 6; do
    missing=$(for b in "$build"/pkg/bin/*; do LD_LIBRARY_PATH=$libs ldd "$b"; done | awk '/not found/ { print $1 }' | sort -u)
    [ -z "$missing" ] && break
    for m in $missing; do
      if [ -f "$build/pkg/lib/$m" ]; then
        ln -sf "$build/pkg/lib/$m" "$build/need/$m"
      else
        f=$(timeout 60 find /usr/local /opt /usr/lib /usr/lib64 -name "$m" 2>/dev/null | head -1)
        if [ -n "$f" ]; then libs=$libs:$(dirname "$f"); else say "missing library: $m"; fi
      fi
    done
  done
  say "prebuilt $(cat "$build/pkg/commit.txt"); packed libraries used: $(ls "$build/need" | tr '\n' ' ')"
  mkdir -p "$build/tests"
  for b in "$build"/pkg/bin/*; do
    dest=$build/tests/$(basename "$b")
    [ "$(basename "$b")" = condsim ] && dest=$build/condsim
    printf '#!/bin/sh\nLD_LIBRARY_PATH='"'"'%s'"'"'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec '"'"'%s'"'"' "$@"\n' "$libs" "$b" > "$dest"
    chmod +x "$dest"
  done
fi
bin=$build/condsim
# what compute-sanitizer runs: the binary itself, with the library path of the wrapper
sanitized=("$bin")
[ $prebuilt -eq 1 ] && sanitized=(env "LD_LIBRARY_PATH=$libs" "$build/pkg/bin/condsim")
[ -x "$bin" ] || { echo "gpu-session: $bin not found (run bash .devdeps/gpu-check.sh first, or use --prebuilt)"; exit 1; }
git rev-parse --short=12 HEAD > "$out/commit.txt" 2>/dev/null || echo unknown > "$out/commit.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
say "device: $(cat "$out/gpu.txt"); tree $(cat "$out/commit.txt")"
status=0

# the CUDA tests, failing instead of skipping without a device
if [ "${GPU_SESSION_CUDA_TESTS:-1}" = 0 ]; then
  say "skipped: CUDA tests (GPU_SESSION_CUDA_TESTS=0)"
elif fits 30 "CUDA tests" tests; then
  # the tests ctest would choose (scripts/cuda-tests.sh), the same list from a build and a package
  list=$build/pkg/cuda-tests.txt
  if [ $prebuilt -eq 0 ]; then
    list=$out/cuda-tests.txt
    bash scripts/cuda-tests.sh "$build" > "$list" || { say "cuda-tests.sh failed"; status=1; : > "$list"; }
  fi
  while read -r name filter; do
    CONDSIM_REQUIRE_CUDA=1 timeout "$(cap 300)" "$build/tests/$name" --gtest_filter="$filter" < /dev/null > "$out/test-$name.txt" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    say "$name: rc $rc, $(grep -E '^\[  PASSED|^\[  FAILED  \] [0-9]' "$out/test-$name.txt" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \] [A-Z]' "$out/test-$name.txt" | grep -v " ms)" | tee -a "$out/summary.txt"
  done < "$list"
  pack
fi

# a summary.json field (one "key": value per line, as condsim writes it)
field() { grep -m1 "\"$2\"" "$1" 2>/dev/null | sed 's/.*: *//; s/,$//; s/"//g'; }

# scenes and durations [s]: short enough for both backends inside one 10-minute call
# (H200, 2026-11-27: 140 s for both backends)
scenes=${GPU_SESSION_SCENES:-"box_sliding:1 anisotropic_box:1 cable_winding:2 cable_winding_320:2 soft_mat_folding:3 soft_ball_gripping:2 soft_gripper:1.5"}
if fits 150 "the shipped scenes" scenes; then
printf '%-20s %-5s %4s %6s %9s %11s %9s %9s %8s %s\n' scene backend rc steps mean_it max_pen_mm dyn_ms sol_ms wall_s diverged | tee "$out/scenes.txt"
for entry in $scenes; do
  name=${entry%%:*}
  seconds=${entry##*:}
  for backend in cuda cpu; do
    dir=$out/scenes/$name-$backend
    timeout "$(cap 240)" "$bin" run "scenes/$name.json" --backend "$backend" --duration "$seconds" --quiet --no-output --out "$dir" \
      > "$out/scenes/$name-$backend.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    s=$dir/summary.json
    pen=$(field "$s" max_penetration_m)
    [ -n "$pen" ] && pen=$(awk -v p="$pen" 'BEGIN { printf "%.3g", p * 1e3 }')
    printf '%-20s %-5s %4s %6s %9s %11s %9s %9s %8s %s\n' "$name" "$backend" "$rc" "$(field "$s" steps)" \
      "$(field "$s" mean_iterations | cut -c1-8)" "${pen:--}" "$(field "$s" dynamics_ms_per_step | cut -c1-8)" \
      "$(field "$s" solver_ms_per_step | cut -c1-8)" "$(field "$s" wall_s | cut -c1-7)" "$(field "$s" diverged)" | tee -a "$out/scenes.txt"
  done
done
cat "$out/scenes.txt" >> "$out/summary.txt"
pack
fi

# same scene, backend and seed twice: the output files must be bitwise identical
repeat=${GPU_SESSION_REPEAT_BACKEND:-cuda}
if fits 30 "the bitwise repeat and the batch against single runs" repeat; then
what="$repeat repeat (soft_ball_gripping, seed 3, 0.3 s)"
failed=0
for k in 1 2; do
  rm -rf "/tmp/gpu-session-repeat-$k"
  timeout "$(cap 240)" "$bin" run scenes/soft_ball_gripping.json --backend "$repeat" --seed 3 --duration 0.3 --quiet \
    --out "/tmp/gpu-session-repeat-$k" > "$out/repeat-$k.log" 2>&1 || failed=1
done
if [ $failed -eq 1 ]; then
  echo "$what: a run failed (repeat-1.log, repeat-2.log)" | tee "$out/repeat.txt"
  status=1
elif [ ! -f /tmp/gpu-session-repeat-1/output.h5 ]; then
  echo "$what: no output.h5 (condsim built without HDF5)" | tee "$out/repeat.txt"
  status=1
elif cmp -s /tmp/gpu-session-repeat-1/output.h5 /tmp/gpu-session-repeat-2/output.h5; then
  echo "$what: output.h5 bitwise identical" | tee "$out/repeat.txt"
else
  echo "$what: output.h5 DIFFERS" | tee "$out/repeat.txt"
  status=1
fi

# a batch on the same backend: three episodes packed in one World against each run alone
# (docs/batch.md: bitwise on the CPU; on CUDA the per-environment reductions follow one order
# whatever the number of environments, but the cuSPARSE SpMV's row splits are not documented, so
# this records whether they agree bitwise)
rm -f "$out/batch.txt"
for spmv in csr rowloop; do
  bdir=/tmp/gpu-session-batch-$spmv
  rm -rf "$bdir"
  if timeout "$(cap 240)" "$bin" batch scenes/soft_ball_gripping.json --envs 3 --episodes 3 --steps 30 --backend "$repeat" --spmv $spmv \
       --quiet --out "$bdir/batch" > "$out/batch-$spmv.log" 2>&1; then
    same=0
    for i in 0 1 2; do
      seed=$("$python" tests/batch_check.py seeds "$bdir/batch/manifest.h5" | awk -v i=$i '$1 == i { print $2 }')
      timeout "$(cap 240)" "$bin" run scenes/soft_ball_gripping.json --backend "$repeat" --spmv $spmv --seed "$seed" --steps 30 --quiet \
        --out "$bdir/run-$i" >> "$out/batch-$spmv.log" 2>&1
      "$python" tests/batch_check.py same "$bdir/batch/episodes/episode_00000$i.h5" "$bdir/run-$i/output.h5" >> "$out/batch-$spmv.log" 2>&1 \
        && same=$((same + 1))
    done
    echo "$repeat batch --spmv $spmv (soft_ball_gripping, 3 environments, 30 steps): $same of 3 episodes bitwise equal to run --seed" \
      | tee -a "$out/batch.txt"
  else
    echo "$repeat batch --spmv $spmv: condsim batch failed (batch-$spmv.log)" | tee -a "$out/batch.txt"
    status=1
  fi
done
cat "$out/repeat.txt" "$out/batch.txt" >> "$out/summary.txt"
pack
fi

# compute-sanitizer on three steps of a contact scene (every stage of a step runs)
if command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck initcheck synccheck; do
    fits 40 "compute-sanitizer $tool" "$tool" || continue
    timeout "$(cap 120)" compute-sanitizer --tool $tool --error-exitcode 9 "${sanitized[@]}" run scenes/soft_ball_gripping.json --backend cuda \
      --steps 3 --quiet --no-output > "$out/sanitizer-$tool.txt" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    say "compute-sanitizer $tool (soft_ball_gripping, 3 steps): rc $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool.txt" | head -1 | sed 's/=* *//')"
    pack
  done
else
  say "skipped: compute-sanitizer (not on PATH)"
fi

if [ $bench -eq 1 ]; then
  # the convergence-check period on the GPU (docs/solver.md "Convergence checks"): k = 1, 2, 4, 8
  if fits 90 "check-every" check-every; then
    PYTHON=$python timeout "$(cap 300)" bash scripts/check-every.sh "$bin" cuda 30 > "$out/check-every.txt" 2>&1
    say "check-every: rc $?"
    cat "$out/check-every.txt" >> "$out/summary.txt"
    pack
  fi
  # cuda rows only (the scenes above compare the backends); seconds each on the H200
  for b in spmv:30 solver:10 modes:45 detect:30 fem:30 vector:15; do
    name=${b%%:*}
    fits "${b##*:}" "bench $name" "$name" || continue
    reps=20
    if [ "$name" = solver ] || [ "$name" = modes ]; then reps=3; fi
    timeout "$(cap 300)" "$bin" bench "$name" --backend cuda --reps $reps > "$out/bench-$name.txt" 2>&1
    say "bench $name: rc $?"
    pack
  done
  # per-kernel GPU time of 300 launches after the first 3000, of 10 steps (a cable's first steps,
  # before contact, take few launches); Nsight Compute serializes and times each launch: the
  # kernels' share of an iteration, apart from the launch gaps
  if command -v ncu > /dev/null; then
    for scene in cable_winding soft_mat_folding soft_ball_gripping soft_gripper; do
      fits 60 "ncu $scene" "ncu-$scene" || continue
      timeout "$(cap 120)" ncu --launch-skip 3000 --launch-count 300 --metrics gpu__time_duration.sum --print-summary per-kernel \
        "${sanitized[@]}" run "scenes/$scene.json" --backend cuda --steps 10 --quiet --no-output > "$out/ncu-$scene.txt" 2>&1
      say "ncu $scene: rc $?"
      pack
    done
    # the kernels of one whole step picked by its NVTX range (condsim/profile.h: "step K", its
    # stages and the COND loop inside): the soft ball's step 45 (fingers closed, virtual nodes)
    # and the gripper's step 28, where the host waits on the GPU far longer than the first steps'
    # kernels take (docs/performance.md "GPU")
    for pick in soft_ball_gripping:45 soft_gripper:28; do
      scene=${pick%%:*} step=${pick##*:}
      fits 60 "ncu $scene step $step" "ncu-step" || continue
      timeout "$(cap 120)" ncu --nvtx --nvtx-include "step $step/" --launch-count 3000 --metrics gpu__time_duration.sum \
        --print-summary per-kernel "${sanitized[@]}" run "scenes/$scene.json" --backend cuda --steps $((step + 1)) --quiet \
        --no-output > "$out/ncu-$scene-step$step.txt" 2>&1
      say "ncu $scene step $step: rc $?"
      pack
    done
    # the batch's second step at N = 4096 cables in one World, every kernel of it (its NVTX range),
    # and the same at N = 1: the kernel whose time grows with N (docs/performance.md, "GPU")
    for n in 4096 1; do
      fits 150 "ncu batch N = $n step 1" ncu-batch || continue
      rm -rf "/tmp/gpu-session-ncu-batch-$n"
      timeout "$(cap 240)" ncu --nvtx --nvtx-include "step 1/" --launch-count 3000 --metrics gpu__time_duration.sum \
        --print-summary per-kernel "${sanitized[@]}" batch scenes/cable_winding.json --envs $n --episodes $n --steps 2 \
        --backend cuda --quiet --out "/tmp/gpu-session-ncu-batch-$n" > "$out/ncu-batch-$n.txt" 2>&1
      say "ncu batch N = $n step 1: rc $?"
      pack
    done
  fi
  # env-steps/s up to 4096 cables per World (design target on CUDA: >= 1e5 at N = 4096)
  if fits 160 "bench batch" batch; then
    timeout "$(cap 300)" "$bin" bench batch --backend cuda --max-envs 4096 --steps 5 --reps 3 --scenes scenes/cable_winding.json \
      --json "$out/bench-batch.json" > "$out/bench-batch.txt" 2>&1
    say "bench batch: rc $?"
  fi
fi
say "done: status $status"
pack
exit $status
