"""`python -m xreduce`: a tour of what this installation does, as the `xreduce` command's own
tour: the backends here, one sum of 2^24 random float32 through each of them against the exact
reference, what `auto` picks, and where to go next. Exits 1 if a backend that promises the
semantics disagreed."""

import sys
import time


def main() -> int:
    import numpy

    import xreduce

    print(f"xreduce {xreduce.__version__}: reductions on the best engine for the call\n")
    print("backends:")
    for b in xreduce.backends():
        state = "available" if b.available else f"unavailable: {b.reason}"
        print(f"  {b.name:<22} {b.engine:<13} {state}")
    x = numpy.random.default_rng(1).random(1 << 24, dtype=numpy.float32)
    report = xreduce.validate(x, "sum")
    print(f"\nsum of 2^24 random float32 (seed 1), each available backend, best of 3 calls:")
    print(f"  reference (exactly rounded): {report.reference!r}")
    for row in report.rows:
        if not row.ran:
            if row.code != "unavailable":
                print(f"  {row.backend:<22} {row.failure}")
            continue
        best = row.seconds
        for _ in range(2):
            start = time.perf_counter()
            xreduce.sum(x, backend=row.backend)
            best = min(best, time.perf_counter() - start)
        agrees = "yes" if row.agrees else ("NO" if row.promises else "no (declares itself inexact)")
        print(f"  {row.backend:<22} {row.value!r:<14} agrees={agrees:<4} {best * 1e3:8.3f} ms {x.nbytes / best / 1e9:7.1f} GB/s")
    chosen = xreduce.reduce(x, "sum")
    print(f"\nauto picks '{chosen.backend}' here")
    print("\nNext: help(xreduce.sum), xreduce.backends(), xreduce.config; the command: xreduce --help")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
