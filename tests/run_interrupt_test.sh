#!/bin/sh
# usage: run_interrupt_test.sh CONDSIM SCENE WORKDIR SIGNAL EXIT: starts a long run of SCENE, sends
# SIGNAL (INT or TERM) 2 s after its output file appeared (the setup's time varies with the load
# and CONDSIM_CPU_GUARD) and checks the contract of docs/scene-format.md ("Run status"):
# exit EXIT (128 + signal), output.h5 closed with status "interrupted" and at least 2 frames (the
# frames so far, the last one after the first step), summary.json with the same status, no .part
# left. Exit 77 (skipped) without Debian's python3-h5py or without HDF5.
condsim=$1; scene=$2; work=$3; sig=$4; expected=$5
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" -c "import h5py" 2>/dev/null || { echo "skipped: python3-h5py not installed"; exit 77; }
"$condsim" info | grep -q "HDF5 *found" || { echo "skipped: condsim built without HDF5"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
"$condsim" run "$scene" --backend cpu --threads 1 --quiet --duration 100000 --out "$work" &
pid=$!
# the first frame is written before the first step; wait for it (60 s at most), then 2 s of steps
i=0
while [ $i -lt 600 ] && ! ls "$work"/*.part > /dev/null 2>&1 && kill -0 $pid 2> /dev/null; do
  sleep 0.1
  i=$((i + 1))
done
sleep 2
kill -s "$sig" $pid
wait $pid
rc=$?
echo "exit $rc"
[ "$rc" -eq "$expected" ] || { echo "FAIL: expected exit $expected"; exit 1; }
[ -f "$work/summary.json" ] || { echo "FAIL: no summary.json"; exit 1; }
if ls "$work"/*.part >/dev/null 2>&1; then echo "FAIL: a .part file is left"; exit 1; fi
[ -f "$work/output.h5" ] || { echo "skipped: condsim built without HDF5"; exit 77; }
"$py" - "$work" <<'PY'
import json, sys, h5py
work = sys.argv[1]
f = h5py.File(work + "/output.h5", "r")
status = f.attrs["status"].decode()
frames = f["time"].shape[0]
steps = f["stats/iterations"].shape[0]
summary = json.load(open(work + "/summary.json"))
print(f"status {status}, frames {frames}, steps {steps}, summary {summary['status']} after {summary['steps']} steps")
ok = status == "interrupted" and summary["status"] == "interrupted" and frames >= 2 and steps == summary["steps"] > 0
# every body dataset has one entry per frame
ok = ok and all(g["x"].shape[0] == frames for g in f["bodies"].values())
sys.exit(0 if ok else 1)
PY
