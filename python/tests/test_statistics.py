"""The statistics (mean, var, std, the norms, logsumexp, count_nonzero, any, all) and the nan*
ops, on every host backend, against references in Python's own arithmetic: fractions for the
mean and variance (exact-mode results bit for bit, standard ones within the stated bound),
numpy's nan* and logical functions only where the answer is exact (indices, counts, flags)."""

import math
from fractions import Fraction

import numpy
import pytest
import xreduce
from conftest import host_backends as all_host_backends
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import round_to



def host_backends():
    """The host backends that compute the statistics (all of the built-in CPU ones)."""
    named = {b.name: b for b in xreduce.backends()}
    return [n for n in all_host_backends() if "mean" in named[n].support.get("float64", {})]


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = ["float32", "float64"]


def exact_moments(values, correction=0.0):
    """(mean, var) of finite floats as Fractions."""
    n = len(values)
    xs = [Fraction(v) for v in values]
    s = sum(xs, Fraction(0))
    q = sum((v * v for v in xs), Fraction(0))
    mean = s / n
    dof = n - Fraction(correction)
    var = (n * q - s * s) / (n * dof) if dof > 0 else None
    return mean, var


def sqrt_rounded(v: Fraction, dtype) -> float:
    """sqrt(v) rounded once to dtype: the candidate whose rounding interval holds sqrt(v), found
    by squaring the interval's ends exactly."""
    dtype = numpy.dtype(dtype)
    if v == 0:
        return 0.0
    guess = dtype.type(math.sqrt(float(v)))
    for c in (guess, numpy.nextafter(guess, dtype.type(math.inf)), numpy.nextafter(guess, dtype.type(0))):
        up = Fraction(float(numpy.nextafter(c, dtype.type(math.inf))))
        down = Fraction(float(numpy.nextafter(c, dtype.type(0))))
        low, high = (Fraction(float(c)) + down) / 2, (Fraction(float(c)) + up) / 2
        even = int(numpy.array(c, dtype=dtype).view(numpy.uint32 if dtype.itemsize == 4 else numpy.uint64)) % 2 == 0
        inside_low = low * low < v or (low * low == v and even)
        inside_high = v < high * high or (high * high == v and even)
        if inside_low and inside_high:
            return float(c)
    raise AssertionError("no candidate holds the square root")


def data(draw, dtype, n):
    """Finite floats of dtype: a uniform spread, a large mean with a tiny spread (cancellation),
    or a wide range of magnitudes, chosen by the draw."""
    kind = draw(st.sampled_from(["uniform", "offset", "wide"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = numpy.random.default_rng(seed)
    if kind == "uniform":
        x = rng.uniform(-1, 1, n)
    elif kind == "offset":
        x = 1e4 + rng.uniform(-1e-3, 1e-3, n)
    else:
        x = rng.uniform(-1, 1, n) * 2.0 ** rng.integers(-30, 30, n)
    return x.astype(dtype), (kind, seed)


@st.composite
def arrays(draw, dtypes=FLOATS):
    dtype = draw(st.sampled_from(dtypes))
    n = draw(st.integers(1, 3000))
    return data(draw, dtype, n)


@pytest.mark.parametrize("backend", host_backends())
@SETTINGS
@given(drawn=arrays(), correction=st.sampled_from([0.0, 1.0, 0.5]))
def test_exact_mean_var_std_are_rounded_once(backend, drawn, correction):
    x, how = drawn
    mean, var = exact_moments(x.tolist(), correction)
    exact = dict(backend=backend, accuracy="exact")
    assert xreduce.mean(x, **exact) == round_to(mean, x.dtype), how
    if var is None:
        assert math.isnan(xreduce.var(x, correction=correction, **exact))
        return
    assert xreduce.var(x, correction=correction, **exact) == round_to(var, x.dtype), how
    assert xreduce.std(x, correction=correction, **exact) == sqrt_rounded(var, x.dtype), how


@pytest.mark.parametrize("backend", host_backends())
@SETTINGS
@given(drawn=arrays(), correction=st.sampled_from([0.0, 1.0]))
def test_standard_mean_var_std_within_the_bound(backend, drawn, correction):
    """Standard accuracy: the last rounding to the result type, plus the double accumulation's
    error in terms of the data (docs/semantics.md): never the raw sum of squares less the square
    of the sum, which loses every digit on the offset data."""
    x, how = drawn
    mean, var = exact_moments(x.tolist(), correction)
    if var is None:
        return
    eps = float(numpy.finfo(x.dtype).eps)
    largest = float(numpy.max(numpy.abs(x.astype(numpy.float64))))
    got_mean = xreduce.mean(x, backend=backend)
    assert abs(Fraction(got_mean) - mean) <= eps * abs(mean) + 64 * 2.0**-52 * largest, how
    got_var = xreduce.var(x, backend=backend, correction=correction)
    spread = math.sqrt(float(var))
    bound = eps * float(var) + 4096 * 2.0**-52 * (float(var) + largest * spread)
    assert abs(Fraction(got_var) - var) <= Fraction(bound), how
    got_std = xreduce.std(x, backend=backend, correction=correction)
    assert abs(got_std - spread) <= eps * spread + (bound / (2 * spread) if spread > 0 else math.sqrt(bound)), how


def test_cancellation_keeps_its_digits():
    """Mean 1e4, spread 1e-3, in float32: the textbook one-pass formula gives a variance of the
    wrong size (or negative); the library's is within a few float32 ulps."""
    rng = numpy.random.default_rng(7)
    x = (1e4 + rng.uniform(-1e-3, 1e-3, 1 << 16)).astype(numpy.float32)
    _, var = exact_moments(x.tolist())
    got = xreduce.var(x)
    assert abs(Fraction(got) - var) <= 4 * float(numpy.finfo(numpy.float32).eps) * var


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool"])
def test_integer_statistics_are_float64(dtype):
    rng = numpy.random.default_rng(3)
    x = rng.integers(0, 2 if dtype == "bool" else 100, 1001).astype(dtype)
    mean, var = exact_moments([int(v) for v in x])
    assert xreduce.mean(x) == pytest.approx(float(mean), rel=1e-15)
    assert xreduce.var(x) == pytest.approx(float(var), rel=1e-12)
    assert isinstance(xreduce.mean(x), float)
    assert xreduce.count_nonzero(x) == int(numpy.count_nonzero(x))


@pytest.mark.parametrize("backend", host_backends())
def test_norms_without_overflow_or_underflow(backend):
    for scale in (1e300, 1e-300, 1.0, 2.0**-1070):
        x = numpy.array([3.0, 4.0, 0.0, -12.0]) * scale
        want = 13.0 * scale
        assert xreduce.norm2(x, backend=backend) == pytest.approx(want, rel=4e-16)
        assert xreduce.vector_norm(x, ord=2, backend=backend) == xreduce.norm2(x, backend=backend)
    x = numpy.array([1e308, -1e308, 5.0])
    assert xreduce.norm1(x, backend=backend) == math.inf  # the sum of |x| itself overflows
    assert xreduce.vector_norm(x, ord=math.inf, backend=backend) == 1e308
    assert math.isnan(xreduce.norm2(numpy.array([1e300, math.nan, 1e-300]), backend=backend))
    with pytest.raises(ValueError, match="ord"):
        xreduce.vector_norm(x, ord=3)


@pytest.mark.parametrize("backend", host_backends())
@SETTINGS
@given(drawn=arrays(["float64"]))
def test_norm2_and_norm1_within_the_bound(backend, drawn):
    x, how = drawn
    squares = sum((Fraction(v) ** 2 for v in x.tolist()), Fraction(0))
    want = math.sqrt(float(squares))
    assert xreduce.norm2(x, backend=backend) == pytest.approx(want, rel=1e-13, abs=0), how
    absolute = sum((abs(Fraction(v)) for v in x.tolist()), Fraction(0))
    assert xreduce.norm1(x, backend=backend) == pytest.approx(float(absolute), rel=1e-13), how


def logsumexp_reference(values):
    m = max(values)
    if math.isinf(m):
        return m
    return m + math.log(math.fsum(math.exp(v - m) for v in values))


@pytest.mark.parametrize("backend", host_backends())
def test_logsumexp(backend):
    rng = numpy.random.default_rng(11)
    for x in (rng.normal(0, 50, 5000), rng.normal(700, 1, 100), numpy.array([-1000.0, -1000.0])):
        assert xreduce.logsumexp(x, backend=backend) == pytest.approx(logsumexp_reference(x.tolist()), rel=1e-13, abs=1e-13)
    assert xreduce.logsumexp(numpy.array([-math.inf, -math.inf]), backend=backend) == -math.inf
    assert xreduce.logsumexp(numpy.array([1.0, math.inf, -math.inf]), backend=backend) == math.inf
    assert math.isnan(xreduce.logsumexp(numpy.array([1.0, math.nan, math.inf]), backend=backend))
    assert xreduce.logsumexp(numpy.array([-math.inf, 0.0]), backend=backend) == 0.0
    assert xreduce.logsumexp(numpy.zeros(0), backend=backend) == -math.inf


def with_nans(rng, n, share):
    x = rng.normal(0, 1, n)
    x[rng.random(n) < share] = math.nan
    return x


@pytest.mark.parametrize("backend", host_backends())
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 2000), share=st.sampled_from([0.0, 0.1, 0.9, 1.0]))
def test_nan_ops_skip_nan(backend, seed, n, share):
    x = with_nans(numpy.random.default_rng(seed), n, share)
    kept = [v for v in x.tolist() if not math.isnan(v)]
    if kept:
        assert xreduce.nanargmin(x, backend=backend) == int(numpy.nanargmin(x))
        assert xreduce.nanargmax(x, backend=backend) == int(numpy.nanargmax(x))
        assert xreduce.nanmin(x, backend=backend) == min(kept)
        assert xreduce.nanmax(x, backend=backend) == max(kept)
        mean, var = exact_moments(kept)
        assert xreduce.nanmean(x, backend=backend, accuracy="standard") == pytest.approx(float(mean), rel=1e-12, abs=1e-15)
        assert xreduce.nanvar(x, backend=backend) == pytest.approx(float(var), rel=1e-10, abs=1e-300)
        assert xreduce.nanstd(x, backend=backend) == pytest.approx(math.sqrt(float(var)), rel=1e-10, abs=1e-150)
        assert xreduce.nansum(x, backend=backend) == pytest.approx(math.fsum(kept), rel=1e-12, abs=1e-12)
    else:  # all NaN: numpy's answers
        assert math.isnan(xreduce.nanmin(x, backend=backend)) and math.isnan(xreduce.nanmax(x, backend=backend))
        assert math.isnan(xreduce.nanmean(x, backend=backend)) and math.isnan(xreduce.nanvar(x, backend=backend))
        assert xreduce.nansum(x, backend=backend) == 0.0 and xreduce.nanprod(x, backend=backend) == 1.0
        with pytest.raises(ValueError, match="All-NaN"):
            xreduce.nanargmax(x, backend=backend)
    assert xreduce.count_nonzero(x, backend=backend) == int(numpy.count_nonzero(x))
    assert xreduce.any(x, backend=backend) is bool(numpy.any(x))
    assert xreduce.all(x, backend=backend) is bool(numpy.all(x))


@pytest.mark.parametrize("backend", host_backends())
def test_nan_and_inf_placement(backend):
    for at in (0, 7, 99):
        x = numpy.arange(100, dtype=numpy.float64)
        x[at] = math.nan
        assert math.isnan(xreduce.mean(x, backend=backend)) and math.isnan(xreduce.var(x, backend=backend))
        assert math.isnan(xreduce.norm2(x, backend=backend)) and math.isnan(xreduce.norminf(x, backend=backend))
        assert xreduce.nanargmin(x, backend=backend) == (1 if at == 0 else 0)
        assert xreduce.nanmean(x, backend=backend) == pytest.approx((4950 - at) / 99)
        x[at] = math.inf
        assert xreduce.mean(x, backend=backend) == math.inf
        assert math.isnan(xreduce.var(x, backend=backend))  # as numpy: inf - mean is inf - inf
        assert xreduce.norm2(x, backend=backend) == math.inf


@pytest.mark.parametrize("op", ["mean", "var", "std", "norm2", "logsumexp", "count_nonzero", "any", "all", "nansum", "nanmean"])
def test_axes_match_numpy(op):
    rng = numpy.random.default_rng(5)
    x = rng.normal(3, 2, (6, 7, 5))
    x[rng.random(x.shape) < 0.05] = math.nan if op.startswith("nan") else 0.0
    want = {
        "mean": lambda a, ax: numpy.mean(a, axis=ax),
        "var": lambda a, ax: numpy.var(a, axis=ax),
        "std": lambda a, ax: numpy.std(a, axis=ax),
        "norm2": lambda a, ax: numpy.sqrt(numpy.sum(a * a, axis=ax)),
        "logsumexp": lambda a, ax: numpy.log(numpy.sum(numpy.exp(a), axis=ax)),
        "count_nonzero": lambda a, ax: numpy.count_nonzero(a, axis=ax),
        "any": lambda a, ax: numpy.any(a, axis=ax),
        "all": lambda a, ax: numpy.all(a, axis=ax),
        "nansum": lambda a, ax: numpy.nansum(a, axis=ax),
        "nanmean": lambda a, ax: numpy.nanmean(a, axis=ax),
    }[op]
    for view in (x, x.transpose(2, 0, 1), x[::-1, :, ::2]):
        for axis in (0, 1, 2, (0, 2), -1):
            got = getattr(xreduce, op)(view, axis=axis)
            expected = want(view, axis)
            assert got.shape == expected.shape
            if op in ("count_nonzero", "any", "all"):
                assert numpy.array_equal(got, expected)
            else:
                numpy.testing.assert_allclose(got, expected, rtol=1e-12)
    assert getattr(xreduce, op)(x, axis=1, keepdims=True).shape == (6, 1, 5)


def test_nanargmax_of_an_all_nan_row_raises():
    x = numpy.ones((3, 4))
    x[1] = math.nan
    with pytest.raises(ValueError, match="All-NaN"):
        xreduce.nanargmax(x, axis=1)
    assert xreduce.nanargmax(x, axis=0).tolist() == [0, 0, 0, 0]


def test_empty_and_refusals():
    empty = numpy.zeros(0)
    assert math.isnan(xreduce.mean(empty)) and math.isnan(xreduce.var(empty))
    assert xreduce.norm2(empty) == 0.0 and xreduce.count_nonzero(empty) == 0
    assert xreduce.any(empty) is False and xreduce.all(empty) is True
    with pytest.raises(xreduce.Error) as e:
        xreduce.nanmin(empty)
    assert e.value.code == "empty_input"
    assert math.isnan(xreduce.var(numpy.ones(1), correction=1))  # n - correction = 0, as numpy's ddof=1
    with pytest.raises(ValueError, match="correction"):
        xreduce.sum(numpy.ones(3), correction=1)
    with pytest.raises(xreduce.Error) as e:
        xreduce.var(numpy.ones(3), correction=-1)
    assert e.value.code == "invalid_argument"
    with pytest.raises(xreduce.Error) as e:
        xreduce.logsumexp(numpy.ones(3), accuracy="exact")
    assert e.value.code == "unsupported"
    with pytest.raises(xreduce.Error) as e:
        xreduce.var(numpy.ones((3, 4)), axis=0, accuracy="exact", backend="sequential")
    assert e.value.code == "unsupported"


def test_result_types_and_helpers():
    x = numpy.arange(10, dtype=numpy.float32)
    assert xreduce.mean(x, dtype="float64") == 4.5
    assert xreduce.var_mean(x, correction=1) == (xreduce.var(x, correction=1), 4.5)
    assert xreduce.minmax(x) == (0.0, 9.0)
    assert "mean" in xreduce.ops and "nanargmax" in xreduce.ops
    y = numpy.arange(12.0).reshape(3, 4)
    var, mean = xreduce.var_mean(y, axis=1)
    numpy.testing.assert_allclose(var, numpy.var(y, axis=1))
    numpy.testing.assert_allclose(mean, numpy.mean(y, axis=1))


@SETTINGS
@given(data=st.data())
def test_float_statistics_of_16_bit_floats_in_a_wider_type(data):
    """dtype=float32 or float64 for a statistic of float16 or bfloat16 elements: the value of the
    statistic in that type (the accumulator's value rounded once to it), not the 16-bit result's
    bits read as the wider type."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    dtype = data.draw(st.sampled_from([numpy.float16, ml_dtypes.bfloat16]))
    op = data.draw(st.sampled_from(["mean", "var", "std", "norm1", "norm2", "norminf", "logsumexp", "nansum", "nanmean", "nanvar"]))
    wide = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    backend = data.draw(st.sampled_from(host_backends()))
    n = data.draw(st.integers(1, 3000))
    rng = numpy.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))  # the seed: in Hypothesis's report
    x = (rng.standard_normal(n) + 2).astype(dtype)
    values = [Fraction(float(v)) for v in x.astype(numpy.float64)]
    mean, var = exact_moments([float(v) for v in values])
    exact = {"mean": mean, "nanmean": mean, "var": var, "nanvar": var, "norm1": sum(abs(v) for v in values),
             "nansum": sum(values, Fraction(0)), "norminf": max(abs(v) for v in values)}
    got = xreduce.reduce(x, op, dtype=wide, backend=backend).value
    if op in exact:
        want = float(exact[op])
    elif op in ("std", "norm2"):
        want = math.sqrt(float(var if op == "std" else sum(v * v for v in values)))
    else:
        top = max(float(v) for v in values)
        want = top + math.log(math.fsum(math.exp(float(v) - top) for v in values))
    eps = float(numpy.finfo(numpy.float32).eps)  # the 16-bit floats accumulate in f32 at least
    assert abs(got - want) <= 4 * n * eps * max(abs(want), 1.0), (op, dtype, wide, got, want)
