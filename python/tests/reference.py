"""Exact references in Python's own arithmetic (integers and fractions), sharing no code with the
library they check."""

import math
from fractions import Fraction

import numpy

_WIDTH = {numpy.dtype("int32"): 64, numpy.dtype("int64"): 64, numpy.dtype("uint32"): 64, numpy.dtype("uint64"): 64}


def round_to(value: Fraction, dtype) -> float:
    """`value` rounded once to the nearest `dtype` (float32 or float64), ties to even; inf past the
    largest finite value."""
    dtype = numpy.dtype(dtype)
    info = numpy.finfo(dtype)
    limit = Fraction(float(info.max)) + Fraction(2) ** (int(info.maxexp) - int(info.nmant) - 2)  # max + half an ulp
    if value >= limit:
        return math.inf
    if value <= -limit:
        return -math.inf
    guess = dtype.type(float(value))  # within an ulp or so: float() rounds once more
    candidates = {guess, numpy.nextafter(guess, dtype.type(math.inf)), numpy.nextafter(guess, dtype.type(-math.inf))}
    candidates = [c for c in candidates if math.isfinite(c)]

    def key(c):
        bits = int(numpy.array(c, dtype=dtype).view(numpy.uint32 if dtype.itemsize == 4 else numpy.uint64))
        return (abs(Fraction(float(c)) - value), bits & 1)  # nearest, then the even significand

    return float(min(candidates, key=key))


def exact_sum(x, rounded=None) -> float:
    """The exact sum of floats rounded once (by `rounded`, a function of the Fraction; by default
    to x's own type); NaN, infinities and signed zeros as the library's table says."""
    values = x.ravel().tolist()
    if any(math.isnan(v) for v in values) or (math.inf in values and -math.inf in values):
        return math.nan
    if math.inf in values:
        return math.inf
    if -math.inf in values:
        return -math.inf
    total = sum((Fraction(v) for v in values), Fraction(0))
    if total == 0:
        return -0.0 if values and all(math.copysign(1, v) < 0 and v == 0 for v in values) else 0.0
    return rounded(total) if rounded else round_to(total, x.dtype)


def integer_result(value: int, dtype) -> int:
    """An integer sum or product as the library returns it: modulo 2^64, as i64 for signed input."""
    value %= 2**64
    if numpy.dtype(dtype).kind == "i" and value >= 2**63:
        value -= 2**64
    return value


def reference(x, op):
    """(value, index) of op over the flat array x; index None except for argmin/argmax."""
    flat = x.ravel()
    values = flat.tolist()
    floating = flat.dtype.kind == "f"
    if op == "sum":
        return (exact_sum(flat) if floating else integer_result(sum(values), flat.dtype)), None
    if op == "prod":
        if floating:
            if any(math.isnan(v) for v in values):
                return math.nan, None
            return float(math.prod(Fraction(v) for v in values)) if all(map(math.isfinite, values)) else None, None
        return integer_result(math.prod(values), flat.dtype), None
    nan = [i for i, v in enumerate(values) if floating and math.isnan(v)]
    if op in ("min", "max"):
        return (math.nan if nan else (min(values) if op == "min" else max(values))), None
    if nan:
        return math.nan, nan[0]
    best = min(values) if op == "argmin" else max(values)
    return best, values.index(best)
