#!/bin/sh
# usage: render_test.sh CONDSIM SCENE WORKDIR: runs the scene with output, renders it with
# scripts/render.py (Debian's python3 with python3-h5py and python3-matplotlib) and checks that
# the snapshots are PNG files; exit 77 (skipped) when those modules are missing
condsim=$1; scene=$2; work=$3
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" -c "import h5py, matplotlib" 2>/dev/null || { echo "skipped: python3-h5py / python3-matplotlib not installed"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
"$condsim" run "$scene" --backend cpu --quiet --out "$work" || exit 1
[ -f "$work/output.h5" ] || { echo "skipped: condsim built without HDF5"; exit 77; }
"$py" "$(dirname "$0")/../scripts/render.py" "$work/output.h5" --out "$work/img" --frames 3 --gif || exit 1
n=0
for f in "$work"/img/frame_*.png; do
  head -c 8 "$f" | od -An -c | grep -q "P   N   G" || { echo "FAIL: $f is not a PNG"; exit 1; }
  n=$((n + 1))
done
[ "$n" -eq 3 ] || { echo "FAIL: expected 3 snapshots, got $n"; exit 1; }
head -c 6 "$work/img/animation.gif" | grep -q GIF8 || { echo "FAIL: no animation.gif"; exit 1; }
echo "rendered $n snapshots and a GIF"
