#!/usr/bin/python3
"""Checks for tests/batch_cli_test.sh (condsim batch, docs/batch.md).

  batch_check.py same A.h5 B.h5      every dataset of A and B has the same shape, dtype and bytes
                                     (bitwise), the same groups, equal attributes on every object,
                                     and equal root attributes except those that name the run
                                     (episode, steps, failure text)
  batch_check.py seeds DIR           prints "index seed status steps_done" per manifest row
  batch_check.py tables A.h5 B.h5    two manifests list the same episodes (index, seed, status,
                                     failure, steps_done, file) and their links open the same data
"""
import sys

import h5py
import numpy as np

# root attributes a batch episode has and `condsim run --seed` has not, or words differently
IGNORED = {"episode", "steps", "failure"}


# objects only a batch episode has (RecordEpisode::extras; checked by tests/output_test.cpp)
def extra(name):
    return name == "drives" or name.startswith("drives/") or name.endswith(("/contact_force", "/contact_torque"))


def walk(f):
    out = {}
    f.visititems(lambda name, obj: out.__setitem__(name, obj))
    return out


def same(a_path, b_path):
    a, b = h5py.File(a_path, "r"), h5py.File(b_path, "r")
    ok = True
    ia, ib = walk(a), walk(b)
    ia = {k: v for k, v in ia.items() if not (extra(k) and k not in ib)}
    ib = {k: v for k, v in ib.items() if not (extra(k) and k not in ia)}
    if sorted(ia) != sorted(ib):
        print(f"different objects: only in A {sorted(set(ia) - set(ib))}, only in B {sorted(set(ib) - set(ia))}")
        ok = False
    n = 0
    for name in sorted(set(ia) & set(ib)):
        x, y = ia[name], ib[name]
        if sorted(x.attrs) != sorted(y.attrs) or any(np.asarray(x.attrs[k]).tobytes() != np.asarray(y.attrs[k]).tobytes() for k in x.attrs):
            print(f"{name}: attributes differ")
            ok = False
        if isinstance(x, h5py.Dataset):
            n += 1
            u, v = x[()], y[()]
            if x.dtype != y.dtype or x.shape != y.shape or np.asarray(u).tobytes() != np.asarray(v).tobytes():
                print(f"{name}: differs (shapes {x.shape} / {y.shape})")
                ok = False
    for key in sorted((set(a.attrs) | set(b.attrs)) - IGNORED):
        va, vb = a.attrs.get(key), b.attrs.get(key)
        if va is None or vb is None or np.asarray(va).tobytes() != np.asarray(vb).tobytes():
            print(f"attribute {key}: {va!r} / {vb!r}")
            ok = False
    print(f"{a_path} vs {b_path}: {n} datasets, {'identical' if ok else 'DIFFERENT'}")
    return ok


def seeds(manifest):
    m = h5py.File(manifest, "r")
    for i, s, st, d in zip(m["episode"][()], m["seed"][()], m["status"][()], m["steps_done"][()]):
        print(int(i), int(s), st.decode(), int(d))
    return True


def tables(a_path, b_path):
    a, b = h5py.File(a_path, "r"), h5py.File(b_path, "r")
    ok = True
    for key in ("episode", "seed", "status", "failure", "steps_done", "file"):
        if a[key][()].tolist() != b[key][()].tolist():
            print(f"manifest column {key}: {a[key][()].tolist()} / {b[key][()].tolist()}")
            ok = False
    for key in ("scene_hash", "batch_seed", "steps", "episodes"):
        if a.attrs[key] != b.attrs[key]:
            print(f"manifest attribute {key}: {a.attrs[key]!r} / {b.attrs[key]!r}")
            ok = False
    # the external links resolve (relative to the manifest's folder) to the same data
    for name in a["episodes"]:
        ta, tb = a["episodes"][name]["stats/iterations"][()], b["episodes"][name]["stats/iterations"][()]
        if ta.tobytes() != tb.tobytes():
            print(f"/episodes/{name}: linked data differs")
            ok = False
    print(f"{a_path} vs {b_path}: {len(a['episode'])} episodes, {'identical' if ok else 'DIFFERENT'}")
    return ok


if __name__ == "__main__":
    cmd = sys.argv[1]
    result = {"same": lambda: same(sys.argv[2], sys.argv[3]), "seeds": lambda: seeds(sys.argv[2]),
              "tables": lambda: tables(sys.argv[2], sys.argv[3])}[cmd]()
    sys.exit(0 if result else 1)
