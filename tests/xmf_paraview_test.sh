#!/bin/sh
# usage: xmf_paraview_test.sh CONDSIM SOURCE_DIR WORKDIR: runs scenes with rigid bodies, FEM bodies,
# a cable and XML-special names, then opens each output.xmf with ParaView's default reader
# (pvpython scripts/check-xmf.py) and checks its time steps, points and cells against the HDF5
# file itself (read with h5py). Exit 77 (skipped) without pvpython (Debian: python3-paraview) or
# h5py, or without HDF5.
condsim=$1; src=$2; work=$3
py=/usr/bin/python3
[ -x "$py" ] || py=python3
command -v pvpython >/dev/null || { echo "skipped: pvpython not installed (apt-get install python3-paraview)"; exit 77; }
"$py" -c "import h5py" 2>/dev/null || { echo "skipped: python3-h5py not installed"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
status=0
for scene in "$src/scenes/box_sliding.json" "$src/scenes/soft_ball_gripping.json" "$src/scenes/cable_winding.json" \
             "$src/tests/data/odd_names.json"; do
  out="$work/$(basename "$scene" .json)"
  "$condsim" run "$scene" --backend cpu --threads 1 --quiet --duration 0.1 --out "$out" || { status=1; continue; }
  [ -f "$out/output.h5" ] || { echo "skipped: condsim built without HDF5"; exit 77; }
  # the reference: frames, points and cells (a tetrahedron each; one cell per cable, per rigid body)
  expected=$("$py" - "$out/output.h5" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
bodies = list(f["bodies"].values())
points = sum(g["x"].shape[1] for g in bodies)
cells = sum(g["tets"].shape[0] if "tets" in g else 1 for g in bodies)
print(f"timesteps={f['time'].shape[0]} points={points} cells={cells} blocks={len(bodies)}")
PY
)
  echo "$(basename "$scene"): expected $expected"
  pvpython "$src/scripts/check-xmf.py" "$out/output.xmf" $expected reader=Xdmf3ReaderS || status=1
done
exit $status
