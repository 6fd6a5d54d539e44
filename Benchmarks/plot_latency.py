#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""Plot tick-lateness percentile distributions from countdown-bench .hgrm files.

Usage: plot_latency.py HGRM_DIR OUT.png [ACTIVITIES]

Reads HGRM_DIR/<driver>-<activities>.hgrm as the default suite writes them (values in
microseconds) and draws lateness against percentile, ours beside the peers.
"""
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RUNS = [
    ("countdown-precise-{n}", "Countdown, precise", "#1f77b4", "-"),
    ("countdown-{n}", "Countdown, 1 ms quantum (default)", "#0b3d91", "-"),
    ("uv-timer-{n}", "one uv_timer_t per activity", "#d62728", "--"),
    ("nio-{n}", "SwiftNIO scheduleCallback", "#2ca02c", "--"),
    ("dispatch-{n}", "one DispatchSourceTimer per activity", "#ff7f0e", "--"),
]


def read_hgrm(path):
    """(percentile, value in µs) pairs, percentiles below 1."""
    points = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4 or line.startswith("#"):
                continue
            try:
                value, pct = float(parts[0]), float(parts[1])
            except ValueError:
                continue
            if pct < 1.0:
                points.append((pct, value))
    return points


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    directory, out = sys.argv[1], sys.argv[2]
    n = sys.argv[3] if len(sys.argv) > 3 else "100000"
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    for pattern, label, color, style in RUNS:
        path = os.path.join(directory, pattern.format(n=n) + ".hgrm")
        if not os.path.exists(path):
            continue
        pts = read_hgrm(path)
        xs = [1.0 / (1.0 - p) for p, _ in pts]
        ys = [v for _, v in pts]
        ax.plot(xs, ys, style, color=color, label=label, linewidth=2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [1, 2, 10, 100, 1000, 10000]
    ax.set_xticks(ticks)
    ax.set_xticklabels(["0%", "50%", "90%", "99%", "99.9%", "99.99%"])
    ax.set_xlim(1, 20000)
    ax.set_ylim(bottom=10)
    ax.set_xlabel("percentile")
    ax.set_ylabel("tick lateness (µs, log scale)")
    ax.set_title(f"Tick lateness, {int(n):,} activities at random phases (countdown-bench suite)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
