"""numpy's statistics over the `statistics` suite's data shape (2^27 f32, normal(3, 2)) on this
host, next to the suite's results: numpy.mean, var, std, linalg.norm, nanmean, nanvar, nansum,
nanmax, nanargmax, count_nonzero and a two-pass logsumexp (numpy has none of its own), median
of 5 calls each. Run in the same device session as the suite, after it; reads OUT_DIR/statistics.json
and writes statistics-numpy.{json,md} beside it, with each op's time over xreduce's (openmp) in
that run.

    python3 bench/python/bench_statistics_numpy.py OUT_DIR
"""
import json
import statistics
import sys
import time

import numpy


def seconds_per_call(call, repeat=5):
    call()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), samples


def logsumexp(x):
    m = numpy.max(x)
    return m + numpy.log(numpy.sum(numpy.exp(x - m)))


def main(out_dir):
    with open(f"{out_dir}/statistics.json") as f:
        suite = json.load(f)
    n = suite["n"]
    x = numpy.random.default_rng(36).normal(3.0, 2.0, n).astype(numpy.float32)
    ours = {(r["op"], r["backend"]): r["median_s"] for r in suite["rows"] if r.get("accuracy") == "standard"}
    cases = [("mean", "numpy.mean", lambda: numpy.mean(x)), ("var", "numpy.var", lambda: numpy.var(x)),
             ("std", "numpy.std", lambda: numpy.std(x)), ("norm2", "numpy.linalg.norm", lambda: numpy.linalg.norm(x)),
             ("logsumexp", "max, then log(sum(exp(x - max)))", lambda: logsumexp(x)),
             ("count_nonzero", "numpy.count_nonzero", lambda: numpy.count_nonzero(x)),
             ("nansum", "numpy.nansum", lambda: numpy.nansum(x)), ("nanmean", "numpy.nanmean", lambda: numpy.nanmean(x)),
             ("nanvar", "numpy.nanvar", lambda: numpy.nanvar(x)), ("nanmax", "numpy.nanmax", lambda: numpy.nanmax(x)),
             ("nanargmax", "numpy.nanargmax", lambda: numpy.nanargmax(x))]
    lines = ["# numpy's statistics beside xreduce's, host data\n",
             f"numpy {numpy.__version__}, 2^{n.bit_length() - 1} f32 (the `statistics` suite's data), median of 5 calls; "
             "xreduce's times are the suite's (openmp, all threads) from the same session.\n",
             "| op | numpy | numpy, ms | xreduce openmp, ms | numpy / xreduce |", "|---|---|---:|---:|---:|"]
    rows = []
    for op, what, call in cases:
        t, samples = seconds_per_call(call)
        mine = ours.get((op, "openmp"))
        rows.append({"op": op, "numpy": what, "n": n, "median_s": t, "times_s": samples, "xreduce_openmp_s": mine,
                     "numpy_over_xreduce": t / mine if mine else None})
        lines.append(f"| {op} | `{what}` | {t * 1e3:.1f} | " + (f"{mine * 1e3:.2f} | {t / mine:.1f}x |" if mine else "- | - |"))
    with open(f"{out_dir}/statistics-numpy.json", "w") as f:
        json.dump({"suite": "statistics-numpy", "numpy": numpy.__version__, "rows": rows}, f, indent=1)
    with open(f"{out_dir}/statistics-numpy.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
