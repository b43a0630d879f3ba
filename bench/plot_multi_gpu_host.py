#!/usr/bin/env python3
"""Plots one host array over every GPU against one GPU: each xreduce_bench_multi_gpu result in a
folder (multi-gpu-host*.json) as a pair of horizontal bars, the two GPUs' speed-up over one from
pageable and from pinned memory, with the targets (1.8x pageable, 1.9x pinned) as lines.

    python3 bench/plot_multi_gpu_host.py DIR      (reads DIR/multi-gpu-host*.json; writes DIR/multi-gpu-host.png)
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(result: dict) -> str:
    """What a result measured, as its md's first line says it: op, accuracy, rows, settings."""
    parts = [("exact " if result.get("accuracy") == "exact" else "") + result["op"]]
    if result.get("row_length"):
        parts.append(f"rows of {result['row_length']}")
    if result.get("settings") and result["settings"] != "streams=3":  # streams=3 is the default
        parts.append(result["settings"])
    return ", ".join(parts)


def main() -> None:
    folder = Path(sys.argv[1])
    results = [json.loads(p.read_text()) for p in sorted(folder.glob("multi-gpu-host*.json"))]
    if not results:
        sys.exit(f"plot_multi_gpu_host: no multi-gpu-host*.json in {folder}")
    results.sort(key=label)
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(results) + 2.2))
    height = 0.38
    for k, result in enumerate(results):
        ratios = {row["memory"]: row["ratio"] for row in result["rows"]}
        for shift, memory, colour in ((-height / 2, "pageable", "tab:orange"), (height / 2, "pinned", "tab:blue")):
            if memory in ratios:
                ax.barh(k + shift, ratios[memory], height, color=colour, label=memory if k == 0 else None)
                ax.text(ratios[memory] + 0.02, k + shift, f"{ratios[memory]:.2f}x", va="center", fontsize=8)
    ax.axvline(1.8, color="tab:orange", linestyle="--", linewidth=1, label="target, pageable (1.8x)")
    ax.axvline(1.9, color="tab:blue", linestyle="--", linewidth=1, label="target, pinned (1.9x)")
    ax.set_yticks(range(len(results)), [label(r) for r in results], fontsize=8)
    ax.set_xlim(0, 2.2)
    ax.set_xlabel(f"two GPUs over one (time on one / time on two), 2^{results[0]['log2n']} f32 host elements")
    ax.set_title("cuda.multi_gpu against cuda.shuffle, host data")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    fig.tight_layout()
    fig.savefig(folder / "multi-gpu-host.png", dpi=120)


if __name__ == "__main__":
    main()
