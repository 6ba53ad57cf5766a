#!/bin/sh
# usage: run_output_full_test.sh CONDSIM SCENE WORKDIR BLOCKS: runs SCENE with the file size limited
# to BLOCKS KiB (ulimit -f: writes beyond it fail with EFBIG, as on a full disk) and checks that
# the run fails with exit 1 and one message naming the output file and the reason, without a
# crash and without a .part file left behind
condsim=$1; scene=$2; work=$3; blocks=$4
rm -rf "$work" && mkdir -p "$work"
err=$( (ulimit -f "$blocks"; exec "$condsim" run "$scene" --backend cpu --threads 1 --quiet --duration 0.5 --out "$work") 2>&1)
rc=$?
echo "exit $rc; stderr: $err"
[ "$rc" -eq 1 ] || { echo "FAIL: expected exit 1"; exit 1; }
printf '%s\n' "$err" | grep -Eq "output.h5: cannot (write|flush|create|close).*File too large" || { echo "FAIL: message"; exit 1; }
[ "$(printf '%s\n' "$err" | wc -l)" -le 2 ] || { echo "FAIL: more than one message"; exit 1; }
if ls "$work"/*.part >/dev/null 2>&1; then echo "FAIL: a .part file is left"; exit 1; fi
echo "failed cleanly"
