#!/usr/bin/env python3
"""xreduce through Python against numpy, PyTorch and CuPy on the same arrays, in the same run.

    python bench/python/bench_python.py OUT_PREFIX [--commit C] [--max-log2n 30]

writes OUT_PREFIX.json, OUT_PREFIX.md and OUT_PREFIX.png. Every time is the median over batches of
back-to-back calls (20 ms of warm-up, batches of at least 20 ms sized from the fastest of three
calls), the way the library's own timing helper measures. f32 sums throughout:

- call overhead: 1,000 host elements, xreduce.sum against numpy.sum;
- host arrays 2^20 .. 2^30: numpy.sum, torch.sum on the CPU (all threads), xreduce.sum;
- device arrays 2^20 .. 2^28 (PyTorch tensors, and CuPy arrays): torch.sum and cupy.sum queued
  (calls that return without waiting; the batch ends with one synchronisation) and with .item()
  (each value read on the host), and xreduce.sum (which returns the value, so waits each time).

"xreduce (C++)" is Result.seconds of the same calls: the library's reduce() alone, timed inside the
extension, so that the binding's own cost is the difference.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import time

import numpy
import xreduce

try:
    import torch
except ImportError:
    torch = None
try:
    import cupy
except ImportError:
    cupy = None


def measure(call, sync=lambda: None, seconds_of=None, batches=7):
    """Median over batches of the seconds per call of `call`; with `seconds_of`, also the median over
    the same batches of the mean of what it returns (the time the call reports for itself)."""

    def batch(k):
        inner = 0.0
        start = time.perf_counter()
        for _ in range(k):
            result = call()
            if seconds_of:
                inner += seconds_of(result)
        sync()
        return (time.perf_counter() - start) / k, inner / k

    start = time.perf_counter()
    while time.perf_counter() - start < 0.02:  # warm-up
        batch(1)
    fastest = min(batch(1)[0] for _ in range(3))
    k = max(1, min(100_000, int(0.02 / max(fastest, 1e-9))))
    results = [batch(k) for _ in range(batches if fastest < 0.5 else 3)]
    return statistics.median(r[0] for r in results), (statistics.median(r[1] for r in results) if seconds_of else None)


def machine():
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out = {"cpu": cpu, "threads": os.cpu_count(), "python": platform.python_version(), "numpy": numpy.__version__,
           "xreduce": xreduce.__version__}
    if torch is not None:
        out["torch"] = torch.__version__
        out["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            out["gpu"] = torch.cuda.get_device_name()
    if cupy is not None:
        out["cupy"] = cupy.__version__
    return out


def row(rows, case, n, contender, seconds, backend=None):
    rows.append({"case": case, "log2n": n.bit_length() - 1, "n": n, "contender": contender, "seconds": seconds,
                 "gbps": 4 * n / seconds / 1e9, **({"backend": backend} if backend else {})})


def xreduce_rows(rows, case, n, x, sync=lambda: None, label="xreduce.sum"):
    """xreduce.reduce through Python, and the library's own time inside the same calls."""
    ran = xreduce.reduce(x, "sum").backend
    python, native = measure(lambda: xreduce.reduce(x, "sum"), sync, seconds_of=lambda r: r.seconds)
    row(rows, case, n, label, python, ran)
    if label == "xreduce.sum":
        row(rows, case, n, "xreduce (C++)", native, ran)


def host_rows(rows, max_log2n):
    rng = numpy.random.default_rng(1)
    x = rng.random(1000, dtype=numpy.float32)
    row(rows, "overhead", 1000, "numpy.sum", measure(lambda: numpy.sum(x))[0])
    _, native = measure(lambda: xreduce.reduce(x, "sum"), seconds_of=lambda r: r.seconds)
    row(rows, "overhead", 1000, "xreduce.sum", measure(lambda: xreduce.sum(x))[0], xreduce.reduce(x, "sum").backend)
    row(rows, "overhead", 1000, "xreduce (C++)", native)
    for log2n in range(20, max_log2n + 1, 2 if max_log2n - 20 > 6 else 1):
        n = 1 << log2n
        x = rng.random(n, dtype=numpy.float32)
        row(rows, "host", n, "numpy.sum", measure(lambda: numpy.sum(x))[0])
        if torch is not None:
            t = torch.from_numpy(x)
            row(rows, "host", n, "torch.sum (CPU)", measure(lambda: torch.sum(t))[0])
        xreduce_rows(rows, "host", n, x)
        del x


def device_rows(rows, max_log2n):
    gpu = [b.name for b in xreduce.backends() if b.available and b.device_memory]
    if torch is None or not torch.cuda.is_available() or not gpu:
        return
    sync = torch.cuda.synchronize
    for log2n in range(20, min(max_log2n, 28) + 1, 2):
        n = 1 << log2n
        t = torch.rand(n, device="cuda", dtype=torch.float32)
        sync()
        # Queued: the sums wait in the stream and are never read. .item(): each value read on the
        # host, the contract of xreduce.sum.
        row(rows, "device", n, "torch.sum (GPU), queued", measure(lambda: torch.sum(t), sync)[0])
        row(rows, "device", n, "torch.sum(t).item()", measure(lambda: torch.sum(t).item())[0])
        xreduce_rows(rows, "device", n, t, sync)
        if cupy is not None:
            c = cupy.from_dlpack(t)
            row(rows, "device", n, "cupy.sum, queued", measure(lambda: cupy.sum(c), cupy.cuda.Device().synchronize)[0])
            row(rows, "device", n, "cupy.sum(c).item()", measure(lambda: cupy.sum(c).item())[0])
            xreduce_rows(rows, "device", n, c, label="xreduce.sum (CuPy array)")
        del t


def markdown(data):
    rows = data["rows"]
    lines = ["# xreduce through Python", "",
             "f32 sums, median seconds per call over batches of back-to-back calls. \"xreduce (C++)\" is the "
             "library's reduce() inside the same calls (Result.seconds): the binding costs the difference.", ""]
    for case, heading in (("overhead", "Call overhead, 1,000 host elements"), ("host", "Host arrays"),
                          ("device", "Device arrays (PyTorch tensors; CuPy arrays where named)")):
        chosen = [r for r in rows if r["case"] == case]
        if not chosen:
            continue
        contenders = list(dict.fromkeys(r["contender"] for r in chosen))
        lines += [f"## {heading}", "", "| N | " + " | ".join(contenders) + " | xreduce.sum's speed-up |",
                  "|---:|" + "---:|" * (len(contenders) + 1)]
        for n in sorted({r["n"] for r in chosen}):
            at = {r["contender"]: r["seconds"] for r in chosen if r["n"] == n}
            cells = [f"{at[c] * 1e6:.2f} us" if c in at and at[c] < 1e-3 else f"{at[c] * 1e3:.2f} ms" if c in at else ""
                     for c in contenders]
            mine = at.get("xreduce.sum")
            others = [f"{at[c] / mine:.2f}x over {c}" for c in contenders
                      if mine and c in at and not c.startswith("xreduce")]
            if mine and "xreduce (C++)" in at:
                others.append(f"binding {(mine / at['xreduce (C++)'] - 1) * 100:+.1f}%")
            label = f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)
            ran = sorted({r["backend"] for r in chosen if r["n"] == n and "backend" in r})
            if ran:
                others.append("ran " + ", ".join(ran))
            lines.append(f"| {label} | " + " | ".join(cells) + " | " + "; ".join(others) + " |")
        lines.append("")
    m = data["machine"]
    where = f"{m['cpu']}, {m['threads']} threads" + (f", {m['gpu']}" if "gpu" in m else "")
    versions = ", ".join(f"{k} {m[k]}" for k in ("python", "numpy", "torch", "cupy") if k in m)
    lines.append(f"_Measured {data['date']} at commit {data['commit']} on {where}; {versions}._")
    return "\n".join(lines) + "\n"


def plot(data, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = [c for c in ("host", "device") if any(r["case"] == c for r in data["rows"])]
    fig, axes = plt.subplots(1, len(cases), figsize=(6 * len(cases), 4.5), squeeze=False)
    for ax, case in zip(axes[0], cases):
        chosen = [r for r in data["rows"] if r["case"] == case]
        for contender in dict.fromkeys(r["contender"] for r in chosen):
            points = sorted((r["n"], r["gbps"]) for r in chosen if r["contender"] == contender)
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=contender,
                    linewidth=2.5 if contender == "xreduce.sum" else 1.2)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("N (f32)")
        ax.set_ylabel("GB/s")
        ax.set_title(f"{case} arrays")
        ax.legend(fontsize=8)
    fig.suptitle(f"xreduce through Python ({data['date']}, {data['commit']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="output prefix: writes OUT.json, OUT.md and OUT.png")
    parser.add_argument("--commit", default=os.environ.get("XREDUCE_COMMIT", "unknown"))
    parser.add_argument("--max-log2n", type=int, default=30, help="the largest host array, as log2 of N (default 30)")
    args = parser.parse_args()
    rows = []
    host_rows(rows, args.max_log2n)
    device_rows(rows, args.max_log2n)
    data = {"suite": "python", "date": datetime.date.today().isoformat(), "commit": args.commit,
            "machine": machine(), "rows": rows}
    with open(args.out + ".json", "w") as f:
        json.dump(data, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(markdown(data))
    try:
        plot(data, args.out + ".png")
    except ImportError:
        print("bench_python: no matplotlib here: no plot")
    print(markdown(data))


if __name__ == "__main__":
    main()
