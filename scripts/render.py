#!/usr/bin/env python3
"""Render a condsim run's output (DIR/output.h5, docs/scene-format.md "Output") to PNG snapshots.

usage: render.py OUTPUT.h5 [--out DIR] [--frames N] [--gif] [--elev DEG] [--azim DEG]

Draws every body of each chosen frame in 3-D (FEM bodies: their boundary faces, cables: the
polyline of their segment centres, rigid bodies: their shape, centre of mass and its path), the static shapes
(capsules, spheres, boxes) and the frame's contact points, with equal axis scales over the run. Writes DIR/frame_NNNN.png (default DIR: the
output file's directory) and, with --gif, DIR/animation.gif of all frames (Pillow, which
matplotlib depends on). Needs Debian's python3-h5py and python3-matplotlib.
"""
import argparse
import os
import sys

try:
    import h5py
    import numpy as np
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit("render.py: %s (install python3-h5py and python3-matplotlib)" % e)


def boundary_faces(tets):
    """Triangles that belong to exactly one tetrahedron (the surface), as index triples."""
    count = {}
    for t in tets:
        for f in ((t[0], t[1], t[2]), (t[0], t[1], t[3]), (t[0], t[2], t[3]), (t[1], t[2], t[3])):
            key = tuple(sorted(f))
            count[key] = count.get(key, 0) + 1
    return np.array([f for f, c in count.items() if c == 1], dtype=np.int64)


def load(path):
    f = h5py.File(path, "r")
    bodies = []
    for name, g in f["bodies"].items():
        kind = g.attrs["kind"]
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        body = {"name": name, "kind": kind, "x": g["x"][()]}
        if kind == "fem":
            body["faces"] = boundary_faces(g["tets"][()])
        if kind == "rigid" and "shape" in g and "q" in g:
            body["shape"] = (int(g["shape"][0]), g["size"][()])
            body["q"] = g["q"][()]
        bodies.append(body)
    statics = []
    if "static" in f:
        g = f["static"]
        for k in range(len(g["type"])):
            statics.append((int(g["type"][k]), g["center"][k], g["quaternion"][k], g["size"][k]))
    contacts = None
    if "position" in f["contacts"]:
        contacts = (f["contacts/offset"][()], f["contacts/position"][()])
    return f, f["time"][()], bodies, contacts, statics


def rotation(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def draw_static(ax, shape, lim):
    """Capsules as cylinders, spheres as spheres, boxes as wireframes; planes are the axes' floor."""
    kind, c, q, size = shape
    r = rotation(q)
    if kind == 3 or kind == 1:
        u = np.linspace(0, 2 * np.pi, 24)
        if kind == 3:
            h = np.linspace(-size[1], size[1], 2)
            uu, hh = np.meshgrid(u, h)
            local = np.stack([size[0] * np.cos(uu), size[0] * np.sin(uu), hh], axis=-1)
        else:
            v = np.linspace(0, np.pi, 12)
            uu, vv = np.meshgrid(u, v)
            local = size[0] * np.stack([np.cos(uu) * np.sin(vv), np.sin(uu) * np.sin(vv), np.cos(vv)], axis=-1)
        p = local @ r.T + c
        # clip to the drawing box
        p = np.clip(p, lim[0], lim[1])
        ax.plot_surface(p[..., 0], p[..., 1], p[..., 2], color="#999999", alpha=0.5, linewidth=0)
    elif kind == 2:
        for a in range(3):
            for s1 in (-1, 1):
                for s2 in (-1, 1):
                    e = np.zeros((2, 3))
                    e[:, a] = [-size[a], size[a]]
                    e[:, (a + 1) % 3] = s1 * size[(a + 1) % 3]
                    e[:, (a + 2) % 3] = s2 * size[(a + 2) % 3]
                    p = e @ r.T + c
                    ax.plot(p[:, 0], p[:, 1], p[:, 2], color="#777777", linewidth=0.8)


def main():
    ap = argparse.ArgumentParser(description="render a condsim output.h5 to PNG snapshots")
    ap.add_argument("output")
    ap.add_argument("--out", default=None, help="directory for the images (default: beside the file)")
    ap.add_argument("--frames", type=int, default=4, help="number of snapshots, evenly spaced (default 4)")
    ap.add_argument("--gif", action="store_true", help="also write animation.gif of every frame")
    ap.add_argument("--elev", type=float, default=25)
    ap.add_argument("--azim", type=float, default=-60)
    a = ap.parse_args()
    if not os.path.exists(a.output):
        sys.exit("render.py: %s: no such file" % a.output)
    f, time, bodies, contacts, statics = load(a.output)
    if len(time) == 0:
        sys.exit("render.py: %s: no frames" % a.output)
    out = a.out or os.path.dirname(os.path.abspath(a.output))
    os.makedirs(out, exist_ok=True)
    # equal scales over the whole run
    pts = np.concatenate([b["x"].reshape(-1, 3) for b in bodies]) if bodies else np.zeros((1, 3))
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre, half = (lo + hi) / 2, max((hi - lo).max() / 2, 1e-3) * 1.1

    def draw(k):
        fig = plt.figure(figsize=(6, 6), dpi=100)
        ax = fig.add_subplot(projection="3d")
        for shape in statics:
            draw_static(ax, shape, (centre - half, centre + half))
        for b in bodies:
            x = b["x"][k]
            if b["kind"] == "fem":
                tri = x[b["faces"]]
                ax.add_collection3d(Poly3DCollection(tri, facecolor="#6fa8dc", edgecolor="#2f4f6f", linewidths=0.2, alpha=0.9))
            elif b["kind"] == "rod":
                ax.plot(x[:, 0], x[:, 1], x[:, 2], color="#e69138", linewidth=2)
            else:
                # its shape (boxes, spheres, capsules) at the frame's pose, the centre of mass and its path so far
                if "shape" in b and b["shape"][0] in (1, 2, 3):
                    draw_static(ax, (b["shape"][0], x[0], b["q"][k][0], b["shape"][1]), (centre - half, centre + half))
                path = b["x"][: k + 1, 0, :]
                ax.plot(path[:, 0], path[:, 1], path[:, 2], color="#444444", linewidth=1)
                ax.scatter(x[:, 0], x[:, 1], x[:, 2], color="#444444", s=30)
        if contacts is not None:
            offset, pos = contacts
            c = pos[offset[k]:offset[k + 1]]
            if len(c):
                ax.scatter(c[:, 0], c[:, 1], c[:, 2], color="#cc0000", s=4)
        for i, set_lim in enumerate((ax.set_xlim, ax.set_ylim, ax.set_zlim)):
            set_lim(centre[i] - half, centre[i] + half)
        ax.set_box_aspect((1, 1, 1))
        ax.view_init(elev=a.elev, azim=a.azim)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.set_zlabel("z [m]")
        ax.set_title("%s  t = %.2f s" % (f.attrs["scene"].decode() if isinstance(f.attrs["scene"], bytes) else f.attrs["scene"], time[k]))
        return fig

    n = len(time)
    chosen = sorted(set(int(round(i * (n - 1) / max(a.frames - 1, 1))) for i in range(max(a.frames, 1))))
    for k in chosen:
        fig = draw(k)
        path = os.path.join(out, "frame_%04d.png" % k)
        fig.savefig(path)
        plt.close(fig)
        print(path)
    if a.gif:
        from PIL import Image
        images = []
        for k in range(n):
            fig = draw(k)
            fig.canvas.draw()
            images.append(Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba()).convert("P"))
            plt.close(fig)
        path = os.path.join(out, "animation.gif")
        images[0].save(path, save_all=True, append_images=images[1:], duration=max(int(1000 * (time[-1] - time[0]) / max(n - 1, 1)), 20), loop=0)
        print(path)


if __name__ == "__main__":
    main()
