#!/bin/sh
# CONDSIM_CPU_KERNEL_LOG (cpu/parallel.h; scripts/threads-check.sh uses it): two runs of
# box_sliding append each functor type they launch once per process, so every line of the log
# appears exactly twice, and the COND loop's kernels are among them; an unwritable log path is an
# error naming the variable. usage: kernel_log_test.sh CONDSIM SCENES_DIR
condsim=$1; scenes=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
for i in 1 2; do
  CONDSIM_CPU_KERNEL_LOG=$dir/log "$condsim" run "$scenes/box_sliding.json" --backend cpu --steps 3 --no-output --out "$dir/out" >/dev/null 2>&1 \
    || { echo "FAIL: run $i"; exit 1; }
done
lines=$(wc -l <"$dir/log"); types=$(sort -u "$dir/log" | wc -l)
echo "log: $lines lines, $types types"
[ "$types" -ge 5 ] || { echo "FAIL: fewer than 5 functor types"; exit 1; }
[ "$lines" -eq $((2 * types)) ] || { echo "FAIL: a type not logged exactly once per run"; exit 1; }
for k in condsim::CondResidualOp condsim::ContactSweepOp condsim::CondChebyshevStepOp; do
  grep -qx "$k" "$dir/log" || { echo "FAIL: $k missing"; exit 1; }
done
err=$(CONDSIM_CPU_KERNEL_LOG=$dir/no/such/dir/log "$condsim" run "$scenes/box_sliding.json" --backend cpu --steps 1 --no-output --out "$dir/out" 2>&1 >/dev/null)
rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: an unwritable log gave exit 0"; exit 1; }
printf '%s\n' "$err" | grep -q "CONDSIM_CPU_KERNEL_LOG: cannot open" || { echo "FAIL: message: $err"; exit 1; }
echo "pass"
