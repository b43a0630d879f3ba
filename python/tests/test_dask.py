"""xreduce.dask on a LocalCluster of two worker processes: every op over random N-D arrays in
random chunkings (one chunk, uneven chunks, chunks of one element, N-D chunk grids), against
references in Python's own arithmetic. Exact results are compared bit for bit with the exact
value rounded once, and with each other across chunkings; standard results within their bounds;
indices exactly (the lowest among equal extremes, the first NaN)."""

import math
from fractions import Fraction

import numpy
import pytest
import xreduce
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import exact_sum, round_to
from test_statistics import exact_moments, sqrt_rounded

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import xreduce.dask as xd  # noqa: E402 - after the skip: needs dask

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module", autouse=True)
def cluster():
    """Two worker processes of one thread: partials cross between processes."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        yield client


@st.composite
def chunked(draw, max_ndim=3, max_extent=9):
    """(shape, chunks): an N-D shape and a chunking of each axis into uneven pieces."""
    ndim = draw(st.integers(1, max_ndim))
    shape = tuple(draw(st.integers(1, max_extent)) for _ in range(ndim))
    chunks = []
    for extent in shape:
        cuts = sorted(draw(st.sets(st.integers(1, extent - 1), max_size=extent - 1))) if extent > 1 else []
        edges = [0, *cuts, extent]
        chunks.append(tuple(b - a for a, b in zip(edges, edges[1:])))
    return shape, tuple(chunks)


def axis_of(draw, ndim):
    """None, an int (negative too) or a tuple of distinct axes."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    return tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)))


def wide_values(rng, shape, dtype):
    """Random signs and exponents over a wide range: where a float sum's rounding shows."""
    span = 60 if dtype == numpy.float32 else 300
    return (rng.standard_normal(shape) * numpy.exp2(rng.integers(-span, span, shape))).astype(dtype)


def slices(x, axis):
    """Each result's slice of x (axis reduced), in C order of the kept axes, as flat arrays."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(sorted(a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)))
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = numpy.moveaxis(x, kept, range(len(kept)))
    return moved.reshape(math.prod(x.shape[a] for a in kept), -1), tuple(x.shape[a] for a in kept)


def bits(a):
    a = numpy.ascontiguousarray(a)
    return a.view(numpy.uint32 if a.dtype.itemsize == 4 else numpy.uint64).tobytes()


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([numpy.float32, numpy.float64]))
def test_exact_sum_is_the_same_bits_for_every_chunking(data, dtype, rng):
    shape, chunks = data.draw(chunked())
    axis = axis_of(data.draw, len(shape))
    x = wide_values(rng, shape, dtype)
    rows, kept = slices(x, axis)
    expected = numpy.array([exact_sum(r) for r in rows], dtype=dtype).reshape(kept)
    # Trees of two and three partials a combine too: several levels of combine.
    results = [xd.sum(da.from_array(x, chunks=c), axis=axis, accuracy="exact", split_every=s).compute()
               for c, s in ((chunks, None), (chunks, 2), (shape, None), (1, None), (1, 3))]
    for got in results:
        assert got.dtype == dtype
        assert bits(got) == bits(expected), (shape, chunks, axis)


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([numpy.float32, numpy.float64]), op=st.sampled_from(["mean", "var", "std"]),
       correction=st.sampled_from([0.0, 1.0]))
def test_exact_moments_are_the_exact_value_rounded_once(data, dtype, op, correction, rng):
    shape, chunks = data.draw(chunked())
    axis = axis_of(data.draw, len(shape))
    span = 30 if dtype == numpy.float32 else 200  # the squares stay within f64's exact range
    x = (rng.standard_normal(shape) * numpy.exp2(rng.integers(-span, span, shape))).astype(dtype)
    rows, kept = slices(x, axis)
    expected = []
    for r in rows:
        mean, var = exact_moments(r.tolist(), correction)
        if op == "mean":
            expected.append(round_to(mean, dtype))
        elif var is None:
            expected.append(math.nan)
        else:
            expected.append(round_to(var, dtype) if op == "var" else sqrt_rounded(var, dtype))
    expected = numpy.array(expected, dtype=dtype).reshape(kept)
    how = {"correction": correction} if op != "mean" else {}
    for c, s in ((chunks, 2), (shape, None)):
        got = getattr(xd, op)(da.from_array(x, chunks=c), axis=axis, accuracy="exact", split_every=s, **how).compute()
        assert bits(got) == bits(expected), (shape, c, axis, got, expected)


def bound_holds(got, exact, scale, n, eps):
    return abs(Fraction(float(got)) - exact) <= Fraction(2 * (n + 64) * eps) * scale + Fraction(float(numpy.finfo(numpy.float64).tiny))


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([numpy.float32, numpy.float64]))
def test_standard_sum_mean_var_within_their_bounds(data, dtype, rng):
    shape, chunks = data.draw(chunked())
    axis = axis_of(data.draw, len(shape))
    x = (rng.standard_normal(shape) * 3 + 5).astype(dtype)
    rows, kept = slices(x, axis)
    eps = float(numpy.finfo(dtype).eps)
    dx = da.from_array(x, chunks=chunks)
    sums, means, variances = (numpy.asarray(f(dx, axis=axis, split_every=2).compute()).reshape(-1) for f in (xd.sum, xd.mean, xd.var))
    for r, s, m, v in zip(rows, sums, means, variances):
        values = [Fraction(float(e)) for e in r]
        total, magnitude = sum(values, Fraction(0)), sum((abs(e) for e in values), Fraction(0))
        assert bound_holds(s, total, magnitude, len(r), eps)
        assert bound_holds(m, total / len(r), magnitude / len(r), len(r), eps)
        _, var = exact_moments([float(e) for e in r])
        # Chan's update in f64 from f64 chunk moments, rounded to the type: relative to sum of squares.
        assert bound_holds(v, var, sum((e * e for e in values), Fraction(0)) / len(r), len(r), eps)
    assert sums.dtype == dtype and means.dtype == dtype and variances.dtype == dtype


@SETTINGS
@given(data=st.data(), op=st.sampled_from(["argmin", "argmax", "nanargmin", "nanargmax"]), nan=st.booleans())
def test_indices_are_the_lowest_among_equal_extremes(data, op, nan, rng):
    shape, chunks = data.draw(chunked())
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    x = rng.integers(0, 3, shape).astype(numpy.float64)  # few values: ties across chunks
    if nan:
        x[rng.random(shape) < 0.2] = numpy.nan
    reference = getattr(numpy, op)
    try:
        expected = reference(x, axis=axis)
    except ValueError:  # numpy's all-NaN slice: ours raises too
        with pytest.raises(ValueError):
            getattr(xd, op)(da.from_array(x, chunks=chunks), axis=axis).compute()
        return
    for split_every in (None, 2):
        got = getattr(xd, op)(da.from_array(x, chunks=chunks), axis=axis, split_every=split_every).compute()
        numpy.testing.assert_array_equal(got, expected)


@SETTINGS
@given(data=st.data(), op=st.sampled_from(["min", "max", "nanmin", "nanmax", "any", "all", "count_nonzero", "nansum", "prod"]))
def test_folds_match_numpy(data, op, rng):
    shape, chunks = data.draw(chunked())
    axis = axis_of(data.draw, len(shape))
    x = rng.integers(-2, 3, shape).astype(numpy.float64)  # small integers: sums and products exact in f64
    x[rng.random(shape) < 0.1] = numpy.nan
    reference = {"nanmin": numpy.fmin.reduce, "nanmax": numpy.fmax.reduce}.get(op, getattr(numpy, op))
    if op in ("any", "all", "count_nonzero"):
        x = numpy.nan_to_num(x)
    expected = reference(x, axis=axis) if op not in ("nanmin", "nanmax") or axis is not None else reference(x.reshape(-1))
    got = getattr(xd, op)(da.from_array(x, chunks=chunks), axis=axis).compute()
    numpy.testing.assert_array_equal(got, expected)


def test_integers_sum_modulo_two_to_the_64(rng):
    x = rng.integers(-(2**62), 2**62, (50, 7), dtype=numpy.int64)
    expected = sum(int(v) for v in x.ravel())
    expected = (expected + 2**63) % 2**64 - 2**63
    for chunks in ((50, 7), (3, 2), 1):
        assert int(xd.sum(da.from_array(x, chunks=chunks)).compute()) == expected


def test_norms_and_logsumexp_do_not_overflow(rng):
    x = rng.standard_normal(1000) * 1e300
    got = float(xd.norm2(da.from_array(x, chunks=77)).compute())
    exact = math.sqrt(float(sum(Fraction(float(v)) ** 2 for v in x) / Fraction(10) ** 600)) * 1e300
    assert math.isfinite(got) and abs(got - exact) <= 1e-13 * exact
    y = rng.standard_normal(1000) * 50 + 800  # exp overflows f64 without the running maximum
    got = float(xd.logsumexp(da.from_array(y, chunks=91)).compute())
    top = float(y.max())
    assert abs(got - (top + math.log(math.fsum(math.exp(v - top) for v in y)))) <= 1e-12 * abs(got)


def test_refusals():
    x = da.from_array(numpy.arange(12.0).reshape(3, 4), chunks=2)
    with pytest.raises(ValueError, match="correction"):
        xd.sum(x, correction=1)
    with pytest.raises(ValueError, match="accuracy"):
        xd.sum(x, accuracy="roughly")
    with pytest.raises(TypeError, match="axis"):
        xd.argmax(x, axis=(0, 1))
    with pytest.raises(ValueError):
        xd.min(da.zeros((0, 4), chunks=2), axis=0)
    with pytest.raises(TypeError, match="unknown keyword"):
        xd.sum(x, colour="blue")
    with pytest.raises(ValueError, match="All-NaN"):
        xd.nanargmax(da.from_array(numpy.full((2, 3), numpy.nan), chunks=1), axis=0).compute()


def test_keepdims_and_dtype(rng):
    x = rng.random((6, 5, 4)).astype(numpy.float32)
    got = xd.sum(da.from_array(x, chunks=(2, 5, 3)), axis=(0, 2), keepdims=True, dtype=numpy.float64, accuracy="exact")
    assert got.shape == (1, 5, 1) and got.dtype == numpy.float64
    expected = [float(sum((Fraction(float(v)) for v in x[:, j, :].ravel()), Fraction(0))) for j in range(5)]
    assert got.compute().reshape(-1).tolist() == expected


def test_bfloat16_and_float16(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for dtype in (numpy.float16, ml_dtypes.bfloat16):
        x = rng.standard_normal(333).astype(dtype)
        expected = exact_sum(x.astype(numpy.float64))  # every 16-bit value is a double exactly
        got = xd.sum(da.from_array(x, chunks=50), accuracy="exact", dtype=numpy.float64).compute()
        assert float(got) == expected


def test_exact_f64_variance_refuses_squares_out_of_range():
    x = numpy.array([[1e200, 1.0], [2.0, 3.0]])
    for axis in (None, 0):
        with pytest.raises(xreduce.Error) as e:
            xd.var(da.from_array(x, chunks=1), axis=axis, accuracy="exact").compute()
        assert e.value.code == "unsupported"


def test_cupy_chunks_reduce_on_their_gpu(rng):
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no GPU")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no GPU")
    x = wide_values(rng, (300, 40), numpy.float32)
    dx = da.from_array(cupy.asarray(x), chunks=(64, 16))
    local = {"scheduler": "synchronous"}  # the chunks stay in this process, on its GPU
    assert bits(xd.sum(dx, accuracy="exact").compute(**local)) == bits(numpy.float32(exact_sum(x)))
    expected = numpy.array([exact_sum(x[:, j].copy()) for j in range(40)], dtype=numpy.float32)
    assert bits(xd.sum(dx, axis=0, accuracy="exact").compute(**local)) == bits(expected)
    numpy.testing.assert_array_equal(xd.argmax(dx, axis=1).compute(**local), numpy.argmax(x, axis=1))
    y = rng.standard_normal((300, 40)) + 3
    variances = xd.var(da.from_array(cupy.asarray(y), chunks=(64, 16)), axis=0).compute(**local)
    numpy.testing.assert_allclose(variances, numpy.var(y, axis=0), rtol=1e-12)
