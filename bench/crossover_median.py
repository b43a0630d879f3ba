#!/usr/bin/env python3
"""The median of several crossover runs: crossover_median.py OUT_PREFIX RUN.json RUN.json [...]

One run's worst regret is as much the host's noise as `auto`'s choice (a shared host stalls now
and then). This takes independent runs of the crossover suite (with or without --uncalibrated) and
reports, per residency and size, the median regret with its spread (lowest and highest), the
median choice regret, the median paired regret (auto's cost measured beside its pick, times its
pick's measured beside the fastest: runs from before the suite measured it have none), and the
backends auto picked.
Writes OUT.json, OUT.md and OUT.png.
"""
import json
import statistics
import sys


def sizes(log2ns):
    """Sizes as 2^k, or 'none'."""
    return ", ".join(f"2^{l}" for l in sorted(log2ns)) if log2ns else "none"


def paired(cell):
    """The cell's median paired regret, or '-' where no run measured it."""
    return f"{statistics.median(cell['paired']):.2f}" if cell["paired"] else "-"


def main(out, paths):
    runs = [json.load(open(p)) for p in paths]
    cells = {}
    for run in runs:
        for row in run["rows"]:
            cell = cells.setdefault((row["residency"], row["log2n"]), {"regret": [], "choice": [], "paired": [], "picks": set(), "fastest": []})
            cell["regret"].append(row["regret"])
            cell["choice"].append(row["choice_regret"])
            if "paired_regret" in row:
                cell["paired"].append(row["paired_regret"])
            cell["picks"].add(row["auto_pick"])
            cell["fastest"].append(row["fastest"])
    residencies = list(dict.fromkeys(r for r, _ in cells))
    what = "uncalibrated: the default thresholds" if runs[0].get("uncalibrated") else "after calibration"
    lines = [f"# auto's regret over {len(runs)} crossover runs ({what})", "",
             "Per size: the median of the runs' regret (time(auto) / time(fastest)), its lowest and highest, "
             "the median choice regret (time(auto's pick, named) / time(fastest)), the median paired regret (auto's time over "
             "its pick's, a batch of each in turn, times its pick's over the fastest's, measured the same way), and what auto picked.", ""]
    summary = {}
    for res in residencies:
        lines += [f"## {res} data", "", "| N | median regret | lowest | highest | median choice regret | median paired regret | auto picks | fastest (per run) |",
                  "|---:|---:|---:|---:|---:|---:|---|---|"]
        worst = (0.0, None)
        for (r, l), c in sorted(cells.items(), key=lambda kv: kv[0][1]):
            if r != res:
                continue
            med = statistics.median(c["regret"])
            worst = max(worst, (med, l))
            lines.append(f"| 2^{l} | {med:.2f} | {min(c['regret']):.2f} | {max(c['regret']):.2f} | "
                         f"{statistics.median(c['choice']):.2f} | {paired(c)} | {', '.join(sorted(c['picks']))} | {', '.join(c['fastest'])} |")
        over = [l for (r, l), c in cells.items() if r == res and statistics.median(c["regret"]) > 1.10]
        over_paired = [l for (r, l), c in cells.items() if r == res and c["paired"] and statistics.median(c["paired"]) > 1.10]
        summary[res] = {"worst_median_regret": worst[0], "at_log2n": worst[1], "sizes_over_1_10": sorted(over),
                        "sizes_over_1_10_paired": sorted(over_paired)}
        measured = any(c["paired"] for (r, _), c in cells.items() if r == res)
        lines += ["", f"Worst median regret: {worst[0]:.2f} at 2^{worst[1]}; sizes above 1.10: {sizes(over)}; "
                      f"paired, above 1.10: {sizes(over_paired) if measured else 'not measured'}", ""]
    machine = runs[0].get("machine", {})
    where = machine.get("cpu", "?") + (f", {machine['gpu']['name']}" if machine.get("gpu", {}).get("name") else "")
    commits = sorted({r.get("commit", "?") for r in runs})
    lines.append(f"_Runs of {', '.join(sorted({r.get('date', '?') for r in runs}))} at commit {', '.join(commits)} on {where}._")
    text = "\n".join(lines) + "\n"
    with open(out + ".md", "w") as f:
        f.write(text)
    with open(out + ".json", "w") as f:
        json.dump({"suite": "crossover-median", "runs": paths, "summary": summary,
                   "cells": [{"residency": r, "log2n": l, **{k: (sorted(v) if isinstance(v, set) else v) for k, v in c.items()}}
                             for (r, l), c in sorted(cells.items())]}, f, indent=1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    for res in residencies:
        pts = sorted((l, c) for (r, l), c in cells.items() if r == res)
        xs = [l for l, _ in pts]
        med = [statistics.median(c["regret"]) for _, c in pts]
        lo = [m - min(c["regret"]) for m, (_, c) in zip(med, pts)]
        hi = [max(c["regret"]) - m for m, (_, c) in zip(med, pts)]
        ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=2, label=res)
    ax.axhline(1.10, color="black", linestyle="--", linewidth=0.8)
    ax.set_ylim(0.8, 2.0)
    ax.set_xlabel("log2 N (f32 sum)")
    ax.set_ylabel("regret: auto / fastest (median, lowest to highest)")
    ax.set_title(f"auto's regret over {len(runs)} runs ({what})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
