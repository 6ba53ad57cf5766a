#!/usr/bin/env bash
# The GPU work of a session in one device call, after `bash .devdeps/gpu-check.sh` has built the
# project (../shared/device/README.md): every shipped scene on cuda and on cpu with their
# summary.json side by side, a bitwise repeat on cuda (same scene, same backend, same seed), a
# batch of three episodes against each run alone, and optionally the benchmarks (with the
# convergence-check period k = 1, 2, 4, 8 on cuda: scripts/check-every.sh). Everything lands in $OUT (the device tool brings it back); copy the
# numbers into docs/performance.md (with device, date and commit) and docs/scenarios.md (current numbers).
#
# usage: bash scripts/gpu-session.sh [--bench] [BUILD_DIR]   (default /tmp/condsim-gpu-build)
# GPU_SESSION_SCENES="name:seconds ..." narrows the scene list; GPU_SESSION_REPEAT_BACKEND=cpu
# checks the repeat on the CPU instead (a machine without a GPU).
set -uo pipefail
bench=0
if [ "${1:-}" = "--bench" ]; then bench=1; shift; fi
build=${1:-/tmp/condsim-gpu-build}
out=${OUT:-/tmp/gpu-session-out}
bin=$build/condsim
mkdir -p "$out/scenes"
[ -x "$bin" ] || { echo "gpu-session: $bin not found (run bash .devdeps/gpu-check.sh first)"; exit 1; }
git rev-parse --short=12 HEAD > "$out/commit.txt" 2>/dev/null || echo unknown > "$out/commit.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1

# a summary.json field (one "key": value per line, as condsim writes it)
field() { grep -m1 "\"$2\"" "$1" 2>/dev/null | sed 's/.*: *//; s/,$//; s/"//g'; }

# scenes and durations [s]: short enough for both backends inside one 10-minute call
scenes=${GPU_SESSION_SCENES:-"box_sliding:1 anisotropic_box:1 cable_winding:2 cable_winding_320:2 soft_mat_folding:3 soft_ball_gripping:2 soft_gripper:1.5"}
status=0
printf '%-20s %-5s %4s %6s %9s %11s %9s %9s %8s %s\n' scene backend rc steps mean_it max_pen_mm dyn_ms sol_ms wall_s diverged | tee "$out/scenes.txt"
for entry in $scenes; do
  name=${entry%%:*}
  seconds=${entry##*:}
  for backend in cuda cpu; do
    dir=$out/scenes/$name-$backend
    timeout 240 "$bin" run "scenes/$name.json" --backend "$backend" --duration "$seconds" --quiet --no-output --out "$dir" \
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

# same scene, backend and seed twice: the output files must be bitwise identical
repeat=${GPU_SESSION_REPEAT_BACKEND:-cuda}
what="$repeat repeat (soft_ball_gripping, seed 3, 0.3 s)"
failed=0
for k in 1 2; do
  rm -rf "/tmp/gpu-session-repeat-$k"
  timeout 240 "$bin" run scenes/soft_ball_gripping.json --backend "$repeat" --seed 3 --duration 0.3 --quiet \
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
python=${PYTHON:-/usr/bin/python3}
rm -f "$out/batch.txt"
for spmv in csr rowloop; do
  bdir=/tmp/gpu-session-batch-$spmv
  rm -rf "$bdir"
  if timeout 240 "$bin" batch scenes/soft_ball_gripping.json --envs 3 --episodes 3 --steps 30 --backend "$repeat" --spmv $spmv \
       --quiet --out "$bdir/batch" > "$out/batch-$spmv.log" 2>&1; then
    same=0
    for i in 0 1 2; do
      seed=$("$python" tests/batch_check.py seeds "$bdir/batch/manifest.h5" | awk -v i=$i '$1 == i { print $2 }')
      timeout 240 "$bin" run scenes/soft_ball_gripping.json --backend "$repeat" --spmv $spmv --seed "$seed" --steps 30 --quiet \
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

if [ $bench -eq 1 ]; then
  # the convergence-check period on the GPU (docs/solver.md "Convergence checks"): k = 1, 2, 4, 8
  timeout 480 bash scripts/check-every.sh "$bin" cuda 30 > "$out/check-every.txt" 2>&1
  echo "check-every rc=$?"
  # the batch benchmark: env-steps/s up to 4096 cables per World (design target on CUDA: >= 1e5 at N = 4096)
  timeout 480 "$bin" bench batch --backend cuda --max-envs 4096 --steps 5 --reps 3 --scenes scenes/cable_winding.json \
    --json "$out/bench-batch.json" > "$out/bench-batch.txt" 2>&1
  echo "bench batch rc=$?"
  for b in spmv vector detect fem solver modes; do
    # whole solves (solver, modes) take seconds each on the cpu rows: 3 reps
    reps=20
    if [ "$b" = solver ] || [ "$b" = modes ]; then reps=3; fi
    timeout 300 "$bin" bench "$b" --backend all --reps $reps > "$out/bench-$b.txt" 2>&1
    echo "bench $b rc=$?"
  done
fi
exit $status
