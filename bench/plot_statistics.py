"""Plots the `statistics` suite: each op's rate as a share of the all-threads read probe, one bar
per CPU backend, with numpy's rate beside it where statistics-numpy.json is there.

    python3 bench/plot_statistics.py DIR/statistics.json OUT.png
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path, out):
    with open(path) as f:
        suite = json.load(f)
    probe = next(r["gbps"] for r in suite["rows"] if r.get("what") == "read probe")
    rows = [r for r in suite["rows"] if "op" in r]
    labels = []
    for r in rows:
        label = r["op"] + (" (exact)" if r["accuracy"] == "exact" else "")
        if label not in labels:
            labels.append(label)
    backends = sorted({r["backend"] for r in rows})
    numpy_path = os.path.join(os.path.dirname(path), "statistics-numpy.json")
    numpy_rows = {}
    if os.path.exists(numpy_path):
        with open(numpy_path) as f:
            numpy_rows = {r["op"]: r for r in json.load(f)["rows"]}
    series = backends + (["numpy"] if numpy_rows else [])
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(12, 4.5))
    for k, name in enumerate(series):
        values = []
        for label in labels:
            if name == "numpy":
                r = numpy_rows.get(label)
                values.append(r["n"] * 4 / r["median_s"] / 1e9 / probe if r else 0)
            else:
                r = next((r for r in rows if r["backend"] == name and r["op"] + (" (exact)" if r["accuracy"] == "exact" else "") == label), None)
                values.append(r["fraction_of_probe"] if r else 0)
        ax.bar([i + k * width for i in range(len(labels))], values, width, label=name)
    ax.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(labels))])
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_ylabel(f"share of the read probe ({probe:.0f} GB/s)")
    ax.set_title(f"Statistics of 2^{suite['n'].bit_length() - 1} f32 on the CPU, all threads ({suite.get('commit', '')})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
