#!/usr/bin/env bash
# condsim quick start: installs the Debian 12 packages that are missing (as root, idempotent),
# configures and builds into ./build, then
#   quickstart.sh run [args]   builds condsim only and runs the default scene, scenes/cable_winding.json
#                              (or condsim run [args])
#   quickstart.sh test         builds everything and runs the whole test suite (ctest), with ParaView's
#                              pvpython (python3-paraview) for the .xmf reader test
# Environment: BUILD_DIR (default build), JOBS (default 2), CONDSIM_CMAKE_ARGS (extra cmake args).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
[ $# -gt 0 ] && shift
case "$mode" in run|test) ;; *) echo "usage: $0 run|test [condsim run args]" >&2; exit 2 ;; esac

# required: compiler, cmake, ninja, Eigen, nlohmann-json, GoogleTest; optional but installed
# when available: HDF5 (output), TetGen (surface meshes), python3-h5py + python3-matplotlib
# (scripts/render.py)
packages="g++ cmake ninja-build pkg-config libeigen3-dev nlohmann-json3-dev libgtest-dev libhdf5-dev libtet1.5-dev python3-h5py python3-matplotlib"
# the test suite also opens condsim's .xmf files with ParaView's default reader (pvpython)
if [ "$mode" = test ]; then packages="$packages python3-paraview"; fi
. scripts/ensure-packages.sh
ensure_packages quickstart $packages

# nvcc in the default CUDA location is used when it is not on PATH (CONDSIM_CUDA=AUTO)
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

build=${BUILD_DIR:-build}
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CONDSIM_CMAKE_ARGS:-} >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
grep -- "-- condsim:" "$build/configure.log" || true

if [ "$mode" = run ]; then
  cmake --build "$build" -j"${JOBS:-2}" --target condsim
  # the default scene: the paper's cable winding (160 segments, 2 s simulated) on the CPU
  if [ $# -eq 0 ]; then set -- scenes/cable_winding.json --backend cpu; fi
  "$build/condsim" run "$@"
else
  cmake --build "$build" -j"${JOBS:-2}"
  cd "$build"
  # ctest lists skipped tests without the reason they gave: show it first, from the cuda label
  ctest -L cuda -V 2>/dev/null | grep -A1 -E ": Skipped$" | grep -vE "Skipped$|^--$" \
    | sed -E 's/^[0-9]+: /skip reason: /' | sort | uniq -c || true
  ctest --output-on-failure -j"${JOBS:-2}"
fi
