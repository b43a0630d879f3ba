#!/usr/bin/env python3
"""Derives a row of the default thresholds (core/src/dispatch_defaults.cpp) from committed crossover
runs: the median, over the runs, of each CPU backend's time at each size (pageable and pinned data
together, which the CPU reads alike), and of `hybrid`'s on pinned data.

- parallel_min_count: the least size from which a parallel backend beats `sequential` at every
  larger size;
- parallel_backend, parallel_backend_large, parallel_large_min_count: the faster of `openmp` and
  `tbb` from there on, one of them throughout unless the other is faster by more than the noise
  (3%) at the largest size; then the other takes over from the least size from which it is never
  slower;
- cpu_gpu_min_count_pinned: the least size from which `hybrid` is faster than every CPU backend,
  by more than the noise, at every larger size (0: nowhere).

Usage: derive_defaults.py RUNS_DIR   (a folder of crossover*.json, e.g. bench/results/nvidia-h200/crossover-runs)
"""
import glob
import json
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
    parallel = lambda l: min(cpu["openmp"][l], cpu["tbb"][l])
    winner = lambda l: "openmp" if cpu["openmp"][l] <= cpu["tbb"][l] else "tbb"
    print(f"{len(runs)} runs; per size, each backend's median time over the runs / the fastest's:")
    for l in sizes:
        best = min(cpu[b][l] for b in CPU)
        print(f"  2^{l:<2}  " + "  ".join(f"{b} {cpu[b][l] / best:.2f}" for b in CPU))

    start = from_which(sizes, lambda l: parallel(l) < cpu["sequential"][l])
    if start is None:
        print("parallel_min_count: never (sequential wins at the largest size)")
        return
    above = [l for l in sizes if l >= start]
    large = winner(above[-1])
    other = "tbb" if large == "openmp" else "openmp"
    if cpu[other][above[-1]] > NOISE * cpu[large][above[-1]]:
        switch = from_which(above, lambda l: winner(l) == large)
        below = [winner(l) for l in above if l < switch]
        small = max(set(below), key=below.count) if below else large
    else:  # level at the top: the backend that wins the most sizes, throughout
        winners = [winner(l) for l in above]
        small = large = max(set(winners), key=winners.count)
    print(f"parallel_min_count = 2^{start}, parallel_backend = {small}")
    if small != large:
        print(f"parallel_backend_large = {large} from parallel_large_min_count = 2^{switch}")
    else:
        print("no large backend: one parallel backend from there on")

    hybrid = medians(runs, ("pinned",), "hybrid")
    pinned = {b: medians(runs, ("pinned",), b) for b in CPU}
    if hybrid:
        fastest = lambda l: NOISE * hybrid[l] < min(pinned[b][l] for b in CPU)
        h = from_which(sorted(hybrid), fastest)
        print(f"cpu_gpu_min_count_pinned = {'2^' + str(h) if h is not None else '0 (hybrid never fastest)'}")
        for l in sorted(hybrid)[-4:]:
            print(f"  pinned 2^{l}: hybrid / best CPU backend {hybrid[l] / min(pinned[b][l] for b in CPU):.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
