#!/usr/bin/env bash
# Runs every shipped scene with --threads 1 and --threads 2 while two busy-loop processes load the
# machine, and prints the wall times and their ratio (2 threads / 1 thread; docs/performance.md,
# "Threads on a busy machine"). Usage:
#   scripts/threads-under-load.sh [CONDSIM] [--duration S] [--reps N] [scene.json ...]
# Defaults: build/condsim, each scene's first 1 s simulated, 5 repetitions (1 and 2 threads
# alternately; the medians are printed), every scenes/*.json. The busy loops end with the script.
set -euo pipefail
cd "$(dirname "$0")/.."
condsim=build/condsim
if [ $# -gt 0 ] && [ -x "$1" ] && [ ! -d "$1" ]; then condsim=$1; shift; fi
duration=1 reps=5
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) break ;;
  esac
done
scenes=("$@")
[ ${#scenes[@]} -gt 0 ] || scenes=(scenes/*.json)
out=$(mktemp -d)
busy=()
cleanup() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT
for _ in 1 2; do
  (while :; do :; done) &
  busy+=($!)
done
# wall seconds of one run
wall() {
  local t0 t1
  t0=$(date +%s.%N)
  "$condsim" run "$2" --backend cpu --threads "$1" --quiet --no-output --duration "$duration" --out "$out/run" >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-22s %10s %10s %8s\n' scene "1 thread" "2 threads" ratio
for scene in "${scenes[@]}"; do
  # 1 and 2 threads alternately, so both see the same drift of the machine's load
  one=() two=()
  for _ in $(seq "$reps"); do
    one+=("$(wall 1 "$scene")")
    two+=("$(wall 2 "$scene")")
  done
  t1=$(median "${one[@]}") t2=$(median "${two[@]}")
  printf '%-22s %9.2fs %9.2fs %8.2f\n' "$(basename "$scene" .json)" "$t1" "$t2" "$(awk -v a="$t1" -v b="$t2" 'BEGIN {print b / a}')"
done
