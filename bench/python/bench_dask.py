#!/usr/bin/env python3
"""xreduce.dask against dask's own reductions on one LocalCluster, in the same run.

    python bench/python/bench_dask.py OUT_PREFIX [--log2n 30] [--workers 4] [--threads 4] [--commit C]
    python bench/python/bench_dask.py --plot OUT_PREFIX.json   # OUT_PREFIX.png from the results

writes OUT_PREFIX.json and OUT_PREFIX.md (and the plot where matplotlib is installed):

- Rates: a float32 array of 2^log2n uniform [0, 1) values, chunks of 2^24, generated on the
  workers and held there (persist); each reduction's wall time from the call to the value on the
  client, median of 9 rounds after one warm-up, each round calling every case of one op once
  (the sums' rounds, then the variances'; --interleave all mixes them): dask's
  x.sum() and x.var() against xreduce.dask.sum, var, and sum and var with accuracy="exact"; and
  dask's x.sum(split_every=16), the tree xreduce.dask uses for a reduction to one result.
  xreduce reduces each chunk with threads=1 (Dask runs one task per worker thread).
- Chunkings: one float32 array of 2^24 normal values summed in five chunkings by dask's own
  sum and by xreduce.dask.sum(accuracy="exact"): how many distinct bit patterns each gives.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import time
import warnings

import numpy


def measure(args):
    import dask
    import dask.array as da
    import distributed
    import xreduce
    import xreduce.dask as xd

    out = {"date": datetime.date.today().isoformat(), "commit": args.commit, "host": platform.node(),
           "cpus": os.cpu_count(), "workers": args.workers, "threads_per_worker": args.threads,
           "dask": dask.__version__, "xreduce": xreduce.__version__, "n": 1 << args.log2n, "chunk": 1 << 24, "repeat": args.repeat, "interleave": args.interleave, "rows": []}
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                                  dashboard_address=None, memory_limit=0) as cluster, distributed.Client(cluster):
        x = da.random.default_rng(38).random(1 << args.log2n, chunks=1 << 24, dtype=numpy.float32).persist()
        distributed.wait(x)
        sweep = [("sum", f"xreduce {b}", lambda b=b: xd.sum(x, backend=b).compute()) for b in args.sweep.split(",") if b]
        cases = [
            ("sum", "dask", lambda: x.sum().compute()),
            ("sum", "dask, split_every=16", lambda: x.sum(split_every=16).compute()),  # xreduce.dask's tree for one result
            ("sum", "xreduce", lambda: xd.sum(x).compute()),
            *sweep,
            ("sum", "xreduce exact", lambda: xd.sum(x, accuracy="exact").compute()),
            ("var", "dask", lambda: x.var().compute()),
            ("var", "xreduce", lambda: xd.var(x).compute()),
            ("var", "xreduce exact", lambda: xd.var(x, accuracy="exact").compute()),
        ]
        # Interleaved: each round calls every case of one op once, so that a drift of the machine
        # reaches all alike (--interleave all: every case of every op in each round).
        values = [float(call()) for _, _, call in cases]  # and a warm-up
        samples = [[] for _ in cases]
        groups = [list(range(len(cases)))] if args.interleave == "all" else \
            [[i for i, c in enumerate(cases) if c[0] == op] for op in dict.fromkeys(c[0] for c in cases)]
        for group in groups:
            for _ in range(args.repeat):
                for i in group:
                    start = time.perf_counter()
                    cases[i][2]()
                    samples[i].append(time.perf_counter() - start)
        for (op, who, _), times, value in zip(cases, samples, values):
            median = statistics.median(times)
            row = {"op": op, "who": who, "median_s": median, "samples_s": times, "gb_per_s": 4 * out["n"] / median / 1e9, "value": value}
            out["rows"].append(row)
            print(f"{op:4} {who:14} {median * 1e3:9.1f} ms {row['gb_per_s']:7.2f} GB/s  {value!r}", flush=True)
        plain = {r["op"]: r["median_s"] for r in out["rows"] if r["who"] == "dask"}
        for r in out["rows"]:
            r["over_dask"] = r["median_s"] / plain[r["op"]]
        del x

        # The same array summed in five chunkings: dask's bits move with the chunks, the exact sum's do not.
        n = 1 << 24
        data = numpy.random.default_rng(39).standard_normal(n).astype(numpy.float32)
        with warnings.catch_warnings():  # one graph of 64 MiB, sent once
            warnings.simplefilter("ignore", UserWarning)
            whole = da.from_array(data, chunks=n).persist()
        chunkings = [n, 1 << 20, 1_000_000, 531_441, 65_536]
        table = []
        for c in chunkings:
            y = whole.rechunk(c).persist()  # the same values, cut otherwise, on the workers
            own, exact = y.sum().compute(), xd.sum(y, accuracy="exact").compute()
            table.append({"chunks": c, "dask_sum": float(own), "dask_bits": f"{numpy.float32(own).view(numpy.uint32):08x}",
                          "exact_sum": float(exact), "exact_bits": f"{numpy.float32(exact).view(numpy.uint32):08x}"})
            print(f"chunks {c:>9}: dask {own!r:>14} xreduce exact {exact!r:>14}", flush=True)
        out["chunkings"] = {"n": n, "rows": table, "dask_distinct": len({r["dask_bits"] for r in table}),
                            "exact_distinct": len({r["exact_bits"] for r in table})}
    return out


def markdown(out):
    lines = [f"# xreduce.dask against dask ({out['date']}, commit {out['commit']}, {out['host']})", "",
             f"LocalCluster of {out['workers']} worker processes x {out['threads_per_worker']} threads on a "
             f"{out['cpus']}-CPU host; dask {out['dask']}. 2^{out['n'].bit_length() - 1} float32 values, uniform "
             f"[0, 1), chunks of 2^24, held on the workers; median of {out['repeat']} rounds (interleaved by {out['interleave']}), wall time to the value on the client.", "",
             "| op | who | median | GB/s | time / dask's |", "|---|---|---:|---:|---:|"]
    for r in out["rows"]:
        lines.append(f"| {r['op']} | {r['who']} | {r['median_s'] * 1e3:.1f} ms | {r['gb_per_s']:.2f} | {r['over_dask']:.2f} |")
    c = out["chunkings"]
    lines += ["", f"One array of 2^{c['n'].bit_length() - 1} float32 normal values summed in five chunkings: dask's "
              f"own sum gives {c['dask_distinct']} distinct bit patterns, xreduce.dask's exact sum {c['exact_distinct']}.", "",
              "| chunk size | dask x.sum() | bits | xreduce.dask.sum(accuracy=\"exact\") | bits |", "|---:|---:|---|---:|---|"]
    for r in c["rows"]:
        lines.append(f"| {r['chunks']} | {r['dask_sum']!r} | {r['dask_bits']} | {r['exact_sum']!r} | {r['exact_bits']} |")
    return "\n".join(lines) + "\n"


def plot(json_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(json_path) as f:
        out = json.load(f)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r['op']}\n{r['who']}" for r in out["rows"]]
    colours = ["#888888" if r["who"].startswith("dask") else "#1f77b4" if r["who"] == "xreduce" else "#d62728" for r in out["rows"]]
    ax.bar(range(len(labels)), [r["gb_per_s"] for r in out["rows"]], color=colours)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel("GB/s (4 bytes an element)")
    ax.set_title(f"2^{out['n'].bit_length() - 1} f32 on a LocalCluster {out['workers']}x{out['threads_per_worker']} "
                 f"({out['host']}, {out['date']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(json_path[: -len(".json")] + ".png", dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="OUT_PREFIX (or, with --plot, the json)")
    parser.add_argument("--plot", action="store_true", help="draw OUT_PREFIX.png from a results json")
    parser.add_argument("--log2n", type=int, default=30)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=9, help="rounds of calls (the median is reported)")
    parser.add_argument("--sweep", default="", help="backends (comma-separated) whose sum each chunk also runs on, named")
    parser.add_argument("--interleave", choices=["op", "all"], default="op",
                        help="op: the rounds of each op's cases, one op after the other; all: every case in each round")
    parser.add_argument("--commit", default="unknown")
    args = parser.parse_args()
    if args.plot:
        plot(args.out)
        return
    out = measure(args)
    with open(args.out + ".json", "w") as f:
        json.dump(out, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(markdown(out))
    try:
        plot(args.out + ".json")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
