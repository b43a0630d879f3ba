#!/usr/bin/env python3
"""Plots a gpu-reduce.json: GB/s against N, one line per backend, the read probe dashed."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path_in: str, path_out: str) -> None:
    with open(path_in) as f:
        data = json.load(f)
    series = {}
    for row in data["rows"]:
        series.setdefault(row["backend"], []).append((row["n"], row["gbps"]))
    fig, ax = plt.subplots(figsize=(10, 6))
    for name, points in series.items():
        points.sort()
        xs, ys = zip(*points)
        style = dict(linestyle="--", color="black", linewidth=2) if name == "read probe" else dict(marker="o", markersize=3)
        ax.plot(xs, ys, label=name, **style)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (f32 elements, device-resident)")
    ax.set_ylabel("GB/s (bytes read / median time)")
    ax.set_title(f"xreduce f32 sum, block 256: {data['device']} ({data['date']}, {data.get('commit', '')})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path_out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
