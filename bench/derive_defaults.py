#!/usr/bin/env python3
"""Derives a row of the default thresholds (core/src/dispatch_defaults.cpp) from committed crossover
runs: the median, over the runs, of each CPU backend's time at each size (pageable and pinned data
together, which the CPU reads alike), and of `hybrid`'s on pinned data.

- parallel_min_count: the least size from which a parallel backend beats `sequential` at every
  larger size;
- parallel_backend, parallel_backend_large, parallel_large_min_count: from there on, `openmp` or
  `tbb` throughout, or one up to a size and the other from it: whichever has the least mean
  slowdown against the faster of the two (the geometric mean over sizes, which one noisy median
  cannot swing as it swings the worst); a switch must lower it by more than 1%;
- cpu_gpu_min_count_pinned: the least size from which `hybrid` is faster than every CPU backend,
  by more than the noise (3%), at every larger size (0: nowhere).

Usage: derive_defaults.py RUNS_DIR   (a folder of crossover*.json, e.g. bench/results/nvidia-h200/crossover-runs)
"""
import glob
import json
import math
import statistics
import sys

CPU = ("sequential", "openmp", "tbb")
NOISE = 1.03  # a ratio of medians this close to 1 is no evidence either way


def medians(runs, residencies, backend):
    """{log2n: the median over runs of the backend's time} on the given residencies."""
    times = {}
    for run in runs:
        for row in run["rows"]:
            if row["residency"] in residencies and backend in row["backends"]:
                times.setdefault(row["log2n"], []).append(row["backends"][backend]["median_s"])
    return {l: statistics.median(v) for l, v in times.items()}


def from_which(sizes, holds):
    """The least size from which holds(size) is true at every larger one, or None."""
    start = None
    for l in sorted(sizes, reverse=True):
        if not holds(l):
            break
        start = l
    return start


def main(folder):
    runs = [json.load(open(path)) for path in sorted(glob.glob(folder + "/*.json"))]
    if not runs:
        sys.exit(f"derive_defaults: no crossover runs in {folder}")
    cpu = {b: medians(runs, ("pageable", "pinned"), b) for b in CPU}
    sizes = sorted(cpu["sequential"])
    print(f"{len(runs)} runs; per size, each backend's median time over the runs / the fastest's:")
    for l in sizes:
        best = min(cpu[b][l] for b in CPU)
        print(f"  2^{l:<2}  " + "  ".join(f"{b} {cpu[b][l] / best:.2f}" for b in CPU))

    start = from_which(sizes, lambda l: min(cpu["openmp"][l], cpu["tbb"][l]) < cpu["sequential"][l])
    if start is None:
        print("parallel_min_count: never (sequential wins at the largest size)")
        return
    above = [l for l in sizes if l >= start]
    fastest = {l: min(cpu["openmp"][l], cpu["tbb"][l]) for l in above}

    def slowdown(low, high, switch):  # the geometric mean of time / fastest's over the sizes above
        chosen = lambda l: cpu[low if switch is not None and l < switch else high][l]
        return math.exp(statistics.mean(math.log(chosen(l) / fastest[l]) for l in above))

    single = min(("openmp", "tbb"), key=lambda b: slowdown(b, b, None))
    low, high, switch = single, single, None
    best = slowdown(single, single, None)
    for a, b in (("openmp", "tbb"), ("tbb", "openmp")):
        for l in above[1:]:
            if slowdown(a, b, l) < min(best, slowdown(single, single, None) / 1.01):
                low, high, switch, best = a, b, l, slowdown(a, b, l)
    print(f"parallel_min_count = 2^{start}, parallel_backend = {low}")
    if switch is not None:
        print(f"parallel_backend_large = {high} from parallel_large_min_count = 2^{switch} "
              f"(mean slowdown {best:.3f}; {single} throughout {slowdown(single, single, None):.3f})")
    else:
        print(f"no large backend: {low} throughout (mean slowdown {best:.3f})")

    hybrid = medians(runs, ("pinned",), "hybrid")
    pinned = {b: medians(runs, ("pinned",), b) for b in CPU}
    if hybrid:
        hybrid_wins = lambda l: NOISE * hybrid[l] < min(pinned[b][l] for b in CPU)
        h = from_which(sorted(hybrid), hybrid_wins)
        print(f"cpu_gpu_min_count_pinned = {'2^' + str(h) if h is not None else '0 (hybrid never fastest)'}")
        for l in sorted(hybrid)[-4:]:
            print(f"  pinned 2^{l}: hybrid / best CPU backend {hybrid[l] / min(pinned[b][l] for b in CPU):.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
