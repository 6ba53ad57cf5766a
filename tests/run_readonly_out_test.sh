#!/bin/sh
# usage: run_readonly_out_test.sh CONDSIM SCENE WORKDIR: a read-only output directory fails before
# the first step (exit 1, one message naming the directory), and nothing is written in it.
# Exit 77 (skipped) as root, whom permissions do not stop (the not-a-directory case is tested
# for everyone: cli.run_out_not_a_directory).
condsim=$1; scene=$2; work=$3
[ "$(id -u)" -ne 0 ] || { echo "skipped: root writes into read-only directories"; exit 77; }
rm -rf "$work" && mkdir -p "$work/ro" && chmod 555 "$work/ro"
err=$("$condsim" run "$scene" --backend cpu --steps 5 --out "$work/ro" 2>&1 >/dev/null); rc=$?
chmod 755 "$work/ro"
echo "exit $rc; stderr: $err"
[ "$rc" -eq 1 ] || { echo "FAIL: expected exit 1"; exit 1; }
printf '%s\n' "$err" | grep -q "ro: cannot write in the output directory" || { echo "FAIL: message"; exit 1; }
[ -z "$(ls -A "$work/ro")" ] || { echo "FAIL: files were written"; exit 1; }
