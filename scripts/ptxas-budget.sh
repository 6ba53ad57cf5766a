#!/usr/bin/env bash
# Kernel resource budget (.ci/run calls it; no GPU needed): compiles the CUDA sources again as the
# build does, with -Xptxas -v, and reads every condsim kernel's registers, spill bytes and stack
# frame; compares them with cuda/ptxas-budget.txt and fails when a kernel grows past its line or
# has none. CUB/Thrust kernels are not budgeted. Usage:
#   scripts/ptxas-budget.sh [BUILD_DIR] [--update]   (default build; --update rewrites the file)
# Skips (exit 0 with a note) when BUILD_DIR was configured without CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build update=0
for a in "$@"; do
  case "$a" in
    --update) update=1 ;;
    *) build=$a ;;
  esac
done
budget=cuda/ptxas-budget.txt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for src in cuda/kernels_cuda.cu cuda/cuda_backend.cu; do
  obj="CMakeFiles/condsim_core.dir/$src.o"
  cmd=$(ninja -C "$build" -t commands "$obj" 2>/dev/null | tail -1)
  case "$cmd" in
    *nvcc*) ;;
    *) echo "ptxas budget: $build has no CUDA build of $src (configured without nvcc); skipped"; exit 0 ;;
  esac
  # the build's own command, without its dependency file and object, plus ptxas' report
  cmd=$(printf '%s' "$cmd" | sed -E 's/ -MD -MT [^ ]+ -MF [^ ]+//; s/ -o [^ ]+$//')
  (cd "$build" && eval "$cmd -Xptxas -v -o $out/$(basename "$src").o") 2>"$out/$(basename "$src").log"
done
/usr/bin/python3 - "$out" "$budget" "$update" <<'PY'
import glob, re, subprocess, sys
out, budget_path, update = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
usage = {}  # kernel -> [registers, stack, spill]
for log in sorted(glob.glob(out + "/*.log")):
    name = None
    for line in open(log):
        # an entry (a kernel) is compiled, then its properties follow; other "Function properties"
        # blocks are device functions, not budgeted
        m = re.search(r"Compiling entry function '([_A-Za-z0-9]+)'", line)
        if m:
            name = m.group(1)
            usage.setdefault(name, [0, 0, 0])
        m = re.search(r"Function properties for ([_A-Za-z0-9]+)", line)
        if m and m.group(1) != name:
            name = None
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            u = usage.setdefault(name, [0, 0, 0])
            u[1], u[2] = int(m.group(1)), max(int(m.group(2)), int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            usage.setdefault(name, [0, 0, 0])[0] = int(m.group(1))
# readable names: the functor a ParallelForKernel or LaneKernel runs, or the demangled kernel
names = subprocess.run(["c++filt"], input="\n".join(usage), capture_output=True, text=True).stdout.split("\n")
table = {}
for mangled, pretty in zip(usage, names):
    if "cub::" in pretty or "thrust::" in pretty or "condsim" not in pretty:
        continue
    pretty = pretty.replace("(anonymous namespace)::", "")
    m = re.search(r"(?:ParallelForKernel|LaneKernel)<(?:condsim::)?([A-Za-z0-9_:]+)", pretty)
    # other kernels: the name with its template arguments, without condsim:: and spaces
    key = m.group(1) if m else re.sub(r"^void ", "", re.sub(r"\(.*", "", pretty)).replace("condsim::", "").replace(" ", "")
    old = table.get(key, [0, 0, 0])
    table[key] = [max(a, b) for a, b in zip(old, usage[mangled])]
if update:
    with open(budget_path, "w") as f:
        f.write("# kernel registers stack_bytes spill_bytes (scripts/ptxas-budget.sh --update; sm_90)\n")
        for k in sorted(table):
            f.write(f"{k} {table[k][0]} {table[k][1]} {table[k][2]}\n")
    print(f"wrote {budget_path}: {len(table)} kernels")
    sys.exit(0)
budget = {}
for line in open(budget_path):
    if line.strip() and not line.startswith("#"):
        k, r, s, p = line.split()
        budget[k] = [int(r), int(s), int(p)]
bad = 0
print(f"{'kernel':32} {'regs':>5} {'stack':>6} {'spill':>6}   budget")
for k in sorted(table):
    r, s, p = table[k]
    b = budget.get(k)
    over = b is None or r > b[0] or s > b[1] or p > b[2]
    bad += over
    print(f"{k:32} {r:5} {s:6} {p:6}   {b if b else 'none'}{'  OVER' if over else ''}")
print(f"ptxas budget: {len(table)} kernels, {bad} over budget")
sys.exit(1 if bad else 0)
PY
