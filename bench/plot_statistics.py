"""Plots the `statistics` suite: each op's rate as a share of the all-threads read probe, one bar
per CPU backend, with numpy's rate beside it where statistics-numpy.json is there; and, where the
suite has device rows, a second panel: each op's time on cuda.shuffle over its plain sum, with
torch's over torch's sum beside it where statistics-gpu-torch.json is there.

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
    device_rows = [r for r in suite.get("device_rows", []) if r.get("op") and r["what"] not in ("read probe", "sum (cub)")]
    fig, axes = plt.subplots(2 if device_rows else 1, 1, figsize=(12, 9 if device_rows else 4.5), squeeze=False)
    ax = axes[0][0]
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
    if device_rows:
        plot_device(axes[1][0], suite, device_rows, os.path.join(os.path.dirname(path), "statistics-gpu-torch.json"))
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_device(ax, suite, rows, torch_path):
    """Each op's time over the plain sum on the GPU: cuda.shuffle's, and torch's where measured."""
    labels = [r["what"] for r in rows]
    series = {"xreduce (cuda.shuffle)": [r["over_sum"] for r in rows]}
    if os.path.exists(torch_path):
        with open(torch_path) as f:
            by_op = {}
            for r in json.load(f)["rows"]:
                by_op.setdefault(r["op"], r["torch_over_sum"])  # var: torch.var_mean, its first row
        series["torch"] = [by_op.get("sum (cuda.shuffle)" if r["op"] == "sum" else r["what"], 0) for r in rows]
    width = 0.8 / len(series)
    for k, (name, values) in enumerate(series.items()):
        ax.bar([i + k * width for i in range(len(labels))], values, width, label=name)
    ax.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(labels))])
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_ylabel("time over the same library's plain sum")
    n = next(r["n"] for r in rows)
    ax.set_title(f"Statistics of 2^{n.bit_length() - 1} f32 in GPU memory (torch: var is torch.var_mean)")
    ax.legend()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
