#!/usr/bin/python3
"""Plots of `condsim bench scale` (docs/performance.md, "Scaling").

usage: /usr/bin/python3 scripts/plot_scale.py DIR [MORE_DIR ...]

Reads DIR/scale.json (its per-size medians, "sizes"; those of MORE_DIR/scale.json added, e.g.
the largest sizes run on their own) and writes into DIR:
  time_vs_dof.png        median wall time per step vs DOFs, log-log, one series per backend
                         and thread count, with the exponent p of a least-squares fit
                         log t = p log n + c; dotted: the process's CPU time per step
                         (Debian's python3-matplotlib)
  iterations_vs_dof.png  median COND iterations per step vs DOFs
  roofline_vs_dof.png    median fraction of the measured copy bandwidth one iteration reaches
                         under the traffic model (bytes = A once + k vector passes)
  thread_scaling.png     speed-up t(1 thread) / t(T threads) of a step vs T, one line per size
and prints the fitted exponents (also written to DIR/fits.json).
"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series_key(row):
    return "cuda" if row["backend"] == "cuda" else "cpu, %d thread%s" % (row["threads"], "" if row["threads"] == 1 else "s")


def fit_exponent(xs, ys):
    """least squares of log y = p log x + c; (p, c), or None with fewer than 2 distinct x"""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len({p[0] for p in pts}) < 2:
        return None
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
    slope = sxy / sxx
    return slope, my - slope * mx


def finish(fig, ax, xlabel, ylabel, title, path, log_grid):
    """labels, grid and legend of one plot, written to path"""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8)
    if log_grid:
        ax.grid(True, which="both", alpha=0.3)
    else:
        ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    with open(os.path.join(out, "scale.json")) as f:
        doc = json.load(f)
    rows = list(doc["sizes"])
    for more in sys.argv[2:]:
        with open(os.path.join(more, "scale.json")) as f:
            rows += json.load(f)["sizes"]
    if not rows:
        print("plot_scale.py: no sizes in scale.json")
        return 1
    title = "condsim bench scale: %s (%s, commit %s)" % (doc["scenario"], doc["machine"]["cpu"], doc["commit"])
    series = {}
    for r in rows:
        series.setdefault(series_key(r), []).append(r)
    for s in series.values():
        s.sort(key=lambda r: r["dofs"])

    fits = {}
    # time per step vs DOFs with fitted exponents
    fig, ax = plt.subplots(figsize=(7, 5))
    for name, s in series.items():
        x = [r["dofs"] for r in s]
        y = [r["step_s"] for r in s]
        fit = fit_exponent(x, y)
        label = name
        if fit:
            fits[name] = {"step_exponent": fit[0]}
            label += " (t ~ n^%.2f)" % fit[0]
            xs = [min(x), max(x)]
            ax.plot(xs, [math.exp(fit[1]) * v ** fit[0] for v in xs], "--", lw=0.8, color="gray")
        line = ax.loglog(x, y, "o-", label=label)[0]
        # the process's CPU time per step (all threads): what a loaded machine does not stretch
        yc = [r.get("step_cpu_s", 0) for r in s]
        if all(v > 0 for v in yc):
            fc = fit_exponent(x, yc)
            if fc:
                fits[name]["step_cpu_exponent"] = fc[0]
            ax.loglog(x, yc, "s:", color=line.get_color(), ms=4,
                      label=name + " CPU time" + (" (n^%.2f)" % fc[0] if fc else ""))
        ys = [r["solve_s"] for r in s]
        fs = fit_exponent(x, ys)
        if fs:
            fits[name]["solve_exponent"] = fs[0]
    finish(fig, ax, "DOFs", "median time per step [s] (solid: wall, dotted: CPU)", title, os.path.join(out, "time_vs_dof.png"), True)

    # iterations vs DOFs
    fig, ax = plt.subplots(figsize=(7, 5))
    for name, s in series.items():
        x = [r["dofs"] for r in s]
        y = [max(r["iterations"], 1e-9) for r in s]
        fit = fit_exponent(x, y)
        if fit:
            fits[name]["iterations_exponent"] = fit[0]
        ax.loglog(x, y, "o-", label=name + (" (iters ~ n^%.2f)" % fit[0] if fit else ""))
    finish(fig, ax, "DOFs", "median COND iterations per step", title, os.path.join(out, "iterations_vs_dof.png"), True)

    # roofline fraction vs DOFs
    fig, ax = plt.subplots(figsize=(7, 5))
    for name, s in series.items():
        ax.semilogx([r["dofs"] for r in s], [r["roofline_fraction"] for r in s], "o-",
                    label="%s (copy %.1f GB/s)" % (name, s[0]["copy_gbs"]))
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_ylim(bottom=0)
    tm = doc["traffic_model"]
    finish(fig, ax, "DOFs", "iteration traffic / copy bandwidth",
           title + "\n" + tm["formula"] + ", k = %d" % tm["k_vector_passes"], os.path.join(out, "roofline_vs_dof.png"), True)

    # thread scaling: speed-up over one thread per size (cpu)
    fig, ax = plt.subplots(figsize=(7, 5))
    by_size = {}
    for r in rows:
        if r["backend"] == "cpu":
            by_size.setdefault(r["dofs"], {})[r["threads"]] = r["step_s"]
    tmax = 1
    for dofs in sorted(by_size):
        t = by_size[dofs]
        base = t.get(1)
        if not base:
            continue
        ts = sorted(t)
        tmax = max(tmax, ts[-1])
        ax.plot(ts, [base / t[k] for k in ts], "o-", label="%d DOFs" % dofs)
    ax.plot([1, tmax], [1, tmax], "--", color="gray", lw=0.8, label="ideal")
    ax.set_xticks(sorted({r["threads"] for r in rows if r["backend"] == "cpu"}))
    finish(fig, ax, "CPU threads", "speed-up of a step over 1 thread", title, os.path.join(out, "thread_scaling.png"), False)

    with open(os.path.join(out, "fits.json"), "w") as f:
        json.dump(fits, f, indent=2)
    for name, fit in fits.items():
        print("fit %s: %s" % (name, ", ".join("%s %.3f" % kv for kv in fit.items())))
    print("wrote %s/{time_vs_dof,iterations_vs_dof,roofline_vs_dof,thread_scaling}.png" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
