#!/bin/sh
# usage: batch_cli_test.sh CONDSIM SOURCE_DIR WORKDIR CASE [ENVS [GROUP]]: the contract of `condsim batch`
# (docs/batch.md). The reference of every case is bitwise equality (tests/batch_check.py: every
# dataset's bytes) with an independent computation of the same episode:
#   same      3 episodes of box_sliding (30 steps), ENVS at a time == `condsim run --seed <its seed>`
#   failure   tests/data/unstable_batch.json, 3 episodes: exit 3, episode 0 complete (20 steps),
#             1 failed at step 0, 2 failed at step 3 (manifest, summary with seed / step /
#             reason), and each == `condsim run --seed` (which stops at the same step)
#   kill9     kill -9 during episode 1 of 4, restart: the same files and manifest as a batch never
#             interrupted (and no .part file counted as done)
#   sigint    SIGINT during the batch: exit 130, no .part file left; restart: as uninterrupted
#   shards    --shard 0/2 and 1/2 into one folder, `batch merge`: the same episodes and manifest as
#             one process
#   badopts   --envs 0, --shard 2/2, --steps with --duration, --episode out of range, an unknown
#             scene: exit 1, a message naming the option (or file), nothing written; a folder of
#             another batch (other seed): exit 1 naming its file
#   loader    scripts/load_batch.py: --summary, and its arrays == the file's datasets
#   group     6 episodes of box_sliding with --group 4, 1, auto and (2 threads) 2 in parallel ==
#             the packed run (--envs 6 --group 6): every episode file and the manifest table
# GROUP (same, failure, kill9, shards): --group GROUP, the ENVS of a wave as Worlds of at most GROUP
# Exit 77 (skipped) without Debian's python3-h5py or without HDF5.
condsim=$1; src=$2; work=$3; case=$4; envs=${5:-1}
group=""
[ -n "$6" ] && group="--group $6"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" -c "import h5py, numpy" 2>/dev/null || { echo "skipped: python3-h5py not installed"; exit 77; }
"$condsim" info 2>/dev/null | grep -q "HDF5 *found" || { echo "skipped: condsim built without HDF5"; exit 77; }
check="$py $src/tests/batch_check.py"
box=$src/scenes/box_sliding.json
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# compares every episode of batch folder $1 with `condsim run --seed` ($2: scene, $3: extra options)
same_as_run() {
  $check seeds "$1/manifest.h5" > "$work/seeds.txt" || fail "cannot read $1/manifest.h5"
  while read -r i seed status done; do
    "$condsim" run "$2" --seed "$seed" $3 --backend cpu --threads 1 --quiet --out "$work/run_$i" > /dev/null 2>&1
    $check same "$1/episodes/$(printf 'episode_%06d.h5' "$i")" "$work/run_$i/output.h5" || fail "episode $i differs from run --seed $seed"
  done < "$work/seeds.txt"
}

# waits (at most 60 s) until file $1 exists
wait_for() {
  n=0
  while [ ! -f "$1" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
  [ -f "$1" ] || fail "$1 did not appear"
}

case $case in
same)
  "$condsim" batch "$box" --envs "$envs" $group --episodes 3 --steps 30 --backend cpu --threads 1 --quiet --out "$work/b" || fail "batch exit $?"
  same_as_run "$work/b" "$box" "--steps 30"
  ;;
failure)
  "$condsim" batch "$src/tests/data/unstable_batch.json" --envs "$envs" $group --episodes 3 --backend cpu --threads 1 --quiet --out "$work/b" > "$work/out.txt" 2> "$work/err.txt"
  rc=$?
  cat "$work/out.txt" "$work/err.txt"
  [ $rc -eq 3 ] || fail "expected exit 3, got $rc"
  # the failing environments left the batch inside the World (no re-run one at a time)
  grep -q "did not isolate" "$work/err.txt" && fail "the World did not isolate the failure"
  $check seeds "$work/b/manifest.h5" > "$work/seeds.txt"
  cat "$work/seeds.txt"
  awk '{print $1, $3, $4}' "$work/seeds.txt" | tr '\n' ';' | grep -qx "0 complete 20;1 failed 0;2 failed 3;" || fail "manifest statuses"
  "$py" - "$work/b" <<'PY' || fail "batch_summary.json"
import json, sys, h5py
s = json.load(open(sys.argv[1] + "/batch_summary.json"))
m = h5py.File(sys.argv[1] + "/manifest.h5", "r")
f = {e["episode"]: e for e in s["failed"]}
ok = s["complete"] == 1 and sorted(f) == [1, 2] and f[1]["step"] == 0 and f[2]["step"] == 3
ok = ok and all(f[i]["seed"] == int(m["seed"][i]) and "max_speed" in f[i]["failure"] and "max_speed" in m["failure"][i].decode() for i in (1, 2))
print(s["failed"])
sys.exit(0 if ok else 1)
PY
  grep -q "failed: episode 2 seed [0-9]* step 3: .*max_speed" "$work/out.txt" || fail "exit summary"
  same_as_run "$work/b" "$src/tests/data/unstable_batch.json" ""
  ;;
kill9|sigint)
  opts="--envs $envs $group --episodes 4 --steps 1500 --backend cpu --threads 1 --quiet"
  "$condsim" batch "$box" $opts --out "$work/ref" > /dev/null || fail "reference batch"
  "$condsim" batch "$box" $opts --out "$work/b" > "$work/first.txt" 2>&1 &
  pid=$!
  wait_for "$work/b/episodes/episode_000000.h5"
  sleep 0.05
  if [ "$case" = kill9 ]; then
    kill -9 $pid
    wait $pid
    # the running episode's .part stays (a restart must not count it as done)
    ls "$work/b/episodes"/*.part > /dev/null 2>&1 || echo "note: no .part file at the kill"
  else
    kill -INT $pid
    wait $pid
    rc=$?
    [ $rc -eq 130 ] || fail "expected exit 130 after SIGINT, got $rc"
    ls "$work/b/episodes"/*.part > /dev/null 2>&1 && fail "a .part file is left after SIGINT"
    grep -q "interrupted" "$work/b/batch_summary.json" || fail "summary status"
  fi
  ls "$work/b/episodes"
  "$condsim" batch "$box" $opts --out "$work/b" > "$work/second.txt" || fail "restart exit $?"
  cat "$work/second.txt"
  grep -q "[1-9][0-9]* skipped" "$work/second.txt" || fail "the restart skipped no episode"
  ls "$work/b/episodes"/*.part > /dev/null 2>&1 && fail "a .part file is left"
  for i in 0 1 2 3; do
    e=$(printf 'episode_%06d.h5' $i)
    $check same "$work/b/episodes/$e" "$work/ref/episodes/$e" || fail "episode $i differs from the uninterrupted batch"
  done
  $check tables "$work/b/manifest.h5" "$work/ref/manifest.h5" || fail "manifest"
  ;;
shards)
  opts="--envs $envs $group --episodes 5 --steps 30 --backend cpu --threads 1 --quiet"
  "$condsim" batch "$box" $opts --out "$work/ref" > /dev/null || fail "reference batch"
  "$condsim" batch "$box" $opts --shard 0/2 --out "$work/s" > /dev/null || fail "shard 0/2"
  "$condsim" batch merge "$work/s" 2> "$work/err.txt" && fail "merge with shard 1 missing succeeded"
  cat "$work/err.txt"
  grep -q "manifest.shard-1-of-2.h5 is missing" "$work/err.txt" || fail "merge message"
  "$condsim" batch "$box" $opts --shard 1/2 --out "$work/s" > /dev/null || fail "shard 1/2"
  "$condsim" batch merge "$work/s" || fail "merge"
  for i in 0 1 2 3 4; do
    e=$(printf 'episode_%06d.h5' $i)
    $check same "$work/s/episodes/$e" "$work/ref/episodes/$e" || fail "episode $i differs from one process"
  done
  $check tables "$work/s/manifest.h5" "$work/ref/manifest.h5" || fail "merged manifest"
  ;;
badopts)
  n=0
  for args in "--envs 0" "--group -1" "--shard 2/2" "--steps 3 --duration 1" "--episodes 2 --episode 2" "SCENE=$work/nothing.json"; do
    n=$((n + 1))
    scene=$box
    case $args in SCENE=*) scene=${args#SCENE=}; args="";; esac
    err=$("$condsim" batch "$scene" $args --out "$work/o$n" 2>&1 >/dev/null)
    rc=$?
    echo "batch $args: exit $rc: $err"
    [ $rc -ne 0 ] || fail "exit 0 for '$args'"
    case $args in
      --envs*) echo "$err" | grep -q "option --envs: '0' is not an integer in \[1," || fail "message";;
      --group*) echo "$err" | grep -q "option --group: '-1' is not an integer in \[0," || fail "message";;
      --shard*) echo "$err" | grep -q "option --shard: '2/2' is not k/K with 0 <= k < K" || fail "message";;
      --steps*) echo "$err" | grep -q "batch: give --steps or --duration, not both" || fail "message";;
      *--episode*) echo "$err" | grep -q "option --episode: '2' is not an integer in \[0, 1\]" || fail "message";;
      *) echo "$err" | grep -q "nothing.json" || fail "message";;
    esac
    [ -e "$work/o$n" ] && fail "'$args' wrote $work/o$n"
  done
  # a folder holding another batch's episodes (another seed): an error naming the file, not a skip
  "$condsim" batch "$box" --steps 2 --episodes 2 --quiet --out "$work/f" > /dev/null || fail "batch into $work/f"
  err=$("$condsim" batch "$box" --steps 2 --episodes 2 --seed 1 --quiet --out "$work/f" 2>&1 >/dev/null)
  rc=$?
  echo "another seed into the same folder: exit $rc: $err"
  [ $rc -eq 1 ] || fail "exit $rc for another batch's folder"
  echo "$err" | grep -q "episode_000000.h5: written by another batch" || fail "message"
  ;;
loader)
  "$condsim" batch "$box" --envs "$envs" --episodes 3 --steps 30 --backend cpu --threads 1 --quiet --out "$work/b" || fail "batch"
  "$py" "$src/scripts/load_batch.py" "$work/b" --summary > "$work/summary.txt" || fail "load_batch.py --summary"
  cat "$work/summary.txt"
  grep -q "3 episodes: 3 complete, 0 failed" "$work/summary.txt" || fail "summary line"
  "$py" - "$src/scripts" "$work/b" <<'PY' || fail "loaded arrays"
import sys, h5py, numpy as np
sys.path.insert(0, sys.argv[1])
import load_batch
eps = load_batch.list_episodes(sys.argv[2])
ep = load_batch.load_episode(sys.argv[2], 1)
f = h5py.File(sys.argv[2] + "/episodes/episode_000001.h5", "r")
ok = [e["index"] for e in eps] == [0, 1, 2] and ep["seed"] == int(f.attrs["seed"])
ok = ok and np.array_equal(ep["bodies"]["box"]["x"], f["bodies/box/x"][()]) and np.array_equal(ep["time"], f["time"][()])
off = f["contacts/offset"][()]
# per frame k the contacts rows offset[k] .. offset[k+1] (docs/scene-format.md)
ok = ok and len(ep["contacts"]) == len(off) - 1 and all(
    np.array_equal(c["impulse"], f["contacts/impulse"][off[k]:off[k + 1]]) for k, c in enumerate(ep["contacts"]))
ok = ok and np.array_equal(ep["stats"]["iterations"], f["stats/iterations"][()])
print("frames", len(ep["time"]), "contacts per frame", [len(c["bodies"]) for c in ep["contacts"]][:5], "ok" if ok else "DIFFERENT")
sys.exit(0 if ok else 1)
PY
  ;;
group)
  # the reference: the packed run, one World of the 6 environments
  opts="--envs 6 --episodes 6 --steps 30 --backend cpu --quiet"
  "$condsim" batch "$box" $opts --threads 1 --group 6 --out "$work/ref" > /dev/null || fail "packed batch"
  for g in "4 1" "1 1" "0 1" "2 2"; do
    set -- $g
    "$condsim" batch "$box" $opts --group "$1" --threads "$2" --out "$work/g$1" > /dev/null || fail "batch --group $1 exit $?"
    for i in 0 1 2 3 4 5; do
      e=$(printf 'episode_%06d.h5' $i)
      $check same "$work/g$1/episodes/$e" "$work/ref/episodes/$e" || fail "episode $i with --group $1 --threads $2 differs from the packed run"
    done
    $check tables "$work/g$1/manifest.h5" "$work/ref/manifest.h5" || fail "manifest with --group $1"
  done
  ;;
*) fail "unknown case $case" ;;
esac
echo "ok"
