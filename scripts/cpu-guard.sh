#!/usr/bin/env bash
# The CPU tests and every shipped scene in the guarded-memory mode of the CPU backend
# (CONDSIM_CPU_GUARD=1, cpu/guarded_memory.h; .ci/run calls it): backend arrays are inaccessible
# outside launches and copies, fresh memory is NaN, and a launched functor holding a host pointer
# throws. Host code that would crash on a GPU, host pointers in kernels and reads of memory no
# kernel wrote fail here. Then every shipped scene, run for a short time in the mode, must give
# output.h5 datasets bit for bit equal to the run without it (a read of never-written memory
# would bring in a NaN). Usage: scripts/cpu-guard.sh [BUILD_DIR] [--duration S]
# (defaults: build, 0.05 s). Cost: 130 s of CPU (docs/architecture.md, "Checking the CUDA path
# without a GPU").
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build=$1; shift; fi
duration=0.05
if [ "${1:-}" = "--duration" ]; then duration=$2; shift 2; fi
# tests left out: GUARD_EXCLUDE of scripts/ci-excludes.sh (with the reason; it may be overridden
# from the environment)
. scripts/ci-excludes.sh
exclude=$GUARD_EXCLUDE
status=0
echo "== ctest -L cpu with CONDSIM_CPU_GUARD=1 (excluded: $exclude)"
(cd "$build" && CONDSIM_CPU_GUARD=1 ctest -L cpu ${exclude:+-E "$exclude"} -j"${JOBS:-2}" --timeout 300 --output-on-failure) || status=1
echo "== every shipped scene for $duration s with CONDSIM_CPU_GUARD=1 against the run without it"
OMP_NUM_THREADS=2 OUT="${OUT:-$(mktemp -d)}/guard" REUSE_OLD=0 NEW_ENV="CONDSIM_CPU_GUARD=1" \
  bash scripts/compare-scenes.sh "$build/condsim" "$build/condsim" --duration "$duration" || status=1
[ $status -eq 0 ] && echo "cpu guard: the CPU tests pass and every scene is identical in guarded memory"
exit $status
