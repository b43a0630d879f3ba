"""xreduce: reductions of large arrays on the best engine (CPU loop, oneTBB, OpenMP, CUDA).

Arrays are read in place, with no copies: numpy, PyTorch, CuPy, JAX or anything with
``__dlpack__`` or the buffer protocol, in host memory or in CUDA device memory::

    import numpy, xreduce
    x = numpy.random.default_rng(1).random(1 << 24, dtype=numpy.float32)
    xreduce.sum(x)                        # the best backend here, by size and residency
    xreduce.sum(x, accuracy="exact")      # the exact sum, rounded once: the same bits everywhere
    xreduce.reduce(x, "argmax")           # Result(value=..., index=..., backend=..., seconds=...)
    print(xreduce.validate(x, "sum"))     # every backend against the exact reference
    xreduce.var(x, correction=1)          # statistics: mean, var, std, norms, logsumexp, nan*
    xreduce.reduce_ops(x, ["mean", "std", "max"])   # several ops in one read: {"mean": ..., ...}
"""

import math as _math


from ._core import (
    Backend,
    Config,
    Error,
    Result,
    ValidationReport,
    ValidationRow,
    __version__,
    all,
    any,
    argmax,
    argmin,
    backends,
    config,
    count_nonzero,
    logsumexp,
    max,
    mean,
    min,
    nanargmax,
    nanargmin,
    nanmax,
    nanmean,
    nanmin,
    nanprod,
    nanstd,
    nansum,
    nanvar,
    norm1,
    norm2,
    norminf,
    ops,
    prod,
    reduce,
    reduce_ops,
    std,
    sum,
    sumsq,
    validate,
    var,
)


def _in_one_read(x, names, one_by_one, **call):
    """``reduce_ops(x, names)`` as a tuple in the order of ``names``; where the request cannot be
    one read (an exact mean or variance, a statistic the GPU does not take among several ops, a backend
    without several ops: ``Error`` with code ``unsupported``, or ``unavailable`` from "auto"),
    ``one_by_one()``, which reads x once for each op and raises what a single op would.
    ``dtype=`` goes to one_by_one() straight away: several ops take none."""
    if call.get("dtype") is None:
        try:
            results = reduce_ops(x, names, **call)
            return tuple(results[name] for name in names)
        except Error as e:
            if e.code not in ("unsupported", "unavailable"):
                raise
    return one_by_one()


def var_mean(x, /, *, axis=None, correction=0.0, keepdims=False, **how):
    """The variance and the mean of x, as a tuple ``(var, mean)`` (``torch.var_mean``'s order).

    Takes what ``xreduce.var`` takes (``how``: backend=, accuracy=, dtype=, threads=, ...). One
    read of x where the backend takes both among several ops (the CPU backends, standard
    accuracy, no ``dtype=``: ``xreduce.reduce_ops``); else two, one for each.
    """
    return _in_one_read(
        x,
        ("var", "mean"),
        lambda: (
            var(x, axis=axis, correction=correction, keepdims=keepdims, **how),
            mean(x, axis=axis, keepdims=keepdims, **how),
        ),
        axis=axis,
        correction=correction,
        keepdims=keepdims,
        **how,
    )


def minmax(x, /, *, axis=None, keepdims=False, **how):
    """The minimum and the maximum of x, as a tuple ``(min, max)`` (``torch.aminmax``); NaN if any
    element is NaN. Takes what ``xreduce.min`` takes; one read of x (``xreduce.reduce_ops``) where
    the backend takes several ops, else two.
    """
    return _in_one_read(
        x,
        ("min", "max"),
        lambda: (min(x, axis=axis, keepdims=keepdims, **how), max(x, axis=axis, keepdims=keepdims, **how)),
        axis=axis,
        keepdims=keepdims,
        **how,
    )


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2, **how):
    """The vector norm of x (the Array API's ``linalg.vector_norm``): ``ord`` 1 (the sum of
    ``abs(x)``), 2 (Euclidean, without overflow or underflow) or ``math.inf`` (the largest ``abs(x)``). Takes
    what ``xreduce.sum`` takes; ints and bools give float64.
    """
    if ord == 1:
        return norm1(x, axis=axis, keepdims=keepdims, **how)
    if ord == 2:
        return norm2(x, axis=axis, keepdims=keepdims, **how)
    if ord == _math.inf:
        return norminf(x, axis=axis, keepdims=keepdims, **how)
    raise ValueError(f"xreduce.vector_norm: ord={ord!r}; choose 1, 2 or math.inf")


__all__ = [
    "Backend",
    "Config",
    "Error",
    "Result",
    "ValidationReport",
    "ValidationRow",
    "__version__",
    "all",
    "any",
    "argmax",
    "argmin",
    "backends",
    "config",
    "count_nonzero",
    "logsumexp",
    "max",
    "mean",
    "min",
    "minmax",
    "nanargmax",
    "nanargmin",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "norm1",
    "norm2",
    "norminf",
    "ops",
    "prod",
    "reduce",
    "reduce_ops",
    "std",
    "sum",
    "sumsq",
    "validate",
    "var",
    "var_mean",
    "vector_norm",
]
