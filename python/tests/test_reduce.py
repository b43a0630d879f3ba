"""Every op and dtype through every backend that runs here, against an exact reference."""

import math

import numpy
import pytest
import xreduce
from conftest import BACKENDS, host_backends, reduce_or_refused
from reference import exact_sum, reference

DTYPES = ["float32", "float64", "int32", "int64", "uint32", "uint64"]
OPS = ["sum", "prod", "min", "max", "argmin", "argmax"]


def draw(rng, dtype, n, op):
    dtype = numpy.dtype(dtype)
    if dtype.kind == "f":
        if op == "prod":  # near 1, so that a product of n neither overflows nor underflows
            return (1 + (rng.random(n) - 0.5) / 64).astype(dtype)
        return ((rng.random(n) - 0.5) * 2.0 ** rng.integers(-20, 20, n)).astype(dtype)
    info = numpy.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def check(x, op, result, index):
    want, want_index = reference(x, op)
    if op in ("argmin", "argmax"):
        assert index == want_index
    elif x.dtype.kind != "f" or op in ("min", "max"):
        assert result == want or (math.isnan(want) and math.isnan(result))
    elif op == "sum":
        eps = numpy.finfo(x.dtype).eps
        assert abs(result - want) <= 64 * eps * float(numpy.abs(x.astype(numpy.float64)).sum())
    else:
        eps = numpy.finfo(x.dtype).eps
        assert abs(result - want) <= (x.size + 64) * eps * abs(want)


@pytest.mark.parametrize("backend", ["auto", *host_backends()])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_every_op_and_dtype(rng, backend, dtype, op):
    for n in (1, 7, 1000, int(rng.integers(1, 1 << 17))):
        x = draw(rng, dtype, n if op != "prod" else min(n, 300), op)
        r = reduce_or_refused(x, op, backend)
        if r is None:
            continue
        check(x, op, r.value, r.index)
        # The per-op function returns the value, or the index for argmin/argmax: held to the
        # reference, not to the first call's bits (hybrid's split follows the run, so its float
        # sums may differ in the last bits from call to call: docs/dispatch.md).
        short = getattr(xreduce, op)(x, backend=backend)
        if op in ("argmin", "argmax"):
            check(x, op, r.value, short)
        else:
            check(x, op, short, None)


@pytest.mark.parametrize("backend", host_backends(exact=True))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exact_sums_are_the_exactly_rounded_sum(rng, backend, dtype):
    for n in (0, 1, 100, int(rng.integers(1, 1 << 16))):
        # Wide exponents and cancellation: the cases a floating sum gets wrong.
        big = numpy.float64(2.0 ** int(rng.integers(20, 60)))
        x = ((rng.random(n) - 0.5) * 2.0 ** rng.integers(-40, 40, n)).astype(dtype)
        if n >= 3:
            x[0], x[1] = big, -big
        got = xreduce.sum(x, backend=backend, accuracy="exact")
        want = exact_sum(x)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (got, want)


def test_result_types_follow_the_library(rng):
    assert type(xreduce.sum(numpy.ones(3, dtype=numpy.float32))) is float
    assert xreduce.sum(numpy.array([2**62, 2**62, 2**62], dtype=numpy.int64)) == (3 * 2**62) % 2**64 - 2**64  # wraps
    assert xreduce.sum(numpy.array([2**64 - 1, 2], dtype=numpy.uint64)) == 1
    assert xreduce.prod(numpy.array([], dtype=numpy.float64)) == 1.0
    assert xreduce.sum(numpy.array([], dtype=numpy.int32)) == 0
    assert math.isnan(xreduce.max(numpy.array([1.0, math.nan, 3.0])))
    assert xreduce.argmin(numpy.array([3.0, 1.0, 1.0, math.nan, math.nan])) == 3  # the first NaN wins
    assert xreduce.argmax(numpy.array([5, 9, 9, 2], dtype=numpy.int32)) == 1  # the lowest index on ties


@pytest.mark.parametrize("backend", ["auto", *host_backends()])
def test_records_reduce_columns(rng, backend):
    x = rng.random((10007, 3))
    for op, expected in (("sum", x.sum(axis=0)), ("min", x.min(axis=0)), ("max", x.max(axis=0))):
        if backend != "auto" and not BACKENDS[backend].records:
            with pytest.raises(xreduce.Error) as e:  # a backend that does not declare records says so
                xreduce.reduce(x, op, width=3, backend=backend)
            assert e.value.code == "unsupported"
            continue
        got = xreduce.reduce(x, op, width=3, backend=backend)
        assert isinstance(got.value, list) and len(got.value) == 3
        if op == "sum":
            for c in range(3):
                assert got.value[c] == exact_sum(x[:, c]) or abs(got.value[c] - expected[c]) <= 64 * 2**-52 * 10007
        else:
            assert got.value == expected.tolist()
    if backend == "auto" or BACKENDS[backend].records:  # the row of each column's extreme, the first on ties
        ties = rng.integers(0, 3, size=(1001, 4)).astype(numpy.int64)
        if backend != "auto" and BACKENDS[backend].engine not in ("cpu-serial", "cpu-parallel"):
            # The GPU's records are sums, products, minima and maxima (docs/cuda.md, and hybrid's
            # GPU part): argmin and argmax of records are refused there, and say so.
            for arg in (xreduce.argmax, xreduce.argmin):
                with pytest.raises(xreduce.Error) as e:
                    arg(ties, width=4, backend=backend)
                assert e.value.code == "unsupported"
            return
        assert xreduce.argmax(ties, width=4, backend=backend) == ties.argmax(axis=0).tolist()
        assert xreduce.argmin(ties, width=4, backend=backend) == ties.argmin(axis=0).tolist()


def test_threads_and_settings_reach_the_backend(rng):
    x = rng.random(1 << 18)
    want = exact_sum(x)
    for threads in (1, 2, 3):
        assert xreduce.sum(x, backend="openmp", threads=threads, accuracy="exact") == want
    with pytest.raises(xreduce.Error) as e:
        xreduce.sum(x, backend="sequential", settings={"no_such_key": "1"})
    assert e.value.code == "invalid_argument" and "no_such_key" in str(e.value)
