"""The 8- and 16-bit element types and bool: numpy arrays and ml_dtypes' bfloat16, every op through
every host backend, against references in Python's integers and fractions."""

import math
from fractions import Fraction

import numpy
import pytest
import xreduce
from conftest import host_backends, reduce_or_refused
from reference import exact_sum as reference_exact_sum
from reference import round_to as round_wide

ml_dtypes = pytest.importorskip("ml_dtypes")

# (name, significand digits, smallest normal exponent, largest finite value) of the 16-bit floats.
FLOAT16 = {"float16": (11, -14, 65504.0), "bfloat16": (8, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max))}
TYPES = ["float16", "bfloat16", "int8", "uint8", "int16", "uint16", "bool"]
OPS = ["sum", "prod", "min", "max", "argmin", "argmax"]


def numpy_dtype(name):
    return numpy.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else numpy.dtype(name)


def round_to(value: Fraction, name: str) -> float:
    """`value` rounded once to the nearest 16-bit float `name`, ties to even; inf past its range."""
    digits, emin, largest = FLOAT16[name]
    if value == 0:
        return 0.0
    a = abs(value)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    lsb = Fraction(2) ** (max(e, emin) - (digits - 1))
    q = a / lsb
    n = q.numerator // q.denominator
    rest = q - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    result = float(n * lsb)
    if result > largest:
        result = math.inf
    return math.copysign(result, value)


def exact_sum(x, name: str) -> float:
    """The exact sum of the 16-bit floats x rounded once to `name` (reference.exact_sum over their
    values as doubles, which they are exactly)."""
    return reference_exact_sum(x.astype(numpy.float64), lambda total: round_to(total, name))


def draw(rng, name, n, op):
    dtype = numpy_dtype(name)
    if name == "bool":
        return rng.random(n) < 0.5
    if name in FLOAT16:
        if op == "prod":
            return (1 + (rng.random(n) - 0.5) / 64).astype(dtype)
        return ((rng.random(n) - 0.5) * 2.0 ** rng.integers(-8, 4, n)).astype(dtype)
    info = numpy.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def reference(x, name, op):
    values = x.astype(numpy.float64).tolist() if name in FLOAT16 else [int(v) for v in x.tolist()]
    if op in ("min", "max", "argmin", "argmax"):
        pick = min if op in ("min", "argmin") else max
        best = pick(values)
        return (bool(best) if name == "bool" else best), values.index(best)
    if op == "sum":
        total = sum((Fraction(v) for v in values), Fraction(0))
    else:
        total = Fraction(1)
        for v in values:
            total *= Fraction(v)
    if name in FLOAT16:
        return total, None
    return int(total) % 2**64 - (2**64 if name.startswith("int") and int(total) % 2**64 >= 2**63 else 0), None


def check(r, x, name, op):
    """r (a Result of op over x) against the exact reference: indices and integer or bool results
    equal, 16-bit float sums and products within the stated bound."""
    want, index = reference(x, name, op)
    if op in ("argmin", "argmax"):
        assert r.index == index
    elif name in FLOAT16 and op in ("sum", "prod"):
        # Accumulated in f32 lanes and f64 partials, rounded once to the type (docs/semantics.md).
        digits, emin, _ = FLOAT16[name]
        exact = round_to(want, name)
        bound = abs(exact) * 2.0 ** (1 - digits) + 2.0 ** (emin - digits + 1)
        if op == "sum":
            bound += 64 * 2.0**-23 * float(numpy.abs(x.astype(numpy.float64)).sum())
        else:
            bound += (x.size + 64) * 2.0**-23 * abs(float(want))
        assert abs(r.value - exact) <= bound, (r.value, exact)
    else:
        assert r.value == want, (r.value, want)


@pytest.mark.parametrize("backend", ["auto", *host_backends()])
@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("op", OPS)
def test_every_op(rng, backend, name, op):
    for n in (1, 7, 1000, int(rng.integers(1, 1 << 16))):
        x = draw(rng, name, n if op != "prod" else min(n, 300), op)
        r = reduce_or_refused(x, op, backend)
        if r is None:
            continue
        check(r, x, name, op)
        assert type(r.value) is (bool if name == "bool" and op not in ("sum", "prod") else float if name in FLOAT16 else int)


@pytest.mark.parametrize("backend", host_backends(exact=True))
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_exact_sums_round_once_to_the_type(rng, backend, name):
    _, _, largest = FLOAT16[name]
    for n in (0, 1, 100, int(rng.integers(1, 1 << 16))):
        x = ((rng.random(n) - 0.5) * 2.0 ** rng.integers(-20, 12, n)).astype(numpy_dtype(name))
        if n >= 3:  # the largest value and its negation, and the sum near the type's last binade
            x[0], x[1] = largest, -largest
        want = exact_sum(x, name)
        got = xreduce.sum(x, backend=backend, accuracy="exact")
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (got, want)


def test_f16_sums_overflow_as_ieee_does():
    x = numpy.full(3, 32752.0, dtype=numpy.float16)  # 98256: past 65504
    assert xreduce.sum(x) == math.inf
    assert xreduce.sum(x, accuracy="exact") == math.inf
    edge = numpy.array([65504.0, 8.0], dtype=numpy.float16)  # 65512: below the tie at 65520
    assert xreduce.sum(edge, accuracy="exact") == 65504.0
    tie = numpy.array([65504.0, 16.0], dtype=numpy.float16)  # 65520: the tie rounds to even, past the range
    assert xreduce.sum(tie, accuracy="exact") == math.inf


def test_bool_counts_and_logic(rng):
    x = rng.random(100_001) < 0.3
    assert xreduce.sum(x) == int(x.sum())
    assert xreduce.min(x) is bool(x.all()) and xreduce.max(x) is bool(x.any())
    assert xreduce.argmax(x) == int(numpy.argmax(x)) and xreduce.argmin(x) == int(numpy.argmin(x))
    assert xreduce.prod(numpy.ones(10, dtype=bool)) == 1 and xreduce.prod(x) == 0


def test_bfloat16_views_are_read(rng):
    x = rng.random(4096).astype(ml_dtypes.bfloat16)
    total = sum((Fraction(float(v)) for v in x.astype(numpy.float64).tolist()), Fraction(0))
    assert xreduce.sum(x, accuracy="exact") == round_to(total, "bfloat16")
    assert xreduce.max(x[::2], copy=True) == float(x[::2].astype(numpy.float64).max())


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("dtype", ["float32", numpy.float64, numpy.dtype("float32"), float])
def test_dtype_asks_a_wider_result(rng, name, dtype):
    # Rounded once to the type asked: an f16 sum past 65504 is finite as float32.
    for n in (1, 1000, 70_000, int(rng.integers(1, 1 << 17))):
        x = (rng.random(n) * 4).astype(numpy_dtype(name))
        want = sum((Fraction(float(v)) for v in x.astype(numpy.float64).tolist()), Fraction(0))
        wide = numpy.dtype(dtype if dtype is not float else numpy.float64)
        got = xreduce.sum(x, dtype=dtype)
        magnitudes = Fraction(float(numpy.abs(x.astype(numpy.float64)).sum()))  # all positive: exact enough for a bound
        assert abs(Fraction(got) - want) <= Fraction(64 * 2.0**-23) * magnitudes + Fraction(float(numpy.finfo(wide).eps)) * abs(want)
        assert numpy.isfinite(got)
        assert xreduce.sum(x, dtype=dtype, accuracy="exact") == round_wide(want, wide)


def test_dtype_refusals():
    x = numpy.ones(10, dtype=numpy.float32)
    with pytest.raises(xreduce.Error) as e:
        xreduce.sum(x, dtype="float16")  # narrower than the elements
    assert e.value.code == "invalid_argument"
    with pytest.raises(xreduce.Error):
        xreduce.max(x, dtype="float64")  # an extreme keeps its type
    with pytest.raises(ValueError, match="not an element type"):
        xreduce.sum(x, dtype="complex64")
    with pytest.raises(ValueError, match="validate"):
        xreduce.validate(x, "sum", dtype="float64")
    assert xreduce.sum(numpy.ones(5, dtype=numpy.int32), dtype="int64") == 5  # its own type
