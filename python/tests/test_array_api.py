"""array_api_strict, the Array API's reference implementation, as a second reference for the
signatures: sum, prod, min, max (axis an int, a tuple or None; keepdims) and argmin, argmax (axis
an int or None; keepdims) over random shapes, on the same data. Each result must have the shape
and the dtype the standard gives (the default integer types for sums and products of integers),
and the same values: exact for extremes, indices and integers; within the stated bound for float
sums and products."""

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import xreduce

xp = pytest.importorskip("array_api_strict")

DTYPES = ["float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@st.composite
def arrays(draw, op):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    dtype = numpy.dtype(draw(st.sampled_from(DTYPES)))
    rng = numpy.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype.kind == "f":  # products near 1, so that they stay finite and their bound is meaningful
        x = rng.uniform(0.5, 1.5, shape) if op == "prod" else rng.uniform(-8, 8, shape)
    else:
        info = numpy.iinfo(dtype)
        x = rng.integers(max(info.min, -3), min(info.max, 3), shape, endpoint=True)
    return x.astype(dtype)


def axes_of(draw, rank, several):
    if several:
        return draw(st.one_of(st.none(), st.integers(-rank, rank - 1),
                              st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True).map(tuple)))
    return draw(st.one_of(st.none(), st.integers(-rank, rank - 1)))


def check(got, want, x, op, axis, keepdims):
    """`got` (xreduce's) against `want` (array_api_strict's): its shape and dtype; its values
    exactly, or for float sums and products within the stated bound of numpy's float64 result."""
    want = numpy.asarray(want)
    if isinstance(got, numpy.ndarray):
        assert got.shape == want.shape
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    else:  # a whole-array reduction without keepdims: a Python number, of the kind of the dtype
        assert want.shape == ()
        assert isinstance(got, int if want.dtype.kind in "iu" else float)
    got = numpy.asarray(got, dtype=want.dtype)
    if want.dtype.kind != "f" or op in ("min", "max", "argmin", "argmax"):
        assert numpy.array_equal(got, want)
        return
    eps = float(numpy.finfo(x.dtype).eps)
    wide = x.astype(numpy.float64)
    exact = getattr(numpy, op)(wide, axis=axis, keepdims=keepdims)
    if op == "sum":  # the stated bounds (docs/semantics.md)
        bound = 64 * eps * numpy.abs(wide).sum(axis=axis, keepdims=keepdims)
    else:
        bound = (x.size // max(exact.size, 1) + 64) * eps * numpy.abs(exact)
    assert numpy.all(numpy.abs(got.astype(numpy.float64) - exact) <= bound)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "argmin", "argmax"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_reductions_match_the_array_api(op, data):
    x = data.draw(arrays(op))
    # argmin and argmax take one axis or None in the standard; the others a tuple too
    axis = axes_of(data.draw, x.ndim, several=op not in ("argmin", "argmax"))
    keepdims = data.draw(st.booleans())
    got = getattr(xreduce, op)(x, axis=axis, keepdims=keepdims)
    want = getattr(xp, op)(xp.asarray(x), axis=axis, keepdims=keepdims)
    check(got, want, x, op, axis, keepdims)
