"""The GIL is released while a reduction runs, repeated calls leak no references, and
`python -m xreduce` gives its tour."""

import subprocess
import sys
import threading
import time

import numpy
import xreduce


def test_another_thread_runs_during_a_reduction():
    x = numpy.ones(1 << 25, dtype=numpy.float64)  # 256 MiB: tens of milliseconds through the naive loop
    window = {}

    def reduce_once():
        window["start"] = time.perf_counter()
        window["result"] = xreduce.reduce(x, "sum", backend="sequential.naive")
        window["end"] = time.perf_counter()

    ticks = []
    worker = threading.Thread(target=reduce_once)
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    assert window["result"].value == float(1 << 25)
    # Ticks well inside the call: with the GIL held there would be none at all.
    margin = window["result"].seconds / 4
    inside = [t for t in ticks if window["start"] + margin < t < window["end"] - margin]
    assert window["result"].seconds > 0.004, "too short to tell"
    assert len(inside) > 100, f"{len(inside)} ticks of this thread during {window['result'].seconds:.3f} s"


def test_no_reference_leaks_over_many_calls():
    x = numpy.arange(1000, dtype=numpy.float32)
    empty = numpy.empty(0)
    before = (sys.getrefcount(x), sys.getrefcount(empty))
    for _ in range(100_000):
        xreduce.sum(x)
    for _ in range(10_000):
        r = xreduce.reduce(x, "argmax")
        try:
            xreduce.min(empty)
        except xreduce.Error:
            pass
    assert r.index == 999
    assert (sys.getrefcount(x), sys.getrefcount(empty)) == before


def test_python_dash_m_xreduce_prints_the_tour():
    done = subprocess.run([sys.executable, "-m", "xreduce"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "reference (exactly rounded)" in done.stdout and "auto picks '" in done.stdout
    for b in xreduce.backends():
        assert b.name in done.stdout
