#!/usr/bin/env bash
# Packs a CUDA build made here for a bare GPU machine (../shared/device/README.md), so that the
# device call builds nothing: condsim and the test binaries that hold CUDA tests, stripped, the
# list of those tests, and the shared libraries they need that are neither glibc's, libstdc++'s
# nor CUDA's (HDF5 and its dependencies, TetGen, OpenMP), into .gpucarry/pkg.tgz (git-ignored,
# about 25 MB). Carry .gpucarry with the device call and run there
#   bash scripts/gpu-session.sh --prebuilt [--bench]
# which uses only the libraries the machine lacks (found by ldd) and CUDA's own from its toolkit.
# usage: bash scripts/gpu-pack.sh [BUILD_DIR] [PKG]   (defaults build, .gpucarry/pkg.tgz; the build
#        configured with CUDA, sm_90)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
pkg=${2:-.gpucarry/pkg.tgz}
[ -x "$build/condsim" ] || { echo "gpu-pack: $build/condsim not found (build first)" >&2; exit 1; }
"$build/condsim" info | grep -q "CUDA backend *compiled" ||
  { echo "gpu-pack: $build/condsim was built without the CUDA backend (condsim info)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$(dirname "$pkg")"
cp "$build/condsim" "$stage/bin/"
# the test binaries with CUDA tests and their gtest filters, as ctest chooses them
bash scripts/cuda-tests.sh "$build" > "$stage/cuda-tests.txt"
while read -r name _; do cp "$build/tests/$name" "$stage/bin/"; done < "$stage/cuda-tests.txt"
strip "$stage"/bin/*
# shared libraries outside glibc, the compiler runtime and CUDA
missing=$(for f in "$stage"/bin/*; do ldd "$f"; done | awk '/not found/ { print $1 }' | sort -u)
[ -z "$missing" ] || { echo "gpu-pack: libraries not found here: $missing" >&2; exit 1; }
for f in "$stage"/bin/*; do ldd "$f"; done | awk '/=>/ && $3 ~ /^\// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libpthread|librt|libdl|libresolv|ld-linux[^/]*)\.so|libstdc\+\+|libgcc_s|/cuda|libcusparse|libnvJitLink|libcudart' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
git rev-parse --short=12 HEAD > "$stage/commit.txt" 2>/dev/null || echo unknown > "$stage/commit.txt"
tar -C "$stage" -czf "$pkg" .
echo "gpu-pack: $pkg ($(du -h "$pkg" | cut -f1)): $(ls "$stage/bin" | wc -l) binaries, $(ls "$stage/lib" | wc -l) libraries, $(wc -l < "$stage/cuda-tests.txt") test binaries with CUDA tests"
echo "gpu-pack: carry .gpucarry and run there: bash scripts/gpu-session.sh --prebuilt [--bench]"
