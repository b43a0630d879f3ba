"""xreduce: reductions of large arrays on the best engine (CPU loop, oneTBB, OpenMP, CUDA).

Arrays are read in place, with no copies: numpy, PyTorch, CuPy, JAX or anything with
``__dlpack__`` or the buffer protocol, in host memory or in CUDA device memory::

    import numpy, xreduce
    x = numpy.random.default_rng(1).random(1 << 24, dtype=numpy.float32)
    xreduce.sum(x)                        # the best backend here, by size and residency
    xreduce.sum(x, accuracy="exact")      # the exact sum, rounded once: the same bits everywhere
    xreduce.reduce(x, "argmax")           # Result(value=..., index=..., backend=..., seconds=...)
    print(xreduce.validate(x, "sum"))     # every backend against the exact reference
"""

from ._core import (
    Backend,
    Config,
    Error,
    Result,
    ValidationReport,
    ValidationRow,
    __version__,
    argmax,
    argmin,
    backends,
    config,
    max,
    min,
    prod,
    reduce,
    sum,
    validate,
)

__all__ = [
    "Backend",
    "Config",
    "Error",
    "Result",
    "ValidationReport",
    "ValidationRow",
    "__version__",
    "argmax",
    "argmin",
    "backends",
    "config",
    "max",
    "min",
    "prod",
    "reduce",
    "sum",
    "validate",
]
