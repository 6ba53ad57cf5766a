#!/usr/bin/env bash
# The CPU tests under ThreadSanitizer with LLVM's OpenMP race checker Archer (.ci/run calls it): a
# separate build (BUILD_DIR, default build-tsan; no CUDA) with Debian's clang-14,
# -fsanitize=thread and LLVM's OpenMP runtime (libomp: -fopenmp=libomp; GCC's libgomp is not
# understood by TSan), then `ctest -L cpu` with 2 OpenMP threads per test and every launch forked
# into chunks of one item (CONDSIM_CPU_GRAIN=1), Archer loaded through OMP_TOOL_LIBRARIES so that
# TSan sees OpenMP's barriers and fork/join. Two threads touching one address within a launch,
# one of them writing, fail the run (halt_on_error). scripts/tsan.supp lists the proven false
# positives in third-party code. Installs clang-14 and libomp-14-dev when missing (as root).
# Usage: scripts/tsan.sh [ctest args]   (e.g. -R World to run a subset)
# TSAN_EXCLUDE (scripts/ci-excludes.sh, a ctest -E regex) leaves out the longest tests; every
# kernel they launch is launched by a test that runs here (checked by scripts/threads-check.sh).
# TSAN_EXCLUDE= runs all of `ctest -L cpu`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
llvm=/usr/lib/llvm-14
packages="clang-14 libomp-14-dev"
. scripts/ensure-packages.sh
ensure_packages tsan $packages
archer=$llvm/lib/libarcher.so
for f in $llvm/bin/clang++ $llvm/lib/libomp.so "$archer"; do
  [ -e "$f" ] || { echo "tsan: $f is missing (from clang-14 / libomp-14-dev)" >&2; exit 1; }
done

build=${BUILD_DIR:-build-tsan}
mkdir -p "$build"
# -O1 -g1 (line tables) rather than RelWithDebInfo's -O2 -g, as in sanitizers.sh; NDEBUG as in Release
flags="-fsanitize=thread -fno-omit-frame-pointer -O1 -g1 -DNDEBUG"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCONDSIM_CUDA=OFF \
  -DCMAKE_CXX_COMPILER=$llvm/bin/clang++ -DOpenMP_CXX_FLAGS=-fopenmp=libomp \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" ${CONDSIM_CMAKE_ARGS:-} \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j"${JOBS:-2}"
# the runtime the tests link must be libomp (TSan does not understand libgomp's synchronization)
grep -q "libomp" <<<"$(ldd "$build/tests/cpu_backend_test")" \
  || { echo "tsan: $build/tests/cpu_backend_test is not linked with libomp" >&2; exit 1; }

cd "$build"
# Archer must be active: it says so on stderr with verbose=1 (one short probe)
export OMP_TOOL_LIBRARIES=$archer
probe=$(ARCHER_OPTIONS=verbose=1 OMP_NUM_THREADS=2 ./tests/cpu_backend_test \
  --gtest_filter='CpuBackend.PrimitivesMatchReferences' 2>&1 || true)
grep -q "Archer detected OpenMP application with TSan" <<<"$probe" \
  || { echo "tsan: Archer ($archer) did not start: ARCHER_OPTIONS=verbose=1 printed no banner" >&2; exit 1; }
# 2 threads per test (tests/CMakeLists.txt, CONDSIM_TEST_THREADS), every launch forked, passive
# waiting (ctest runs JOBS tests at once: spinning idle threads would starve the others)
export CONDSIM_TEST_THREADS=2 OMP_NUM_THREADS=2 CONDSIM_CPU_GRAIN=1 OMP_WAIT_POLICY=passive
# ignore_noninstrumented_modules: no reports inside libomp, libstdc++, HDF5 or GoogleTest (built
# without TSan; Archer's recommended setting); any report fails the test (exit code 66)
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$root/scripts/tsan.supp}
. "$root/scripts/ci-excludes.sh"
exclude=$TSAN_EXCLUDE
ctest -L cpu ${exclude:+-E "$exclude"} --output-on-failure -j"${JOBS:-2}" "$@"
