#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer (.ci/run calls it): a
# separate build (BUILD_DIR, default build-asan; no CUDA: nvcc compiles device code, which the
# sanitizers do not see) with -fsanitize=address,undefined, any report fatal, then `ctest -L cpu`.
# Out-of-bounds accesses, use after free, leaks and undefined behaviour (signed overflow,
# misaligned or null accesses, bad shifts) in host code and in the shared functors as the CPU
# backend runs them fail the run. ASAN_EXCLUDE (scripts/ci-excludes.sh) leaves out the longest
# tests (ASAN_EXCLUDE= runs them all; a -E among the ctest args replaces it). Usage:
# scripts/sanitizers.sh [ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-asan}
mkdir -p "$build"
# -O1 -g1 (line tables) rather than RelWithDebInfo's -O2 -g: the build is most of this stage's
# time on 2 cores, and the reports keep their function names and lines; NDEBUG as in Release
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1 -g1 -DNDEBUG"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCONDSIM_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j"${JOBS:-2}"
. scripts/ci-excludes.sh
cd "$build"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest -L cpu ${ASAN_EXCLUDE:+-E "$ASAN_EXCLUDE"} --output-on-failure -j"${JOBS:-2}" "$@"
