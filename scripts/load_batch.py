#!/usr/bin/python3
"""Loads the episodes of a `condsim batch` folder into numpy arrays (docs/batch.md).

usage: load_batch.py DIR [--summary] [--episode I]

  --summary     one line per episode (index, seed, status, steps, failure) and a total line
  --episode I   loads episode I and prints its arrays' shapes

As a module:
  list_episodes(DIR)       -> [{"index", "seed", "status", "failure", "steps_done", "file"}, ...]
  load_episode(DIR, I)     -> {"index", "seed", "status", "failure", "randomization": {pointer: value},
                               "time": [F], "bodies": {name: {"kind", "x": [F, n, 3], "v", "q"?,
                                                       "contact_force": [F, 3], "contact_torque": [F, 3]}},
                               "drives": {kind: {name: {"position": [F, 3], "quaternion": [F, 4], "width": [F]}}},
                               "contacts": [per frame {"position", "normal", "impulse": [c, 3],
                                            "bodies": [c, 2]}],
                               "stats": {name: [steps] or [steps, 3], "bodies": {name: {...}}}}
Frame k's contacts are rows offset[k] .. offset[k + 1] of /contacts/* (offset[0] = 0: none before
the first frame). Needs h5py and numpy (Debian: python3-h5py).
"""
import argparse
import json
import os
import sys

import h5py
import numpy as np


def _manifest(folder):
    path = os.path.join(folder, "manifest.h5")
    if not os.path.exists(path):
        sys.exit(f"{path}: no manifest (run condsim batch, or condsim batch merge for shards)")
    return h5py.File(path, "r")


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def list_episodes(folder):
    """The manifest's table, one dict per episode."""
    with _manifest(folder) as m:
        rows = zip(m["episode"][()], m["seed"][()], m["status"][()], m["failure"][()], m["steps_done"][()], m["file"][()])
        return [{"index": int(i), "seed": int(s), "status": _text(st), "failure": _text(fl), "steps_done": int(d), "file": _text(f)}
                for i, s, st, fl, d, f in rows]


def _read_group(group):
    out = {}
    for name, obj in group.items():
        out[name] = obj[()] if isinstance(obj, h5py.Dataset) else _read_group(obj)
    return out


def load_episode(folder, index):
    """Episode `index`: its attributes, per-frame states, contacts split by frame, per-step stats."""
    with _manifest(folder) as m:
        name = f"{int(index):06d}"
        if name not in m["episodes"]:
            sys.exit(f"{folder}/manifest.h5: no file for episode {index}")
        f = m["episodes"][name]  # the external link: the episode file's root
        ep = {"index": int(index), "status": _text(f.attrs.get("status", b"")), "failure": _text(f.attrs.get("failure", b"")),
              "seed": int(f.attrs["seed"]) if "seed" in f.attrs else None,
              "randomization": json.loads(_text(f.attrs["randomization"])) if "randomization" in f.attrs else {},
              "time": f["time"][()], "bodies": {}, "stats": _read_group(f["stats"])}
        for body, g in f["bodies"].items():
            ep["bodies"][body] = {"kind": _text(g.attrs["kind"]),
                                  **{k: g[k][()] for k in ("x", "v", "q", "contact_force", "contact_torque") if k in g}}
        ep["drives"] = _read_group(f["drives"]) if "drives" in f else {}
        c = f["contacts"]
        offset = c["offset"][()]
        data = {k: c[k][()] for k in ("position", "normal", "impulse", "bodies")}
        ep["contacts"] = [{k: v[offset[i]:offset[i + 1]] for k, v in data.items()} for i in range(len(offset) - 1)]
        return ep


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folder")
    p.add_argument("--summary", action="store_true")
    p.add_argument("--episode", type=int)
    a = p.parse_args()
    episodes = list_episodes(a.folder)
    if a.summary or a.episode is None:
        for e in episodes:
            print(f"{e['index']:6d}  seed {e['seed']:16d}  {e['status']:8s}  {e['steps_done']:7d} steps  {e['failure']}")
        counts = {s: sum(e["status"] == s for e in episodes) for s in ("complete", "failed")}
        print(f"{len(episodes)} episodes: {counts['complete']} complete, {counts['failed']} failed")
    if a.episode is not None:
        ep = load_episode(a.folder, a.episode)
        print(f"episode {ep['index']} seed {ep['seed']} {ep['status']} {ep['randomization']}")
        print(f"  time {ep['time'].shape}, contacts per frame {[len(c['bodies']) for c in ep['contacts']]}")
        for name, b in ep["bodies"].items():
            print(f"  {name} ({b['kind']}): " + ", ".join(f"{k} {v.shape}" for k, v in b.items() if k != "kind"))
        for kind, group in ep["drives"].items():
            for name, d in group.items():
                print(f"  drive {kind}/{name}: " + ", ".join(f"{k} {v.shape}" for k, v in d.items()))
        print("  stats: " + ", ".join(f"{k} {v.shape}" for k, v in ep["stats"].items() if isinstance(v, np.ndarray)))


if __name__ == "__main__":
    main()
