"""Opens an XDMF file with ParaView's default reader for it and checks its counts.

usage: pvpython scripts/check-xmf.py FILE.xmf [timesteps=N] [points=P] [cells=C] [blocks=B] [reader=NAME]

points, cells and blocks are totals over the blocks of the (multiblock) dataset and must hold at
every time step. Prints what it read; exit 0 when everything matches, 1 on a mismatch, 2 when
the file cannot be opened."""
import sys

from paraview.simple import OpenDataFile

if len(sys.argv) < 2:
    sys.exit(__doc__)
path = sys.argv[1]
want = dict(arg.split("=", 1) for arg in sys.argv[2:])
try:
    reader = OpenDataFile(path)
except RuntimeError as error:
    print(error)
    reader = None
if reader is None:
    print(f"FAIL: cannot open {path}")
    sys.exit(2)
name = reader.GetXMLName()
times = reader.TimestepValues
times = [] if times is None else ([times] if isinstance(times, (int, float)) else list(times))
print(f"{path}: reader {name}, {len(times)} time steps")
bad = []
if "reader" in want and name != want["reader"]:
    bad.append(f"reader {name}, expected {want['reader']}")
if "timesteps" in want and len(times) != int(want["timesteps"]):
    bad.append(f"{len(times)} time steps, expected {want['timesteps']}")
for t in times or [None]:
    if t is None:
        reader.UpdatePipeline()
    else:
        reader.UpdatePipeline(t)
    info = reader.GetDataInformation()  # summed over the blocks
    got = {"points": info.GetNumberOfPoints(), "cells": info.GetNumberOfCells(), "blocks": info.GetNumberOfDataSets()}
    print(f"  t = {t}: " + ", ".join(f"{k} {v}" for k, v in got.items()))
    bad += [f"t = {t}: {k} {got[k]}, expected {want[k]}" for k in got if k in want and got[k] != int(want[k])]
for line in bad:
    print("FAIL:", line)
sys.exit(1 if bad else 0)
