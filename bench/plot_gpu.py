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
        if row.get("records"):  # the records rows have one size: they are in the table, not the plot
            continue
        series.setdefault(row["backend"], []).append((row["n"], row["gbps"]))
    fig, ax = plt.subplots(figsize=(10, 6))
    colours = plt.get_cmap("tab20").colors  # twelve backends: the default cycle of ten would repeat
    markers = "os^vD<>ph*XP"
    for k, (name, points) in enumerate(series.items()):
        points.sort()
        xs, ys = zip(*points)
        if name == "read probe":
            style = dict(linestyle="--", color="black", linewidth=2)
        else:
            style = dict(marker=markers[k % len(markers)], markersize=4, color=colours[(2 * k) % 20 if k < 10 else 2 * (k - 10) + 1])
        ax.plot(xs, ys, label=name, **style)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (f32 elements, device-resident)")
    ax.set_ylabel("GB/s (bytes read / median time)")
    device = data.get("device") or data.get("machine", {}).get("gpu", {}).get("name", "")  # older results: "device"
    ax.set_title(f"xreduce f32 sum, block 256: {device} ({data['date']}, {data.get('commit', '')})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path_out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
