#!/usr/bin/env python3
"""Plots pageable staging on several GPUs: the rates of the pieces (xreduce_bench_staging's
staging.json) beside the streamed path on one GPU and on all (xreduce_bench_multi_gpu's
multi-gpu-host.json), as horizontal bars in GB/s of pageable input.

    python3 bench/plot_staging.py DIR      (reads DIR/staging.json, DIR/multi-gpu-host.json; writes DIR/staging.png)
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    folder = Path(sys.argv[1])
    staging = json.loads((folder / "staging.json").read_text())
    host = json.loads((folder / "multi-gpu-host.json").read_text())
    gib = staging["bytes"] / 1e9
    bars = []  # (label, GB/s, colour)
    # The best row of each kind of piece, for one GPU and for all.
    best = {}
    for row in staging["rows"]:
        key = (row["what"], row["gpus"])
        if key not in best or row["gb_per_s"] > best[key]["gb_per_s"]:
            best[key] = row
    for (what, gpus), row in sorted(best.items(), key=lambda kv: kv[1]["gb_per_s"]):
        where = "host only" if gpus == 0 else f"{gpus} GPU" + ("s" if gpus > 1 else "")
        bars.append((f"{what} ({row['detail']}, {where})", row["gb_per_s"], "tab:gray"))
    n_bytes = 4.0 * 2 ** host["log2n"] / 1e9
    for r in host["rows"]:
        bars.append((f"streamed path, {r['memory']}, one GPU", n_bytes / r["one_gpu_s"], "tab:blue"))
        bars.append((f"streamed path, {r['memory']}, every GPU ({r['ratio']:.2f}x)", n_bytes / r["multi_gpu_s"], "tab:orange"))
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(bars) + 1.2))
    ax.barh([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars])
    for y, b in enumerate(bars):
        ax.text(b[1], y, f" {b[1]:.1f}", va="center", fontsize=8)
    ax.set_xlabel("GB/s of pageable input (pinned rows: of pinned input)")
    ax.set_title(f"Host data to the GPUs ({gib:.1f} GB): the pieces, best of each, and the streamed path")
    ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(folder / "staging.png", dpi=110)


if __name__ == "__main__":
    main()
