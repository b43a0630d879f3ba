"""axis= and keepdims= (numpy's semantics) over N-D arrays and views of them read in place
(transposes, slices, negative steps), every result checked on its own against the exact
reference of the elements it reduces (reference.py), never against numpy's arithmetic: numpy
gives only the expected shape."""

import math
from types import SimpleNamespace

import numpy
import pytest
import xreduce
from conftest import host_backends
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import exact_sum
from test_reduce import check, draw

OPS = ["sum", "prod", "min", "max", "argmin", "argmax"]
WIDE = ["float32", "float64", "int32", "int64", "uint32"]
NARROW = ["float16", "int16", "uint8"]  # drawn and checked as test_dtypes does


def draw_any(rng, dtype, n, op):
    if dtype in WIDE:
        return draw(rng, dtype, n, op)
    import test_dtypes

    return test_dtypes.draw(rng, dtype, n, op)


def check_row(row, op, result, exact):
    """One result of op over `row` (an argmin/argmax result is the index) against its reference."""
    index = result if op in ("argmin", "argmax") else None
    if row.dtype.name in WIDE:
        if exact:
            want = exact_sum(row)
            assert result == want or (math.isnan(want) and math.isnan(result))
            assert math.isnan(want) or math.copysign(1, result) == math.copysign(1, want)
        else:
            check(row, op, None if index is not None else result, index)
        return
    import test_dtypes

    name = row.dtype.name
    if exact:
        want = test_dtypes.exact_sum(row, name)
        assert result == want and math.copysign(1, result) == math.copysign(1, want), (result, want)
    else:
        test_dtypes.check(SimpleNamespace(value=result, index=index), row, name, op)


@st.composite
def strided_views(draw_st):
    """(view, axis, keepdims): an array of rank 1 to 4 seen through a permutation of its axes and a
    step of +-1 or +-2 along each, and numpy's axis over the view (None, an int, a tuple, negative
    from the end)."""
    rank = draw_st(st.integers(1, 4))
    steps = [draw_st(st.sampled_from([1, 2, -1, -2])) for _ in range(rank)]
    extents = [draw_st(st.integers(1, 7)) for _ in range(rank)]
    perm = draw_st(st.permutations(range(rank)))
    dtype = draw_st(st.sampled_from(WIDE + NARROW))
    op = draw_st(st.sampled_from(OPS))
    seed = draw_st(st.integers(0, 2**32 - 1))
    base_shape = [extents[d] * abs(steps[d]) for d in range(rank)]
    base = draw_any(numpy.random.default_rng(seed), dtype, int(numpy.prod(base_shape)), op).reshape(base_shape)
    view = base[tuple(slice(None, None, s) for s in steps)].transpose(perm)
    single = st.integers(-rank, rank - 1)
    several = st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True).map(
        lambda axes: tuple(a - rank if k % 2 else a for k, a in enumerate(axes))
    )
    axis = draw_st(st.one_of(st.none(), single, several))
    return view, op, axis, draw_st(st.booleans())


def rows_of(view, axis):
    """The view's elements as rows, one per result in C order of the kept axes, each row the
    reduced axes' elements flattened in C order (as numpy's argmax(axis=...) counts them)."""
    rank = view.ndim
    axes = tuple(range(rank)) if axis is None else tuple(a % rank for a in (axis if isinstance(axis, tuple) else (axis,)))
    kept = [d for d in range(rank) if d not in axes]
    moved = numpy.transpose(view, kept + sorted(axes))
    return moved.reshape([view.shape[d] for d in kept] + [-1])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=strided_views(), exact=st.booleans())
def test_axes_of_strided_views_against_each_rows_reference(case, exact):
    view, op, axis, keepdims = case
    floating = view.dtype.kind == "f"
    exact = exact and floating and op == "sum"
    got = getattr(xreduce, op)(view, axis=axis, keepdims=keepdims, accuracy="exact" if exact else None)
    shape = numpy.sum(numpy.zeros(view.shape), axis=axis, keepdims=keepdims).shape  # the shape alone, from numpy
    rows = rows_of(view, axis)
    if shape == ():
        assert not isinstance(got, numpy.ndarray)
        results = numpy.array([got])
    else:
        assert isinstance(got, numpy.ndarray) and got.shape == shape
        if op in ("argmin", "argmax"):
            assert got.dtype == numpy.int64
        results = got.reshape(-1)
    flat_rows = rows.reshape(-1, rows.shape[-1])
    assert len(results) == len(flat_rows)
    for result, row in zip(results.tolist(), flat_rows):
        check_row(row, op, result, exact)


@pytest.mark.parametrize("backend", ["auto", *host_backends()])
def test_every_host_backend_reads_axes_in_place(rng, backend):
    # Columns, rows, a middle axis and a reversed transpose of a 3-D array, on each backend.
    x = rng.standard_normal((13, 17, 19)).astype(numpy.float32)
    for view, axis in ((x, 0), (x, -1), (x, 1), (x[::-1].transpose(2, 0, 1), (0, 2)), (x[:, ::2, 1:], (1, 2))):
        try:
            got = xreduce.sum(view, axis=axis, backend=backend, accuracy="exact")
        except xreduce.Error as e:  # a backend without strided views refuses them, never "auto"
            assert backend != "auto" and e.code == "unsupported"
            continue
        rows = rows_of(view, axis)
        for result, row in zip(got.reshape(-1).tolist(), rows.reshape(-1, rows.shape[-1])):
            assert result == exact_sum(row)


def test_keepdims_and_whole_array_results(rng):
    x = rng.random((4, 5, 6))
    assert isinstance(xreduce.sum(x), float) and isinstance(xreduce.argmax(x.T), int)
    assert xreduce.argmax(x.T) == int(numpy.argmax(x.T))  # into the view flattened in C order
    kept = xreduce.max(x, keepdims=True)
    assert kept.shape == (1, 1, 1) and kept[0, 0, 0] == x.max()
    assert xreduce.min(x, axis=(0, -1), keepdims=True).shape == (1, 5, 1)
    r = xreduce.reduce(x, "argmin", axis=1)
    assert r.value.shape == (4, 6) and r.indices.shape == (4, 6) and r.index is None
    assert xreduce.sum(numpy.float64(2.5) * numpy.ones(())) == 2.5  # a 0-d array: one element


def test_results_keep_the_narrow_float_types(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rng.random((6, 9)).astype(numpy.float16)
    assert xreduce.max(x, axis=0).dtype == numpy.float16
    assert xreduce.sum(x, axis=1, dtype="float64").dtype == numpy.float64
    b = rng.random((6, 9)).astype(ml_dtypes.bfloat16)
    top = xreduce.max(b, axis=1)
    assert top.dtype == ml_dtypes.bfloat16
    assert top.astype(numpy.float64).tolist() == b.astype(numpy.float64).max(axis=1).tolist()


@pytest.mark.parametrize(
    "axis, error, message",
    [
        (3, ValueError, "out of bounds"),
        (-4, ValueError, "out of bounds"),
        ((0, 0), ValueError, "named twice"),
        ((1, -2), ValueError, "named twice"),
        ((), ValueError, "reduces no axis"),
        ("0", TypeError, "axis must be"),
        (1.0, TypeError, "axis must be"),
        (True, TypeError, "axis must be"),
    ],
)
def test_bad_axes_say_why(axis, error, message):
    with pytest.raises(error, match=message):
        xreduce.sum(numpy.ones((2, 3, 4)), axis=axis)


def test_axis_does_not_mix_with_width_or_validate():
    x = numpy.ones((4, 6))
    with pytest.raises(ValueError, match="axis= instead"):
        xreduce.sum(x, axis=0, width=2)
    with pytest.raises(ValueError, match="reducing calls"):
        xreduce.validate(x, "sum", axis=0)


def test_torch_tensors_get_tensors_back():
    torch = pytest.importorskip("torch")
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    got = xreduce.sum(x.transpose(0, 2), axis=1, accuracy="exact")
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (4, 2)
    assert got.tolist() == x.transpose(0, 2).to(torch.float64).sum(dim=1).tolist()
    assert isinstance(xreduce.argmax(x, axis=-1), torch.Tensor)
