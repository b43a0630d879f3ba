"""numpy's x.sum(axis=...) and torch.sum(x, dim=...) on the CPU (torch on all threads), for the N-D
targets' shapes of xreduce_bench's `views` suite at 2^26 f32 host data: the median of 10 calls,
wall time. Run in the same session as the suite; writes views-cpu-numpy-torch.{json,md} beside
its results and, where the suite's views.json is there, views-cpu-compared.md: the fastest CPU
backend of xreduce for each shape beside numpy and torch.

Where the xreduce package imports, views-cpu-interleaved.{json,md} too: xreduce.sum(x, axis=...)
on its parallel CPU backends, numpy and torch on each shape in the same rounds, one call of each a
round in turn, beside each library's sum of the whole array (the same bytes read as one run): on a
shared host whose memory bandwidth moves from minute to minute, ratios from calls made seconds
apart are what holds.

    python3 bench/python/bench_views_cpu.py OUT_DIR [LOG2N]
"""
import json
import os
import statistics
import sys
import time

import numpy

from bench_statistics_numpy import seconds_per_call
from views_shapes import shapes

try:
    import torch
except ImportError:  # the comparison then has numpy's column only
    torch = None


def views(log2n, whole=False):
    """(name, array, axes) for each target shape, views of one array of 2^log2n f32; with `whole`,
    the whole array (axes None) first."""
    n = 1 << log2n
    x = numpy.random.default_rng(11).random(n, dtype=numpy.float32)
    if whole:
        yield "whole array", x, None
    for name, shape, axes, transposed in shapes(log2n):
        a = x.reshape(shape)
        yield name, a.T if transposed else a, axes


def main(out_dir, log2n=26):
    n = 1 << log2n
    rows = []
    for name, a, axes in views(log2n):
        t, samples = seconds_per_call(lambda: a.sum(axis=axes), repeat=10)
        row = {"array": name, "numpy_s": t, "numpy_times_s": samples}
        if torch is not None:
            ta = torch.from_numpy(a)
            tt, tsamples = seconds_per_call(lambda: torch.sum(ta, dim=axes), repeat=10)
            row.update({"torch_s": tt, "torch_times_s": tsamples})
        rows.append(row)
    versions = f"numpy {numpy.__version__}" + (f", torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch else "")
    lines = ["# numpy and torch axis sums on the CPU, f32\n", f"{versions}, 2^{log2n} elements, median of 10 calls.\n",
             "| array, axes | numpy us | torch us |", "|---|---:|---:|"]
    for r in rows:
        torch_cell = f"{r['torch_s'] * 1e6:.1f}" if "torch_s" in r else "not run"
        lines.append(f"| {r['array']} | {r['numpy_s'] * 1e6:.1f} | {torch_cell} |")
    with open(os.path.join(out_dir, "views-cpu-numpy-torch.json"), "w") as f:
        json.dump({"suite": "views-cpu-numpy-torch", "versions": versions, "n": n, "rows": rows}, f, indent=1)
    with open(os.path.join(out_dir, "views-cpu-numpy-torch.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    compare(out_dir, rows)


def compare(out_dir, rows):
    path = os.path.join(out_dir, "views.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        mine = [r for r in json.load(f)["rows"] if "target" in r]
    probe = next((r for r in mine if r["target"] == "read probe"), None)
    if probe is None:
        return
    lines = ["# Axis sums on the CPU: xreduce, numpy and torch, same session\n",
             f"f32 host data, 2^{int(probe['n']).bit_length() - 1} elements, all {probe['threads']} threads; the all-threads read "
             f"probe {probe['gbps']:.1f} GB/s. xreduce: its fastest CPU backend for each shape (views.md has each). Ratios are "
             "times over xreduce's: above 1, xreduce is faster.\n",
             "| array, axes | backend | xreduce us | % of probe | numpy / xreduce | torch / xreduce |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        ours = [m for m in mine if m["target"] == r["array"]]
        if not ours:
            continue
        best = min(ours, key=lambda m: m["median_s"])
        torch_cell = f"{r['torch_s'] / best['median_s']:.2f}" if "torch_s" in r else "not run"
        lines.append(f"| {r['array']} | {best['backend']} | {best['median_s'] * 1e6:.1f} | {100 * best['fraction_of_probe']:.1f}% | "
                     f"{r['numpy_s'] / best['median_s']:.2f} | {torch_cell} |")
    with open(os.path.join(out_dir, "views-cpu-compared.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def interleaved(out_dir, log2n=26, rounds=15):
    """Every library's calls on one shape in the same rounds (see the module's text)."""
    try:
        import xreduce
    except ImportError:
        return
    n = 1 << log2n
    backends = [b.name for b in xreduce.backends() if b.available and b.name in ("openmp", "tbb")]
    rows = []
    for name, a, axes in views(log2n, whole=True):
        calls = {"numpy": lambda: a.sum(axis=axes)}
        if torch is not None:
            ta = torch.from_numpy(a)
            calls["torch"] = (lambda: torch.sum(ta)) if axes is None else (lambda: torch.sum(ta, dim=axes))
        for b in backends:
            calls[f"xreduce {b}"] = lambda b=b: xreduce.sum(a, axis=axes, backend=b)
        samples = {who: [] for who in calls}
        for call in calls.values():
            call()  # a first call of each: pages, threads
        for r in range(rounds):
            order = list(calls)
            order = order[r % len(order):] + order[:r % len(order)]
            for who in order:
                start = time.perf_counter()
                calls[who]()
                samples[who].append(time.perf_counter() - start)
        rows.append({"array": name, "median_s": {who: statistics.median(t) for who, t in samples.items()}, "times_s": samples})
    whole = rows[0]["median_s"]
    ours = [f"xreduce {b}" for b in backends]
    when = f"{time.strftime('%Y-%m-%d')}, commit {os.environ.get('XREDUCE_COMMIT', 'unknown')}"
    lines = [f"# Axis sums on the CPU: xreduce, numpy and torch in the same rounds ({when})\n",
             f"f32 host data, 2^{log2n} elements, {os.cpu_count()} CPUs; numpy {numpy.__version__}"
             + (f", torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch is not None else "")
             + f". Median of {rounds} rounds, each round one call of every library in turn (the order rotated). xreduce: the "
             "faster of its parallel CPU backends for each shape; its rate as a share of its own sum of the whole array (the "
             "same bytes as one run), and the other libraries' times over its time: above 1, xreduce is faster.\n",
             "| array, axes | xreduce backend | xreduce us | share of the whole array's rate | numpy / xreduce | torch / xreduce |",
             "|---|---|---:|---:|---:|---:|"]
    best_whole = min(whole[b] for b in ours)
    for r in rows:
        m = r["median_s"]
        best = min(ours, key=lambda b: m[b])
        torch_cell = f"{m['torch'] / m[best]:.2f}" if "torch" in m else "not run"
        lines.append(f"| {r['array']} | {best.split()[1]} | {m[best] * 1e6:.1f} | {100 * best_whole / m[best]:.1f}% | "
                     f"{m['numpy'] / m[best]:.2f} | {torch_cell} |")
    with open(os.path.join(out_dir, "views-cpu-interleaved.json"), "w") as f:
        json.dump({"suite": "views-cpu-interleaved", "date": time.strftime("%Y-%m-%d"), "commit": os.environ.get("XREDUCE_COMMIT", "unknown"), "n": n, "rounds": rounds, "xreduce": xreduce.__version__, "rows": rows}, f, indent=1)
    with open(os.path.join(out_dir, "views-cpu-interleaved.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 26)
    interleaved(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 26)
