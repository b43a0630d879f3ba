#!/usr/bin/env python3
"""`auto` against the CPU backends it chooses between, one process per call, interleaved: what a
user timing `xreduce run` sees. Each round runs `xreduce run --op sum --dtype f32 --n N --repeat 30
--json` once per backend (openmp, tbb, auto; the order reversed every other round); prints the
median over the rounds of each process's median, the range, and the ratios to openmp.

Usage: auto_against_named.py [N (default 2^24)] [ROUNDS (default 15)] [XREDUCE (default build/release/bin/xreduce)]
"""
import json
import statistics
import subprocess
import sys

BACKENDS = ("openmp", "tbb", "auto")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 24
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    xreduce = sys.argv[3] if len(sys.argv) > 3 else "build/release/bin/xreduce"
    times = {b: [] for b in BACKENDS}
    picked = set()
    for r in range(rounds):
        for b in BACKENDS if r % 2 == 0 else reversed(BACKENDS):
            out = subprocess.run([xreduce, "run", "--backend", b, "--op", "sum", "--dtype", "f32", "--n", str(n),
                                  "--repeat", "30", "--json"], capture_output=True, text=True, check=True).stdout
            d = json.loads(out)
            times[b].append(d["seconds"] * 1e3)
            if b == "auto":
                picked.add(d["backend"])
    for b, v in times.items():
        print(f"{b:7s} median {statistics.median(v):.3f} ms  range {min(v):.3f}-{max(v):.3f}")
    print("auto picked", ", ".join(sorted(picked)))
    median = {b: statistics.median(v) for b, v in times.items()}
    print(f"tbb/openmp {median['tbb'] / median['openmp']:.3f} auto/openmp {median['auto'] / median['openmp']:.3f}")


if __name__ == "__main__":
    main()
