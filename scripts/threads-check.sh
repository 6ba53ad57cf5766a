#!/usr/bin/env bash
# The CPU tests on 2 OpenMP threads with every launch forked (.ci/run calls it): `ctest -L cpu`
# in an existing build (default build, e.g. after scripts/quickstart.sh test) with each
# GoogleTest case on 2 threads (CONDSIM_TEST_THREADS, tests/CMakeLists.txt) and chunks of one
# item (CONDSIM_CPU_GRAIN=1, cpu/parallel.h), so every launch splits its items between threads.
# The tests compare against references at the tolerances they use on 1 thread: CPU reductions
# are thread-count independent by construction, so a failure here is a race or a dependence on
# the thread count.
# The suite runs in two parts, each writing the functor types it launches to a kernel log
# (CONDSIM_CPU_KERNEL_LOG): the tests that every CI stage runs, then those that some stage leaves
# out (scripts/ci-excludes.sh). A functor type launched only by the second part fails the check:
# a stage that leaves those tests out would never launch it.
# Usage: scripts/threads-check.sh [BUILD_DIR] [ctest args] (with ctest args, e.g. -R World: one
# run of those tests, without the kernel comparison, since a -R or -E of yours would replace the
# parts' own)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ -d "$1" ]; then build=$1; shift; fi
[ -f "$build/tests/CTestTestfile.cmake" ] \
  || { echo "threads-check: $build has no tests (build it first: scripts/quickstart.sh test)" >&2; exit 1; }
. scripts/ci-excludes.sh
left_out=$(ci_excluded_union)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
cd "$build"
# passive waiting: ctest runs JOBS tests at once, and spinning idle threads would starve the others
export CONDSIM_TEST_THREADS=${THREADS:-2} OMP_NUM_THREADS=${THREADS:-2} CONDSIM_CPU_GRAIN=1 OMP_WAIT_POLICY=passive
if [ $# -gt 0 ]; then
  ctest -L cpu --output-on-failure -j"${JOBS:-2}" "$@"
  exit
fi
# a list ctest cannot compile (too many groups) would exclude nothing and leave nothing out
listed=$(ctest -N -L cpu -R "$left_out" 2>&1 || true)
if ! grep -q '^ *Test *#' <<<"$listed"; then
  echo "threads-check: ctest finds no left-out test for the lists of scripts/ci-excludes.sh:" >&2
  tail -3 <<<"$listed" >&2
  exit 1
fi
status=0
echo "== the tests every CI stage runs"
CONDSIM_CPU_KERNEL_LOG=$logs/kept ctest -L cpu -E "$left_out" --output-on-failure -j"${JOBS:-2}" || status=1
echo "== the tests some CI stage leaves out (scripts/ci-excludes.sh)"
CONDSIM_CPU_KERNEL_LOG=$logs/left ctest -L cpu -R "$left_out" --output-on-failure -j"${JOBS:-2}" || status=1
touch "$logs/kept" "$logs/left"
sort -u "$logs/kept" -o "$logs/kept"
sort -u "$logs/left" -o "$logs/left"
only=$(comm -13 "$logs/kept" "$logs/left")
if [ -n "$only" ]; then
  echo "threads-check: functor types launched only by tests that a CI stage leaves out (scripts/ci-excludes.sh):" >&2
  echo "$only" >&2
  status=1
else
  echo "threads-check: the $(wc -l <"$logs/left") functor types of the left-out tests are all launched by the $(wc -l <"$logs/kept") of the kept ones"
fi
exit $status
