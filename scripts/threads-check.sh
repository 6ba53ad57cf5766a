#!/usr/bin/env bash
# The CPU tests on 2 OpenMP threads with every launch forked (.ci/run calls it): `ctest -L cpu`
# in an existing build (default build, e.g. after scripts/quickstart.sh test) with each
# GoogleTest case on 2 threads (CONDSIM_TEST_THREADS, tests/CMakeLists.txt) and chunks of one
# item (CONDSIM_CPU_GRAIN=1, cpu/parallel.h), so every launch splits its items between threads.
# The tests compare against references at the tolerances they use on 1 thread: CPU reductions
# are thread-count independent by construction, so a failure here is a race or a dependence on
# the thread count. Usage: scripts/threads-check.sh [BUILD_DIR] [ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ -d "$1" ]; then build=$1; shift; fi
[ -f "$build/tests/CTestTestfile.cmake" ] \
  || { echo "threads-check: $build has no tests (build it first: scripts/quickstart.sh test)" >&2; exit 1; }
cd "$build"
# passive waiting: ctest runs JOBS tests at once, and spinning idle threads would starve the others
export CONDSIM_TEST_THREADS=${THREADS:-2} OMP_NUM_THREADS=${THREADS:-2} CONDSIM_CPU_GRAIN=1 OMP_WAIT_POLICY=passive
ctest -L cpu --output-on-failure -j"${JOBS:-2}" "$@"
