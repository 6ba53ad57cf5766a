#!/usr/bin/env bash
# Checks of GPU semantics on the CPU (no GPU needed; .ci/run calls it): every shipped scene, run
# for a short time with each launch's items in reversed and in shuffled order
# (CONDSIM_CPU_ORDER), gives output.h5 datasets bit for bit equal to the run in order, and the
# same holds with every launch forked on 2 threads (CONDSIM_CPU_GRAIN=1). A GPU runs a launch's
# items in no particular order and concurrently; a difference here is a dependence between
# items that the CUDA backend would turn into wrong or irreproducible results. Also the soft mat
# with the sparse coarse solve of the body modes. Then the same for batched worlds (condsim
# batch, three environments per World).
# Usage: scripts/gpu-semantics.sh [CONDSIM] [--duration S]   (defaults: build/condsim, 0.1 s)
set -euo pipefail
cd "$(dirname "$0")/.."
condsim=build/condsim
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then condsim=$1; shift; fi
duration=0.1
if [ "${1:-}" = "--duration" ]; then duration=$2; shift 2; fi
out=${OUT:-$(mktemp -d)}
python=${PYTHON:-/usr/bin/python3}
status=0
# the shipped scenes, and the soft mat with the body modes' sparse coarse solve (every body's
# coarse matrix factorized on the host, truncated modes; docs/solver.md "Sparse coarse solve")
mkdir -p "$out"
sparse_scene="$out/soft_mat_sparse_coarse.json"
"$python" - "$sparse_scene" <<'PY'
import json, sys
scene = json.load(open("scenes/soft_mat_folding.json"))
scene["name"] = "soft_mat_sparse_coarse"
scene["solver"].update({"truncated_modes": True, "body_mode_dense_patches": 0})
json.dump(scene, open(sys.argv[1], "w"), indent=1)
PY
for mode in "CONDSIM_CPU_ORDER=reverse" "CONDSIM_CPU_ORDER=shuffle" "CONDSIM_CPU_GRAIN=1"; do
  echo "== $mode"
  OMP_NUM_THREADS=2 OUT="$out/${mode#*=}" REUSE_OLD=0 NEW_ENV="$mode" \
    bash scripts/compare-scenes.sh "$condsim" "$condsim" --duration "$duration" scenes/*.json "$sparse_scene" || status=1
done
# batched worlds: three environments of a scene per World (condsim batch --envs 3), each mode's
# episode files bit for bit equal to the run in order
for scene in scenes/soft_ball_gripping.json scenes/cable_winding.json; do
  name=$(basename "$scene" .json)
  steps=$("$python" -c "import json; print(max(1, round($duration / json.load(open('$scene'))['world']['dt'])))")
  OMP_NUM_THREADS=2 "$condsim" batch "$scene" --envs 3 --episodes 3 --steps "$steps" --backend cpu --quiet \
    --out "$out/batch/$name/order" >/dev/null || { echo "$name: the batch in order failed"; status=1; continue; }
  for mode in "CONDSIM_CPU_ORDER=reverse" "CONDSIM_CPU_ORDER=shuffle" "CONDSIM_CPU_GRAIN=1"; do
    dir="$out/batch/$name/${mode#*=}"
    env OMP_NUM_THREADS=2 "$mode" "$condsim" batch "$scene" --envs 3 --episodes 3 --steps "$steps" --backend cpu --quiet \
      --out "$dir" >/dev/null || { echo "$name ($mode): the batch failed"; status=1; continue; }
    for e in 000000 000001 000002; do
      "$python" tests/batch_check.py same "$out/batch/$name/order/episodes/episode_$e.h5" "$dir/episodes/episode_$e.h5" >/dev/null \
        || { echo "$name ($mode): episode $e differs"; status=1; }
    done
  done
  echo "$name: 3 episodes in one batched world, identical under reversed, shuffled and forked launches"
done
[ $status -eq 0 ] && echo "gpu semantics: every scene identical under reversed, shuffled and forked launches"
exit $status
