#!/usr/bin/env bash
# The CUDA tests of a build as ctest selects them (label cuda, and tests named *Cuda*; the rule
# of `ctest -L cuda` plus `ctest -LE cuda -R Cuda`), one line per test binary in BUILD_DIR/tests:
#   NAME FILTER    (FILTER: the binary's selected gtest names joined by ':')
# Used by scripts/gpu-pack.sh (what it packs) and scripts/gpu-session.sh (what it runs), so the
# two choose the same tests.
# usage: bash scripts/cuda-tests.sh [BUILD_DIR]   (default build); PYTHON names an interpreter
set -euo pipefail
build=$(realpath -m "${1:-build}")
[ -f "$build/CTestTestfile.cmake" ] || { echo "cuda-tests: $build is not a configured build" >&2; exit 1; }
(cd "$build" && ctest --show-only=json-v1) | "${PYTHON:-python3}" -c '
import json, os, sys
tests_dir = os.path.join(sys.argv[1], "tests")
chosen = {}
for t in json.load(sys.stdin)["tests"]:
    labels = [l for p in t.get("properties", []) if p["name"] == "LABELS" for l in p["value"]]
    command = t.get("command") or []
    if ("cuda" not in labels and "Cuda" not in t["name"]) or len(command) < 2:
        continue
    if os.path.dirname(command[0]) != tests_dir or not command[1].startswith("--gtest_filter="):
        sys.exit("cuda-tests: test %s is not a gtest case of %s" % (t["name"], tests_dir))
    chosen.setdefault(os.path.basename(command[0]), []).append(command[1][len("--gtest_filter="):])
for name in sorted(chosen):
    print(name, ":".join(chosen[name]))
' "$build"
