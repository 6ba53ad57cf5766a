#!/bin/sh
# usage: expect_error.sh EXPECTED_EXIT REGEX COMMAND...: passes when COMMAND exits with
# EXPECTED_EXIT and its stderr matches REGEX (bad input must fail loudly and clearly)
expected=$1; regex=$2; shift 2
err=$("$@" 2>&1 >/dev/null); rc=$?
echo "exit $rc; stderr: $err"
[ "$rc" -eq "$expected" ] || { echo "FAIL: expected exit $expected"; exit 1; }
printf '%s\n' "$err" | grep -Eq -- "$regex" || { echo "FAIL: stderr does not match /$regex/"; exit 1; }
