"""compare_plots.py: the PNG plots of one bench/compare run (matplotlib, Agg backend).

`write_plots(directory, results)` draws, per library, the CDF of the uncontended cycle latency (1
and 32 threads, log x) and the CDF of the contended hand-off latency (log x), from the samples in
the results (`samples_us`, `handoff_samples_us`), and returns [(title, path)] of the files written.
"""
import os

import compare_rlock

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def _label(r):
    return "rlock (%s)" % compare_rlock.variant(r) if r.get("library") == "rlock" else r["label"]


def _cdf(ax, samples, label):
    xs = sorted(s for s in samples if s > 0)
    if not xs:
        return
    n = len(xs)
    ax.plot(xs, [(i + 1) / n for i in range(n)], label=label,
            linewidth=2.2 if label.startswith("rlock") else 1.2)


def _style(ax, title, xlabel):
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction ≤ x")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(directory, results):
    os.makedirs(directory, exist_ok=True)
    written = []
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for ax, threads in zip(axes, (1, 32)):
        for r in results["uncontended"]:
            if r["threads"] == threads:
                _cdf(ax, r.get("samples_us", []), _label(r))
        _style(ax, "Uncontended lock+unlock cycle, %d thread%s" % (
            threads, "s" if threads > 1 else ""), "cycle latency µs")
    path = os.path.join(directory, "uncontended_latency_cdf.png")
    _save(fig, path)
    written.append(("Uncontended cycle latency CDF", path))

    fig, ax = plt.subplots(figsize=(9, 5.5))
    for r in results["contended"]:
        _cdf(ax, r.get("handoff_samples_us", []), _label(r))
    path = os.path.join(directory, "handoff_latency_cdf.png")
    _style(ax, "Contended hand-off latency (release to next acquire), 8 processes, 1 ms hold",
           "hand-off latency µs")
    _save(fig, path)
    written.append(("Hand-off latency CDF", path))
    return written
