"""ctest bench.scale: runs `condsim bench scale` on two tiny sizes of each scenario (1 warm-up +
1 measured step, CPU, 1 thread) and checks its outputs. No timing enters pass/fail.

usage: python3 bench_scale_check.py CONDSIM SOURCE_DIR WORKDIR   (exit 77: skipped)

References (exact, no tolerance):
- soft_mat DOFs: the box generator's node count 3 (nx + 1)(ny + 1)(nz + 1) (models/fem/tet_mesh.h,
  MakeBoxMesh) with the refinement of apps/bench_scale.cpp: per axis max(1, floor(c f^(1/3) + 0.5))
  of the scene file's cells c
- cable_batch DOFs: 6 per segment (docs/rod.md) times the scene's segments times N environments
- bytes per iteration: the traffic model S*9*blocks + I*blocks + I*(rows/3 + 1) + 6*S*rows
  (docs/performance.md, "Scaling"), relative tolerance 1e-9 (the CSV's 9 significant digits)
- every step iterates (iterations > 0), the DOFs grow with the size, the PNGs are PNG files
"""
import csv
import json
import math
import os
import shutil
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(condsim, out, args):
    if os.path.isdir(out):
        shutil.rmtree(out)
    cmd = [condsim, "bench", "scale", "--backends", "cpu", "--threads", "1", "--steps", "1", "--warmup", "1",
           "--out", out] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(" ".join(cmd))
    print(p.stdout)
    if p.returncode != 0:
        fail("exit %d" % p.returncode)
    for name in ["scale.csv", "scale.json", "time_vs_dof.png", "iterations_vs_dof.png", "roofline_vs_dof.png",
                 "thread_scaling.png"]:
        path = os.path.join(out, name)
        if not os.path.isfile(path):
            fail("missing " + path)
        if name.endswith(".png"):
            with open(path, "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail(path + " is not a PNG")
    with open(os.path.join(out, "scale.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(out, "scale.json")) as f:
        doc = json.load(f)
    return rows, doc


def check_common(rows, doc, sizes, expected_dofs):
    # one CSV row per measured step (1 step per size), the JSON the same rows and one median per size
    if len(rows) != len(sizes) or len(doc["rows"]) != len(sizes) or len(doc["sizes"]) != len(sizes):
        fail("expected %d rows, CSV %d, JSON rows %d, sizes %d" % (len(sizes), len(rows), len(doc["rows"]), len(doc["sizes"])))
    s, i = doc["build"]["scalar_bytes"], doc["build"]["index_bytes"]
    last = 0
    for row, jrow, summ, size, dofs in zip(rows, doc["rows"], doc["sizes"], sizes, expected_dofs):
        got = int(row["dofs"])
        print("size %g: dofs %d (expected %d), iterations %s" % (size, got, dofs, row["iterations"]))
        if got != dofs or jrow["dofs"] != dofs or summ["dofs"] != dofs:
            fail("size %g: %d DOFs (JSON %d, %d), expected %d" % (size, got, jrow["dofs"], summ["dofs"], dofs))
        if got <= last:
            fail("DOFs do not grow with the size")
        last = got
        if int(row["iterations"]) <= 0 or summ["iterations"] <= 0:
            fail("size %g: no iterations" % size)
        m_rows, blocks = int(row["matrix_rows"]), int(row["matrix_blocks"])
        if m_rows < dofs or blocks < m_rows // 3:
            fail("size %g: matrix %d rows, %d blocks for %d DOFs" % (size, m_rows, blocks, dofs))
        model = s * 9 * blocks + i * blocks + i * (m_rows / 3 + 1) + 6 * s * m_rows
        if abs(float(row["bytes_per_iteration"]) - model) > 1e-9 * model:
            fail("size %g: bytes per iteration %s, the model gives %.9g" % (size, row["bytes_per_iteration"], model))
    if not doc["backends"] or not doc["backends"][0]["copy_gbs"] > 0:
        fail("no copy bandwidth in scale.json")


def main():
    condsim, source, work = sys.argv[1:4]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("skipped: python3-matplotlib not installed")
        return 77

    # soft_mat: refined box mesh of the soft mat
    with open(os.path.join(source, "scenes", "soft_mat_folding.json")) as f:
        cells = json.load(f)["fem_bodies"][0]["mesh"]["cells"]
    sizes = [0.05, 0.2]
    expected = []
    for size in sizes:
        c = [max(1, math.floor(x * size ** (1.0 / 3.0) + 0.5)) for x in cells]
        expected.append(3 * (c[0] + 1) * (c[1] + 1) * (c[2] + 1))
    rows, doc = run(condsim, os.path.join(work, "soft_mat"),
                    ["--scenario", "soft_mat", "--sizes", ",".join(map(str, sizes)),
                     "--scene", os.path.join(source, "scenes", "soft_mat_folding.json")])
    check_common(rows, doc, sizes, expected)

    # cable_batch: N copies of the cable scene as environments
    with open(os.path.join(source, "scenes", "cable_winding.json")) as f:
        segments = sum(r["segments"] for r in json.load(f)["rods"])
    sizes = [1, 2]
    rows, doc = run(condsim, os.path.join(work, "cable_batch"),
                    ["--scenario", "cable_batch", "--sizes", "1,2",
                     "--scene", os.path.join(source, "scenes", "cable_winding.json")])
    check_common(rows, doc, sizes, [6 * segments * n for n in sizes])
    print("bench scale outputs checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
