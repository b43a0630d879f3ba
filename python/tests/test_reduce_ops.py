"""Several ops in one read (xreduce.reduce_ops, and var_mean and minmax built on it), on every
host backend that takes several ops: the extremes and their indices against numpy (exact), the
sum, mean and variance against fractions within the standard bound, and on flat arrays each op the
bits of that op alone (docs/semantics.md promises that of the CPU backends)."""

import math
from fractions import Fraction

import numpy
import pytest
import xreduce
from conftest import host_backends
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Every op reduce_ops takes of floats (prod is one op at a time).
FLOAT_OPS = ["sum", "min", "max", "argmin", "argmax", "sumsq", "mean", "var", "std", "norm1", "norm2", "norminf",
             "logsumexp", "count_nonzero", "any", "all", "nansum", "nanmin", "nanmax", "nanargmin", "nanargmax",
             "nanmean", "nanvar", "nanstd"]
SPREAD_OPS = ("var", "std", "nanvar", "nanstd")  # the ops that take correction=


def several_ops_backends():
    """The host backends that take several ops in one read: the built-in CPU ones, which must."""
    return [n for n in host_backends() if n in ("sequential", "tbb", "openmp")]


def draw_array(data, dtype, shape):
    """Finite normal values around a drawn mean (0, 3 or 1e4: cancellation), seeded by the draw."""
    rng = numpy.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    return rng.normal(data.draw(st.sampled_from([0.0, 3.0, 1e4]), label="mean"), 2.0, shape).astype(dtype)


def as_is(value):
    """A result as something == compares bit for bit (NaN equal to NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


@pytest.mark.parametrize("backend", several_ops_backends())
@SETTINGS
@given(data=st.data())
def test_flat_arrays_each_op_as_alone(backend, data):
    dtype = data.draw(st.sampled_from(["float32", "float64"]), label="dtype")
    n = data.draw(st.integers(1, 5000), label="n")
    x = draw_array(data, dtype, n)
    names = data.draw(st.lists(st.sampled_from(FLOAT_OPS), min_size=1, max_size=6, unique=True), label="ops")
    correction = data.draw(st.sampled_from([0.0, 1.0]), label="correction")
    if not any(name in SPREAD_OPS for name in names):
        correction = 0.0
    got = xreduce.reduce_ops(x, names, backend=backend, correction=correction)
    assert list(got) == names
    for name in names:
        alone = getattr(xreduce, name)(x, backend=backend, **({"correction": correction} if name in SPREAD_OPS else {}))
        assert as_is(got[name]) == as_is(alone), name
    # The reference: extremes and indices exact, the mean and variance within the standard bound.
    exact = {"min": numpy.min, "max": numpy.max, "argmin": numpy.argmin, "argmax": numpy.argmax}
    for name, fn in exact.items():
        if name in got:
            assert got[name] == fn(x).item(), name
    values = [Fraction(float(v)) for v in x]
    mean = sum(values, Fraction(0)) / n
    largest = float(numpy.max(numpy.abs(x.astype(numpy.float64))))
    eps = float(numpy.finfo(x.dtype).eps)
    if "mean" in got:
        assert abs(Fraction(got["mean"]) - mean) <= eps * abs(mean) + 64 * 2.0**-52 * largest
    if "var" in got and n - correction > 0:
        var = sum(((v - mean) ** 2 for v in values), Fraction(0)) / (n - Fraction(correction))
        spread = math.sqrt(float(var))
        bound = eps * float(var) + 4096 * 2.0**-52 * (float(var) + largest * spread)
        assert abs(Fraction(got["var"]) - var) <= Fraction(bound)


def check_against_fractions(name, got, x, axis):
    """Each result of sum, mean, var or std (correction 0) of f64 `x` over `axis` within the
    standard bound of docs/semantics.md around the exact value (fractions): numpy's own sum is no
    reference where the elements cancel."""
    axes = tuple(a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    rows = numpy.moveaxis(x, axes, range(-len(axes), 0)).reshape(-1, math.prod(x.shape[a] for a in axes))
    results = numpy.asarray(got).reshape(-1)
    assert results.size == rows.shape[0], name
    eps = 2.0**-52
    for result, row in zip(results.tolist(), rows):
        values = [Fraction(float(v)) for v in row]
        total = sum(values, Fraction(0))
        largest = float(numpy.max(numpy.abs(row)))
        mean = total / len(values)
        if name == "sum":
            want, bound = total, 64 * eps * float(numpy.sum(numpy.abs(row)))
        elif name == "mean":
            want, bound = mean, eps * abs(float(mean)) + 64 * eps * largest
        else:
            var = sum(((v - mean) ** 2 for v in values), Fraction(0)) / len(values)
            var_bound = eps * float(var) + 4096 * eps * (float(var) + largest * math.sqrt(float(var)))
            if name == "var":
                want, bound = var, var_bound
            else:  # std: half the variance's bound over the root, and a rounding of its own
                root = math.sqrt(float(var))
                want = Fraction(root)
                bound = (0.5 * var_bound / root if root > 0 else math.sqrt(var_bound)) + 2 * eps * root
        assert abs(Fraction(result) - want) <= Fraction(bound), (name, result, float(want), bound)


@pytest.mark.parametrize("backend", several_ops_backends())
@SETTINGS
@given(data=st.data())
def test_axes_against_numpy_and_exact_values(backend, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 9), min_size=2, max_size=3), label="shape"))
    x = draw_array(data, "float64", shape)
    view = data.draw(st.sampled_from(["c", "transposed", "reversed"]), label="view")
    x = x.T if view == "transposed" else x[::-1] if view == "reversed" else x
    axis = data.draw(st.sampled_from(list(range(-x.ndim, x.ndim)) + [(0, x.ndim - 1)]), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    names = data.draw(st.lists(st.sampled_from(["sum", "min", "max", "argmin", "argmax", "mean", "var", "std"]),
                               min_size=1, max_size=5, unique=True), label="ops")
    if keepdims and any(name.startswith("arg") for name in names) and isinstance(axis, tuple):
        keepdims = False  # numpy's argmax takes one axis; its keepdims is checked with one axis below
    got = xreduce.reduce_ops(x, names, backend=backend, axis=axis, keepdims=keepdims)
    for name in names:
        if name.startswith("arg"):
            if isinstance(axis, tuple):
                continue  # numpy's argmax takes one axis; several are checked against the op alone
            want = getattr(numpy, name)(x, axis=axis, keepdims=keepdims)
            assert numpy.array_equal(got[name], want), name
        elif name in ("min", "max"):
            assert numpy.array_equal(got[name], getattr(numpy, name)(x, axis=axis, keepdims=keepdims)), name
        else:
            assert numpy.shape(got[name]) == numpy.shape(getattr(numpy, name)(x, axis=axis, keepdims=keepdims)), name
            check_against_fractions(name, got[name], x, axis)
    for name in names:
        if name.startswith("arg") and isinstance(axis, tuple):
            assert numpy.array_equal(got[name], getattr(xreduce, name)(x, backend=backend, axis=axis, keepdims=keepdims))


@SETTINGS
@given(data=st.data())
def test_var_mean_and_minmax_in_one_read_or_two(data):
    """One read where the backend can (standard accuracy), two where it cannot (an exact mean or
    variance, dtype=): the same values as the ops alone either way."""
    x = draw_array(data, data.draw(st.sampled_from(["float32", "float64"])), data.draw(st.integers(1, 3000)))
    backend = data.draw(st.sampled_from(several_ops_backends()))
    how = data.draw(st.sampled_from([{}, {"accuracy": "exact"}, {"dtype": "float64"}]))
    correction = data.draw(st.sampled_from([0.0, 1.0]))
    var, mean = xreduce.var_mean(x, correction=correction, backend=backend, **how)
    assert as_is(var) == as_is(xreduce.var(x, correction=correction, backend=backend, **how))
    assert mean == xreduce.mean(x, backend=backend, **how)
    assert xreduce.minmax(x, backend=backend) == (float(numpy.min(x)), float(numpy.max(x)))
    rows = x[: len(x) // 3 * 3].reshape(-1, 3) if len(x) >= 3 else x.reshape(1, -1)
    low, high = xreduce.minmax(rows, axis=1, backend=backend)
    assert numpy.array_equal(low, rows.min(axis=1)) and numpy.array_equal(high, rows.max(axis=1))


def test_names_and_refusals():
    x = numpy.arange(12.0)
    assert xreduce.reduce_ops(x, "sum, max,argmax") == {"sum": 66.0, "max": 11.0, "argmax": 11}
    assert xreduce.reduce_ops(x, ("mean",)) == {"mean": 5.5}
    assert xreduce.reduce_ops(x.reshape(3, 4), ["min", "argmax"], width=1, axis=0)["argmax"].tolist() == [2, 2, 2, 2]
    records = xreduce.reduce_ops(x, ["sum", "argmin"], width=4)
    assert records == {"sum": [12.0, 15.0, 18.0, 21.0], "argmin": [0, 0, 0, 0]}
    with pytest.raises(ValueError, match="named twice"):
        xreduce.reduce_ops(x, ["sum", "sum"])
    with pytest.raises(ValueError, match="unknown op"):
        xreduce.reduce_ops(x, ["sum", "median"])
    with pytest.raises(ValueError, match="at least one op"):
        xreduce.reduce_ops(x, [])
    with pytest.raises(TypeError, match="names of ops"):
        xreduce.reduce_ops(x, ["sum", 3])
    with pytest.raises(TypeError, match="sequence of op names"):
        xreduce.reduce_ops(x, 3)
    with pytest.raises(ValueError, match="correction"):
        xreduce.reduce_ops(x, ["sum", "mean"], correction=1)
    with pytest.raises(xreduce.Error) as e:
        xreduce.reduce_ops(x, ["sum", "prod"], backend="sequential")
    assert e.value.code == "unsupported"
    with pytest.raises(xreduce.Error) as e:
        xreduce.reduce_ops(x, ["sum", "prod"])  # auto: no backend does it
    assert e.value.code == "unavailable"
    with pytest.raises(xreduce.Error) as e:
        xreduce.reduce_ops(x, ["sum", "max"], dtype="float64")
    assert e.value.code == "invalid_argument"
    with pytest.raises(xreduce.Error) as e:
        xreduce.reduce_ops(x, ["mean", "var"], accuracy="exact")
    assert e.value.code == "unsupported"
    assert xreduce.reduce_ops(x, ["min", "argmax", "count_nonzero"], accuracy="exact") == {
        "min": 0.0, "argmax": 11, "count_nonzero": 11}
    with pytest.raises(xreduce.Error) as e:
        xreduce.reduce_ops(numpy.zeros(0), ["mean", "max"])
    assert e.value.code == "empty_input"
    nans = numpy.full((2, 3), math.nan)
    with pytest.raises(ValueError, match="All-NaN"):
        xreduce.reduce_ops(nans, ["nanmax", "nanargmax"], axis=1)
