"""JAX arrays (host, through DLPack): every element type JAX holds by default (f32, bf16, f16, the 8-,
16- and 32-bit integers, bool), flat against the exact references of test_dtypes.py, and over
axes against numpy on the same values, results back as JAX arrays. Skipped where JAX is not
installed."""

import numpy
import pytest
import xreduce
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dtypes import OPS, check, draw

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

TYPES = ["float32", "float16", "bfloat16", "int8", "uint8", "int16", "uint16", "int32", "bool"]
EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}  # the spacing above 1


def on_jax(host):
    """`host` (numpy, bfloat16 as ml_dtypes') as a JAX array of the same values and type, in host
    memory (JAX puts arrays on a GPU by default where it sees one: test_gpu.py has those)."""
    return jax.device_put(host, jax.devices("cpu")[0])


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("op", OPS)
def test_flat_arrays_of_every_type(rng, name, op):
    for n in (1, 1000, int(rng.integers(1, 1 << 15))):
        n = n if op != "prod" else min(n, 300)
        if name == "float32":  # test_dtypes' draw is for the narrow types
            u = rng.random(n) - 0.5
            x = (1 + u / 64 if op == "prod" else u).astype(numpy.float32)
        else:
            x = draw(rng, name, n, op)
        r = xreduce.reduce(on_jax(x), op)
        if name == "float32":
            want = x.astype(numpy.float64)
            if op in ("argmin", "argmax"):
                assert r.index == int(getattr(numpy, op)(want))
            elif op in ("min", "max"):
                assert r.value == float(getattr(numpy, op)(want))
            else:
                total = want.sum() if op == "sum" else want.prod()
                bound = (x.size + 64) * 2.0**-23 * (numpy.abs(want).sum() if op == "sum" else abs(total))
                assert abs(r.value - total) <= bound
        else:
            check(r, x, name, op)


@st.composite
def arrays_and_axes(draw_from):
    rank = draw_from(st.integers(1, 3))
    shape = tuple(draw_from(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))
    name = draw_from(st.sampled_from(TYPES))
    axes = draw_from(st.one_of(st.none(), st.integers(-rank, rank - 1),
                               st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True).map(tuple)))
    seed = draw_from(st.integers(0, 2**32 - 1))
    keepdims = draw_from(st.booleans())
    return shape, name, axes, keepdims, seed


@settings(max_examples=150, deadline=None)
@given(arrays_and_axes(), st.sampled_from(["sum", "min", "max", "argmin", "argmax"]))
def test_axes_come_back_as_jax_arrays(case, op):
    shape, name, axes, keepdims, seed = case
    rng = numpy.random.default_rng(seed)
    size = int(numpy.prod(shape))
    host = draw(rng, name, size, op).reshape(shape) if name != "float32" else rng.random(shape).astype(numpy.float32)
    x = on_jax(host)
    if op in ("argmin", "argmax") and isinstance(axes, tuple):
        axes = axes[0]  # numpy's argmin/argmax take one axis
    wide = host.astype(numpy.float64) if name in ("float32", "float16", "bfloat16") else host.astype(numpy.int64)
    want = (wide.sum if op == "sum" else getattr(wide, op))(axis=axes, keepdims=keepdims)
    where = f"{name} {shape}, {op}, axis {axes}, keepdims {keepdims}, seed {seed}"
    # The results' type as numpy gives it (integer sums widen to 64 bits, indices are int64),
    # narrowed to 32 bits where JAX holds no 64-bit integers (jax_enable_x64 off, its default).
    integers = op in ("argmin", "argmax") or (op == "sum" and name not in EPS)
    unsigned = op == "sum" and (name.startswith("uint") or name == "bool")
    reduced = set(range(len(shape))) if axes is None else {a % len(shape) for a in (axes if isinstance(axes, tuple) else (axes,))}
    whole = not keepdims and len(reduced) == len(shape)  # no axis kept: a Python number, as for axis=None
    narrow = integers and not whole and not jax.config.jax_enable_x64
    if narrow and numpy.size(want) and not (numpy.iinfo("uint32" if unsigned else "int32").min <= numpy.min(want)
                                            and numpy.max(want) <= numpy.iinfo("uint32" if unsigned else "int32").max):
        with pytest.raises(OverflowError, match="jax_enable_x64"):
            getattr(xreduce, op)(x, axis=axes, keepdims=keepdims)
        return
    got = getattr(xreduce, op)(x, axis=axes, keepdims=keepdims)
    if whole:
        assert not isinstance(got, jax.Array), where
        value = float(got)
        want_value = float(want)
    else:
        assert isinstance(got, jax.Array), where
        assert got.devices() == x.devices(), where  # on x's device
        assert got.shape == numpy.shape(want), where
        if integers:
            bits = 32 if narrow else 64
            assert got.dtype == numpy.dtype(f"{'uint' if unsigned else 'int'}{bits}"), (where, got.dtype)
        value = numpy.asarray(got).astype(numpy.float64)
        want_value = numpy.asarray(want).astype(numpy.float64)
    if op == "sum" and name in ("float32", "float16", "bfloat16"):
        # Accumulated in at least f32, rounded once to the type: the type's half ulp, plus 64
        # eps(f32) of the sum of magnitudes (docs/semantics.md).
        eps = EPS[name]
        magnitude = numpy.abs(wide).sum(axis=axes, keepdims=keepdims)
        assert numpy.all(numpy.abs(value - want_value) <= eps * numpy.abs(want_value) + 64 * 2.0**-23 * magnitude + 1e-30), where
    else:
        assert numpy.array_equal(value, want_value), where


def test_64_bit_results_with_jax_enable_x64(rng):
    host = rng.integers(-(2**31), 2**31 - 1, (64, 3), dtype=numpy.int32)
    with jax.enable_x64(True):  # JAX's own switch, for this block only
        got = xreduce.sum(on_jax(host), axis=0)
        assert got.dtype == numpy.int64
        assert numpy.array_equal(numpy.asarray(got), host.astype(numpy.int64).sum(axis=0))
