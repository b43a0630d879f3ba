#!/usr/bin/env python3
"""Plots a suite's JSON from xreduce_bench: plot_suites.py RESULTS.json OUT.png.

progression: GB/s per kernel as bars, the read probe as a line, one panel per setting.
transfer:    speed-up over the seeds' CPU loop against N, with and without the transfers.
crossover:   time per element against N, one line per backend, `auto` highlighted; one panel
             per residency.
cpu:         GB/s and relative error against N, one line per backend and thread count, and the read probes.
exact:       exact sums' speed over plain ones against N, per backend and dtype (host data); and on
             the GPU, exact time over plain cub's.
views:       N-D views reduced in place: GB/s, and the time over a gather into rows plus their reduction;
             device data: each shape's share of the read probe, beside torch's and CuPy's (views-torch.json).
dtypes:      sums of every element type as a share of the read probe over the same bytes: host (one
             thread, all threads) and device (cuda.shuffle, cuda.single_pass, cub).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def title(data, what):
    machine = data["machine"]
    where = machine.get("gpu", {}).get("name") or machine["cpu"]
    return f"xreduce {what}: {where} ({data['date']}, {data['commit']})"


def progression(data, ax_list):
    for ax, table in zip(ax_list, data["tables"]):
        names = [r["backend"] for r in table["rows"]]
        ax.bar(range(len(names)), [r["gbps"] for r in table["rows"]], color="tab:blue")
        ax.axhline(table["probe_gbps"], color="black", linestyle="--", label="read probe")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("GB/s")
        ax.set_title(f"{table['dtype']} sum, N = 2^{table['log2n']}")
        ax.legend(fontsize=8)


def transfer(data, ax):
    sizes = data["sizes"]
    xs = [s["n"] for s in sizes]
    for kernel, colour in (("cuda.global_halving", "tab:red"), ("cuda.unroll_warp", "tab:blue")):
        with_t = [max(r["speedup_naive_total"] for r in s["gpu"] if r["kernel"] == kernel) for s in sizes]
        kernel_only = [max(r["speedup_naive_kernel"] for r in s["gpu"] if r["kernel"] == kernel) for s in sizes]
        ax.plot(xs, with_t, marker="o", color=colour, label=f"{kernel}, with transfers (best block)")
        ax.plot(xs, kernel_only, marker="s", linestyle="--", color=colour, label=f"{kernel}, kernel only (best block)")
    ax.plot(xs, [s["cpu_naive_s"] / s["streamed_pageable_s"] for s in sizes], marker="^", color="tab:green",
            label="streamed pageable (cuda.unroll_warp)")
    ax.plot(xs, [s["cpu_naive_s"] / s["cpu_best_s"] for s in sizes], marker="v", color="tab:gray",
            label=f"{sizes[0]['cpu_best']} (CPU)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (f32 elements in host memory)")
    ax.set_ylabel("speed-up over the seeds' CPU loop")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def crossover(data, ax_list):
    residencies = []
    for row in data["rows"]:
        if row["residency"] not in residencies:
            residencies.append(row["residency"])
    for ax, res in zip(ax_list, residencies):
        rows = [r for r in data["rows"] if r["residency"] == res]
        names = list(rows[-1]["backends"].keys())
        for name in names:
            pts = [(r["n"], r["backends"][name]["median_s"] / r["n"] * 1e9) for r in rows if name in r["backends"]]
            xs, ys = zip(*pts)
            if name == "auto":
                ax.plot(xs, ys, color="black", linewidth=3, alpha=0.6, label="auto", zorder=10)
            else:
                ax.plot(xs, ys, linewidth=1, marker=".", markersize=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("N (f32 elements)")
        ax.set_ylabel("ns per element")
        worst = data["worst_regret"].get(res)
        choice = data.get("worst_choice_regret", {}).get(res)
        extra = f", choice {choice:.2f}" if choice is not None else ""
        ax.set_title(f"{res} data (worst regret of auto {worst:.2f}{extra})", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2)


def cpu(data, axes):
    series = {}
    for r in data["rows"]:
        key = r["backend"] + (" (1 thread)" if r["threads"] == 1 else "")
        series.setdefault(key, []).append((r["n"], r["gbps"], r["relative_error"]))
    for name, pts in series.items():
        xs = [p[0] for p in pts]
        axes[0].plot(xs, [p[1] for p in pts], marker="o", markersize=3, label=name)
        axes[1].plot(xs, [max(p[2], 1e-12) for p in pts], marker="o", markersize=3, label=name)
    probes = data.get("probes", [])  # older results have none
    for key, label in (("all_threads_gbps", "read probe, all threads"), ("one_thread_gbps", "read probe, 1 thread")):
        if probes:
            axes[0].plot([p["n"] for p in probes], [p[key] for p in probes], color="black",
                         linestyle="--" if key.startswith("all") else ":", label=label)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("N (f32 elements)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("GB/s")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("relative error (1e-12: exact)")


def exact_panels(data):
    """The exact suite's panels: host data by N and by distribution (unless --device-only), device data
    by N, and device data by distribution (where the run has that table)."""
    panels = ["host"] if data.get("host_rows") else []
    if any(r.get("table") == "distributions" for r in data.get("host_rows", [])):
        panels.append("host distributions")
    if data.get("device_rows"):  # none on a machine without a GPU
        panels.append("device")
    if any(r.get("table") == "distributions" for r in data.get("device_rows", [])):
        panels.append("distributions")
    return panels


def exact(data, axes):
    panel = dict(zip(exact_panels(data), axes))
    for dtype, style in (("f32", "-"), ("f64", "--")):
        series = {}
        for r in data["host_rows"]:
            if r.get("dtype") == dtype and "exact_over_plain_speed" in r:
                key = r["backend"] + (" (1 thread)" if r["threads"] == 1 else "")
                series.setdefault(key, []).append((r["n"], r["exact_over_plain_speed"]))
        for name, pts in series.items():
            panel["host"].plot([p[0] for p in pts], [p[1] for p in pts], linestyle=style, marker="o", markersize=3,
                               label=f"{name}, {dtype}")
        gpu = {}
        for r in data["device_rows"]:
            if r.get("dtype") == dtype and r.get("accuracy") == "exact":
                gpu.setdefault(r["backend"], []).append((r["n"], r["time_over_cub"]))
        for name, pts in gpu.items():
            panel["device"].plot([p[0] for p in pts], [p[1] for p in pts], linestyle=style, marker="o", markersize=3,
                                 label=f"{name} exact, {dtype} (uniform)")
    if "host" in panel:
        panel["host"].set_ylabel("exact speed / plain speed (host data)")
    if "device" in panel:
        panel["device"].set_ylabel("exact time / plain cub time (device data)")
        panel["device"].axhline(1.15, color="black", linestyle=":", label="1.15")
    if "host distributions" in panel:
        # exact time over plain time, one thread (sequential) and all (openmp), by distribution, at
        # the largest size the suite timed them (a full run also times them at 2^24, from a cache)
        ax = panel["host distributions"]
        by_spread = [r for r in data["host_rows"] if r.get("table") == "distributions"]
        largest = max(r["log2n"] for r in by_spread)
        rows = [r for r in by_spread if r["log2n"] == largest]
        keys = sorted({(r["dtype"], r["distribution"]) for r in rows})
        ys = range(len(keys))
        for k, (backend, threads, label) in enumerate((("sequential", 0, "sequential"), ("openmp", 0, "openmp, all threads"))):
            by_key = {(r["dtype"], r["distribution"]): r["exact_over_plain"] for r in rows
                      if r["backend"] == backend and r["threads"] == threads}
            ax.barh([y + 0.4 * k for y in ys], [by_key.get(key, 0) for key in keys], height=0.4, label=label)
        ax.set_yticks([y + 0.2 for y in ys], [f"{d} 2^{largest}\n{name}" for d, name in keys], fontsize=6)
        ax.axvline(2, color="black", linestyle=":", label="2")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("exact time / plain time (host data, by distribution)")
        ax.legend(fontsize=7)
    if "distributions" in panel:
        # the largest N of each dtype: exact time over plain cub's, one bar per distribution
        ax = panel["distributions"]
        by_spread = [r for r in data["device_rows"] if r.get("table") == "distributions"]
        largest = {}
        for r in by_spread:
            largest[r["dtype"]] = max(largest.get(r["dtype"], 0), r["n"])
        rows = [r for r in by_spread if r["n"] == largest[r["dtype"]]]
        labels = [f'{r["dtype"]} 2^{r["log2n"]}\n{r["distribution"]}' for r in rows]
        ys = range(len(rows))
        for k, backend in enumerate(("cuda.single_pass", "cuda.shuffle")):
            ax.barh([y + 0.4 * k for y in ys], [r[backend + "_exact_over_cub"] for r in rows], height=0.4,
                    label=backend + " exact")
        ax.set_yticks([y + 0.2 for y in ys], labels, fontsize=6)
        ax.axvline(1.25, color="black", linestyle=":", label="1.25")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("exact time / plain cub time (device data, by distribution)")
        ax.legend(fontsize=7)
    for name in ("host", "device"):
        if name in panel:
            panel[name].set_xscale("log", base=2)
            panel[name].set_xlabel("N (elements)")
            panel[name].grid(True, which="both", alpha=0.3)
            panel[name].legend(fontsize=7)


def segments(data, axes):
    host = [r for r in data["host_rows"] if "fraction_of_flat" in r]
    spreads = [r for r in data["device_rows"] if "exact_over_plain" in r]
    if host:
        labels = [f'{r["backend"]}\n{r["shape"]}' for r in host]
        axes[0].bar(range(len(host)), [100 * r["fraction_of_flat"] for r in host])
        axes[0].set_xticks(range(len(host)), labels, fontsize=7, rotation=30, ha="right")
        axes[0].axhline(80, color="black", linestyle=":", label="80%")
        axes[0].set_ylabel("% of the same backend's flat sum (host data)")
    elif spreads:  # --device-only: the exact power-law sums by distribution instead
        axes[0].bar(range(len(spreads)), [r["exact_over_plain"] for r in spreads])
        labels = [f'{r["dtype"]} {r["distribution"]}' if "dtype" in r else r["distribution"] for r in spreads]  # f32 alone before
        axes[0].set_xticks(range(len(spreads)), labels, fontsize=7, rotation=30, ha="right")
        axes[0].axhline(1.3, color="black", linestyle=":", label="1.3x")
        axes[0].set_ylabel("exact / plain cuda.shuffle time, power-law segments (device data)")
    else:
        axes[0].axis("off")
    device = [r for r in data["device_rows"] if "fraction_of_probe" in r]
    axes[1].bar(range(len(device)), [100 * r["fraction_of_probe"] for r in device])
    axes[1].set_xticks(range(len(device)), [f'{r["segments"]}\n{r["backend"]}' for r in device], fontsize=6, rotation=30, ha="right")
    axes[1].axhline(90, color="black", linestyle=":", label="90%")
    axes[1].set_ylabel("% of the read probe (device data)")
    for ax in axes:
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)


def stats(data, axes):
    host = [r for r in data["host_rows"] if "over_sum" in r]
    axes[0].bar(range(len(host)), [r["over_sum"] for r in host])
    axes[0].set_xticks(range(len(host)), [f'{r["backend"]}\n{r["what"]}' for r in host], fontsize=7, rotation=30, ha="right")
    axes[0].set_ylabel("time / the same backend's plain sum (host data)")
    device = [r for r in data["device_rows"] if "over_sum" in r and r["what"] != "read probe"]
    axes[1].bar(range(len(device)), [r["over_sum"] for r in device])
    axes[1].set_xticks(range(len(device)), [r["what"] for r in device], fontsize=7, rotation=30, ha="right")
    axes[1].set_ylabel("time / plain sum (device data)")
    for ax in axes:
        ax.axhline(1.2, color="black", linestyle=":", label="1.2x")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)


def views_panels(data):
    return (2 if any("view" in r for r in data.get("rows", [])) else 0) + (1 if data.get("device_rows") else 0)


def views(data, axes, path_in):
    rows = [r for r in data.get("rows", []) if "view" in r]  # the targets' shapes' rows: views-cpu-compared.md
    if rows:
        labels = [f'{r["view"]}\n{r["backend"]}' for r in rows]
        axes[0].bar(range(len(rows)), [r["gbps"] for r in rows])
        axes[0].set_ylabel("GB/s, the view reduced in place")
        axes[1].bar(range(len(rows)), [r["ratio"] for r in rows])
        axes[1].axhline(1.0, color="black", linestyle=":", label="as fast as copy + reduce")
        axes[1].set_ylabel("time in place / time of copy + reduce")
        axes[1].legend(fontsize=7)
        for ax in axes[:2]:
            ax.set_xticks(range(len(rows)), labels, fontsize=6, rotation=40, ha="right")
            ax.grid(True, axis="y", alpha=0.3)
    device = data.get("device_rows", [])
    # (The exact f64 and bf16 rows are in the table alone: their bytes are not the probe's f32.)
    mine = [r for r in device if r.get("kernel") not in ("read probe", "sweep") and r.get("dtype", "f32") == "f32"]
    if not mine:
        return
    # Device data: each shape's share of the read probe for the kernel cuda.shuffle runs (the
    # faster column kernel where there are two), and torch's and CuPy's from the same session.
    ax = axes[-1]
    probe = next(r for r in device if r.get("kernel") == "read probe")["median_s"]
    arrays = list(dict.fromkeys(r["array"] for r in mine))
    series = {"xreduce (cuda.shuffle)": [probe / min(r["median_s"] for r in mine if r["array"] == a) for a in arrays]}
    others = os.path.join(os.path.dirname(path_in), "views-torch.json")
    if os.path.exists(others):
        with open(others) as f:
            theirs = {r["array"]: r for r in json.load(f)["rows"]}
        for name, key in (("torch.sum(dim=...)", "torch_s"), ("cupy.sum(axis=...)", "cupy_s")):
            if all(key in theirs.get(a, {}) for a in arrays):
                series[name] = [probe / theirs[a][key] for a in arrays]
    width = 0.8 / len(series)
    for k, (name, values) in enumerate(series.items()):
        ax.bar([i + k * width for i in range(len(arrays))], values, width, label=name)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(arrays))], arrays, fontsize=7, rotation=30, ha="right")
    ax.axhline(0.85, color="black", linestyle=":", label="85% of the probe")
    ax.set_ylabel("read probe's time / reduction's time (device data, f32)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")


def dtypes(data, axes):
    host = [r for r in data["host_rows"] if r["what"] == "sum"]
    backends = sorted({r["backend"] for r in host}, key=lambda b: b != "sequential")
    for ax, rows, names, where in ((axes[0], host, backends, "host data"),
                                   (axes[1], [r for r in data["device_rows"] if r["what"] == "sum"],
                                    ["cuda.shuffle", "cuda.single_pass", "cub"], "device data")):
        types = list(dict.fromkeys(r["dtype"] for r in rows))
        width = 0.8 / max(1, len(names))
        for k, name in enumerate(names):
            share = {r["dtype"]: r["fraction_of_probe"] for r in rows if r["backend"] == name}
            ax.bar([i + k * width for i in range(len(types))], [share.get(t, 0) for t in types], width, label=name)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(types))], types)
        ax.axhline(0.9, color="black", linestyle=":", label="90% of the probe")
        ax.set_ylabel(f"sum's rate / read probe's, same bytes ({where})")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)


def main(path_in, path_out):
    with open(path_in) as f:
        data = json.load(f)
    suite = data["suite"]
    if suite == "progression":
        fig, axes = plt.subplots(1, len(data["tables"]), figsize=(14, 5))
        progression(data, list(axes) if len(data["tables"]) > 1 else [axes])
    elif suite == "transfer":
        fig, ax = plt.subplots(figsize=(10, 6))
        transfer(data, ax)
    elif suite in ("crossover", "crossover-uncalibrated"):
        count = len({r["residency"] for r in data["rows"]})
        fig, axes = plt.subplots(1, count, figsize=(7 * count, 6), squeeze=False)
        crossover(data, list(axes[0]))
    elif suite == "cpu":
        fig, axes = plt.subplots(1, 2, figsize=(14, 5))
        cpu(data, axes)
    elif suite == "exact":
        count = max(1, len(exact_panels(data)))
        fig, axes = plt.subplots(1, count, figsize=(7 * count, 6), squeeze=False)
        exact(data, list(axes[0]))
    elif suite == "segments":
        fig, axes = plt.subplots(1, 2, figsize=(16, 6))
        segments(data, axes)
    elif suite == "stats":
        fig, axes = plt.subplots(1, 2, figsize=(14, 6))
        stats(data, axes)
    elif suite == "views":
        count = max(1, views_panels(data))
        fig, axes = plt.subplots(1, count, figsize=(8 * count, 6), squeeze=False)
        views(data, list(axes[0]), path_in)
    elif suite == "dtypes":
        fig, axes = plt.subplots(1, 2, figsize=(14, 5))
        dtypes(data, axes)
    else:
        print(f"plot_suites.py: nothing to plot for suite '{suite}'")
        return
    fig.suptitle(title(data, suite), fontsize=10)
    fig.tight_layout()
    fig.savefig(path_out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
