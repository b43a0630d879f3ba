"""Reductions of Dask arrays, chunk by chunk on the workers, with results that do not depend on
the chunking where exactness is asked for.

Each function takes a ``dask.array.Array`` and returns one (call ``.compute()``), built on
``dask.array.reduction`` (chunk, combine, aggregate)::

    import dask.array as da, xreduce.dask
    x = da.random.random(1 << 26, chunks=1 << 22).astype("float32")
    xreduce.dask.sum(x, accuracy="exact").compute()   # the same bits for any chunking
    xreduce.dask.var(x, axis=0, correction=1).compute()

How the partials combine:

- Each chunk is reduced by xreduce on its worker (numpy chunks on the CPU, CuPy chunks on their
  GPU), with ``threads=1`` unless told otherwise: Dask already runs one task per worker thread.
  The partials, and the results, are numpy arrays (a dask array of numpy chunks).
- ``accuracy="exact"`` (float sum, mean, var, std): each chunk hands on the exact partial of its
  sum (and of its squares), 72 int64 words per result; the partials add exactly, in any order,
  and are rounded once at the end. The result is the exact value rounded once: the same bits for
  every chunking, number of workers and order of the combine.
- Standard sums, products and means: partials in float64, added by numpy, rounded to the
  result's type at the end. var and std: each chunk's count, mean and sum of squared deviations
  (float64), combined by Chan, Golub and LeVeque's update. norm2 and logsumexp: the partial
  norms scaled by their largest, the partial logsumexps around their maximum.
- argmin, argmax (and nan*): each chunk's extreme and its index in the whole array (flattened in
  C order for ``axis=None``); the combine keeps the lowest index among equal extremes, and the
  first NaN. ``axis`` is an int or None, as Dask's own.
- min, max, nanmin, nanmax, any, all, count_nonzero, norminf: combined with numpy's own.
- A reduction to one result combines 16 partials a task (``split_every``, Dask's default is 4):
  its partials are a few bytes, and fewer tasks leave less to schedule.

The partials are plain numpy arrays (in dicts), which Dask moves between worker processes.
Results follow ``xreduce``'s semantics table: result types, NaN rules, the correction of var
and std, ValueError for the nanargmin of an all-NaN slice. ``dask``, ``distributed`` (for a
cluster) are optional dependencies: ``pip install "xreduce[dask]"``.
"""

import builtins
import functools
import importlib
import math
import operator
import typing

import numpy

import xreduce

from . import _core

try:
    import dask.array as _da
    from dask.array.core import _concatenate2
    from dask.array.reductions import arg_reduction, reduction
    from dask.utils import deepmap
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError("xreduce.dask needs dask: pip install 'dask[array]' (and distributed for a cluster)") from error

_WORDS = 72  # ExactSum's words: the exact partial of one result
_WIDE_TREE = 16  # split_every of a reduction to one result


# --- helpers ------------------------------------------------------------------------------------


def _axes(axis, ndim):
    """numpy's axis (None, an int, a tuple) as a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int) or hasattr(axis, "__index__"):
        axis = (axis,)
    out = []
    for a in axis:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise numpy.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"xreduce.dask: axis {axis} names an axis twice")
    return tuple(sorted(out))


def _host(a):
    """A numpy array of `a`: the partials live on the host (a CuPy chunk's results are copied
    there, a few values each; its exact partials' words are made from a host copy of it)."""
    return a.get() if hasattr(a, "get") and not isinstance(a, numpy.ndarray) else numpy.asarray(a)


def _gather(parts, axis):
    """Nested lists of partial dicts (a combine's input) as one dict of arrays, concatenated along `axis`."""
    if isinstance(parts, dict):
        return parts
    first = parts
    while isinstance(first, list):
        first = first[0]
    return {key: _concatenate2(deepmap(lambda p, key=key: p[key], parts), axes=axis) for key in first}


def _is_float(dtype):
    return numpy.dtype(dtype).kind == "f" or numpy.dtype(dtype).name == "bfloat16"


def _result_dtype(op, dtype, asked, **options):
    """The dtype xreduce gives `op` of `dtype` (with `asked` as its dtype=), from a one-element array."""
    probe = numpy.ones((1,), dtype=dtype)
    return getattr(xreduce, op)(probe, axis=0, keepdims=True, dtype=asked, **options).dtype


def _call(op, block, **kwargs):
    """xreduce's `op` of `block`, looked up where it runs: the tasks Dask ships to its workers name
    xreduce's functions rather than hold them (the extension's functions do not pickle). A GPU
    chunk whose op the GPU backends do not have (nanargmin or nanargmax over rows, today) is reduced from a host copy."""
    if not isinstance(block, numpy.ndarray) and hasattr(block, "__cuda_array_interface__"):
        # A CuPy chunk cut from a larger array is a strided view: the GPU backends read it packed.
        block = importlib.import_module(type(block).__module__.split(".")[0]).ascontiguousarray(block)
    try:
        return getattr(xreduce, op)(block, **kwargs)
    except xreduce.Error as error:
        if error.code not in ("unsupported", "unavailable") or isinstance(block, numpy.ndarray):
            raise
    return getattr(xreduce, op)(_host(block), **kwargs)


def _reduced_size(block, axis):
    return math.prod(block.shape[a] for a in axis)


def _kept_shape(block, axis):
    """`block`'s shape with the axes of `axis` reduced to extent 1 (numpy's keepdims)."""
    return tuple(1 if a in axis else e for a, e in enumerate(block.shape))


# --- the generic reduction: chunk -> partial dict; merge; finish --------------------------------
#
# The tasks name module-level functions and a Plan (plain values): Dask ships each task to its
# worker pickled, and a closure would be pickled whole for every task.


class Plan(typing.NamedTuple):
    """How one call reduces: `kind` is fold, moments or exact; `dtype` the result's type."""

    op: str
    kind: str
    dtype: numpy.dtype
    partial: object  # the chunk results' dtype= (float64 for float sums and statistics), or None
    how: dict  # each chunk's keywords: backend, threads, settings, accuracy
    correction: float = 0.0


def _on_chunk(plan, block, axis=None, keepdims=None, computing_meta=False):
    # Dask's blockwise asks a function that takes computing_meta for its meta: the block's own.
    return block if computing_meta else _KINDS[plan.kind].chunk(plan, block, axis)


def _merge(plan, parts, axis):
    return _KINDS[plan.kind].merge(plan, _gather(parts, axis), axis)


def _on_combine(plan, parts, axis=None, keepdims=None):
    return _merge(plan, parts, axis)


def _on_aggregate(plan, parts, axis=None, keepdims=False):
    out = numpy.asarray(_KINDS[plan.kind].finish(plan, _merge(plan, parts, axis)))
    if out.dtype != plan.dtype:  # bfloat16 comes back from the extension as its uint16 bits
        out = out.view(plan.dtype) if out.dtype.itemsize == plan.dtype.itemsize else out.astype(plan.dtype)
    return out if keepdims else out.squeeze(axis=axis)


def _tree_width(x, axis, split_every):
    """How many partials a combine takes: the caller's, else 16 where each partial is one result
    (a few bytes, 576 for an exact sum: a wide tree has fewer tasks to schedule), else Dask's own."""
    return split_every if split_every is not None or len(axis) < x.ndim else _WIDE_TREE


def _reduce(x, plan, axis, keepdims, split_every):
    """dask.array.reduction over partial dicts: each kind's chunk and merge give dicts of arrays
    with the reduced axes kept (extent 1); its finish gives the result. The result's meta is
    given, so Dask calls no merge or finish on meta arrays."""
    split_every = _tree_width(x, axis, split_every)
    kept = x.ndim if keepdims else x.ndim - len(axis)
    name = f"xreduce-{plan.op}"
    return reduction(x, functools.partial(_on_chunk, plan), functools.partial(_on_aggregate, plan), axis=axis,
                     keepdims=keepdims, dtype=plan.dtype, split_every=split_every, name=name,
                     combine=functools.partial(_on_combine, plan), concatenate=False,
                     meta=numpy.empty((0,) * kept, dtype=plan.dtype))


def _check_extremes_of_empty(x, axis, op):
    if builtins.any(x.shape[a] == 0 for a in axis) and math.prod(x.shape[a] for a in range(x.ndim) if a not in axis) > 0:
        raise ValueError(f"xreduce.dask.{op}: an empty slice has no {op} (zero-size reduction without identity)")


# --- exact partials -----------------------------------------------------------------------------


def _exact_words(block, axis, squares, how):
    """The exact partials of `block`'s sums over `axis` (kept with extent 1) and of its squares:
    int64 arrays of shape (kept..., 72)."""
    kept_shape = _kept_shape(block, axis)
    if len(axis) == block.ndim:  # one result: the whole chunk, read flat (the core sums the squares too)
        # A CuPy chunk's exact sum runs on its GPU; the squares' on the host (the GPU backends have no exact sum of squares).
        flat = (_host(block) if squares else block).reshape(-1)
        words = _core._exact_sums(flat, squares=squares, backend=how.get("backend"), threads=how.get("threads", 1))
        return [w.reshape(kept_shape + (_WORDS,)) for w in words]
    # Reduced axes first, kept ones last: records, one exact partial a column.
    front = numpy.moveaxis(_host(block), axis, tuple(range(len(axis))))
    rows, width = _reduced_size(block, axis), math.prod(kept_shape)
    records = numpy.ascontiguousarray(front).reshape(rows, width)

    def column_sums(a):
        if rows == 0 or width == 0:
            return numpy.zeros((width, _WORDS), numpy.int64)
        return _core._exact_sums(a, width=width, backend=how.get("backend"), threads=how.get("threads", 1))

    out = [column_sums(records)]
    if squares:
        out.append(_exact_squares(records, column_sums))
    return [w.reshape(kept_shape + (_WORDS,)) for w in out]


def _exact_squares(records, column_sums):
    """The exact partials of the squares of `records`' columns: an f32 (or 16-bit) square is a
    double exactly; an f64's is its double and the remainder of Dekker's two-product."""
    if records.dtype != numpy.float64:
        return column_sums(numpy.square(records.astype(numpy.float64)))
    magnitude = numpy.abs(records)
    finite = numpy.isfinite(magnitude) & (magnitude != 0)
    if numpy.any(finite & ((magnitude < 2.0**-480) | (magnitude > 2.0**511))):
        error = xreduce.Error("an exact var or std of f64 values below 2^-480 or above 2^511 in magnitude "
                              "(their squares leave the exact partial's range): accuracy 'standard' takes them")
        error.code = "unsupported"  # as the core says it
        raise error
    high = records * records
    split = records * 134217729.0  # 2^27 + 1: Veltkamp's split into two 26-bit halves
    top = split - (split - records)
    bottom = records - top
    with numpy.errstate(invalid="ignore", over="ignore"):
        low = ((top * top - high) + 2.0 * top * bottom) + bottom * bottom
    low = numpy.where(numpy.isfinite(high), low, 0.0)
    words = column_sums(high) + column_sums(low)
    _core._exact_normalize(words)
    return words


def _exact_chunk(plan, block, axis):
    words = _exact_words(block, axis, plan.op in ("var", "std"), plan.how)
    return {"s": words[0], "q": words[1]} if len(words) == 2 else {"s": words[0]}


def _exact_merge(plan, parts, axis):
    out = {}
    for key, words in parts.items():
        total = numpy.ascontiguousarray(words.sum(axis=axis, keepdims=True))
        _core._exact_normalize(total)  # normalized partials: up to 2^31 of them add without overflow
        out[key] = total
    return out


def _exact_finish(plan, parts):
    if plan.op == "sum":
        return _core._exact_round(parts["s"], plan.dtype.name)
    return _core._exact_moment(plan.op, parts["s"], parts.get("q"), plan.correction, plan.dtype.name)


# --- the standard reductions -------------------------------------------------------------------


def _wide(dtype):
    """Partials of float sums, products and statistics in float64; others in the op's own type."""
    return numpy.float64 if _is_float(dtype) else None


def _fold_chunk(plan, block, axis):
    if _reduced_size(block, axis) == 0:
        return {"v": _identity(plan.op, block, axis, plan.partial or plan.dtype)}
    return {"v": _host(_call(plan.op, block, axis=axis, keepdims=True, dtype=plan.partial, **plan.how))}


def _fold_merge(plan, parts, axis):
    return {"v": _FOLDS[plan.op][0](parts["v"], axis=axis, keepdims=True)}


def _fold_finish(plan, parts):
    return parts["v"].astype(plan.dtype, copy=False)


def _identity(op, block, axis, dtype):
    """The partial of a chunk with no element in the reduced axes (a chunk of extent 0)."""
    shape = _kept_shape(block, axis)
    dtype = numpy.dtype(dtype)
    if op in ("min", "nanmin", "max", "nanmax"):
        biggest = numpy.inf if dtype.kind == "f" else numpy.iinfo(dtype).max if dtype.kind in "iu" else True
        lowest = -numpy.inf if dtype.kind == "f" else numpy.iinfo(dtype).min if dtype.kind in "iu" else False
        value = biggest if op.endswith("min") else lowest
    else:
        value = {"prod": 1, "nanprod": 1, "all": True}.get(op, 0)
    return numpy.full(shape, value, dtype=dtype)


def _norm2_merge(v, axis, keepdims):
    """Partial 2-norms combined as LAPACK scales them: by their largest, so nothing overflows."""
    top = numpy.max(v, axis=axis, keepdims=True)
    with numpy.errstate(invalid="ignore", divide="ignore"):
        scaled = top * numpy.sqrt(numpy.sum(numpy.square(v / top), axis=axis, keepdims=True))
    out = numpy.where((top == 0) | numpy.isinf(top), top, scaled)
    return out if keepdims else out.squeeze(axis=axis)


def _logsumexp_merge(v, axis, keepdims):
    """Partial logsumexps combined around their maximum."""
    top = numpy.max(v, axis=axis, keepdims=True)
    with numpy.errstate(invalid="ignore", divide="ignore", over="ignore"):
        shifted = top + numpy.log(numpy.sum(numpy.exp(v - top), axis=axis, keepdims=True))
    out = numpy.where(numpy.isfinite(top), shifted, top)
    return out if keepdims else out.squeeze(axis=axis)


def _fmin(v, axis, keepdims):
    return numpy.fmin.reduce(v, axis=axis, keepdims=keepdims)


def _fmax(v, axis, keepdims):
    return numpy.fmax.reduce(v, axis=axis, keepdims=keepdims)


# op -> (how its partials combine, whether they travel in float64 for float input)
_FOLDS = {
    "sum": (numpy.sum, True),
    "nansum": (numpy.sum, True),
    "sumsq": (numpy.sum, True),
    "norm1": (numpy.sum, True),
    "prod": (numpy.prod, True),
    "nanprod": (numpy.prod, True),
    "min": (numpy.min, False),
    "max": (numpy.max, False),
    "nanmin": (_fmin, False),
    "nanmax": (_fmax, False),
    "norminf": (numpy.max, False),
    "any": (numpy.any, False),
    "all": (numpy.all, False),
    "count_nonzero": (numpy.sum, False),
    "norm2": (_norm2_merge, True),
    "logsumexp": (_logsumexp_merge, True),
}


# mean, var, std and their nan* forms: each chunk's count, mean and (var, std) sum of squared
# deviations, in float64, combined by Chan, Golub and LeVeque's update.


def _moments_chunk(plan, block, axis):
    prefix = "nan" if plan.op.startswith("nan") else ""
    kept = _kept_shape(block, axis)
    if prefix:
        n = _host(_call("sum", block == block, axis=axis, keepdims=True, **plan.how)).astype(numpy.float64)
    else:
        n = numpy.full(kept, float(_reduced_size(block, axis)))
    if _reduced_size(block, axis) == 0:
        return {"n": n, "mean": numpy.zeros(kept), "m2": numpy.zeros(kept)}
    mean = _host(_call(prefix + "mean", block, axis=axis, keepdims=True, dtype=plan.partial, **plan.how))
    parts = {"n": n, "mean": numpy.where(n > 0, mean.astype(numpy.float64), 0.0)}
    if not plan.op.endswith("mean"):
        var = _host(_call(prefix + "var", block, axis=axis, keepdims=True, dtype=plan.partial, **plan.how))
        parts["m2"] = numpy.where(n > 0, var.astype(numpy.float64) * n, 0.0)
    return parts


def _moments_merge(plan, parts, axis):
    n = parts["n"].sum(axis=axis, keepdims=True)
    with numpy.errstate(invalid="ignore", divide="ignore"):
        mean = numpy.where(n > 0, (parts["n"] * parts["mean"]).sum(axis=axis, keepdims=True) / n, 0.0)
        out = {"n": n, "mean": mean}
        if "m2" in parts:
            spread = numpy.where(parts["n"] > 0, parts["n"] * numpy.square(parts["mean"] - mean), 0.0)
            out["m2"] = parts["m2"].sum(axis=axis, keepdims=True) + spread.sum(axis=axis, keepdims=True)
    return out


def _moments_finish(plan, parts):
    n = parts["n"]
    with numpy.errstate(invalid="ignore", divide="ignore"):
        if plan.op.endswith("mean"):
            return numpy.where(n > 0, parts["mean"], numpy.nan)
        dof = n - plan.correction
        out = numpy.where(dof > 0, parts["m2"] / numpy.where(dof > 0, dof, 1.0), numpy.nan)
        return numpy.sqrt(out) if plan.op.endswith("std") else out


class _Kind(typing.NamedTuple):
    """A kind of partial: a chunk's, two or more merged, and the result from them."""

    chunk: typing.Callable
    merge: typing.Callable
    finish: typing.Callable


_KINDS = {
    "fold": _Kind(_fold_chunk, _fold_merge, _fold_finish),
    "moments": _Kind(_moments_chunk, _moments_merge, _moments_finish),
    "exact": _Kind(_exact_chunk, _exact_merge, _exact_finish),
}


# --- argmin and argmax --------------------------------------------------------------------------


def _arg_chunk(op, how, block, axis, offset_info):
    """A chunk's extreme and its index in the whole array (dask's arg_chunk, with xreduce)."""
    arg_axis = None if len(axis) == block.ndim or block.ndim == 1 else axis[0]
    host = _host(block)
    if host.size == 0:  # no element here: an extreme every element beats, at an index past them all
        shape = (1,) * host.ndim if arg_axis is None else tuple(1 if a == arg_axis else e for a, e in enumerate(host.shape))
        out = numpy.empty(shape, dtype=[("vals", host.dtype), ("arg", numpy.int64)])
        out["vals"], out["arg"] = _identity("min" if op.endswith("min") else "max", host, range(host.ndim), host.dtype).reshape(-1)[0], numpy.iinfo(numpy.int64).max
        return out
    try:
        index = _host(_call(op, block, axis=arg_axis, keepdims=True, **how)).astype(numpy.int64)
        if arg_axis is None:
            values = host.reshape(-1)[index.reshape(-1)].reshape(index.shape)
        else:
            values = numpy.take_along_axis(host, index, axis=arg_axis)
    except ValueError:  # nanargmin/nanargmax with an all-NaN slice in this chunk: its value is NaN
        values, index = _nan_extreme(host, arg_axis, op.endswith("max"))
    if arg_axis is None:
        offset, total_shape = offset_info
        within = numpy.unravel_index(int(index.reshape(-1)[0]), host.shape)
        index[...] = numpy.ravel_multi_index(tuple(o + i for o, i in zip(offset, within)), total_shape)
    else:
        index += offset_info
    out = numpy.empty(values.shape, dtype=[("vals", values.dtype), ("arg", numpy.int64)])
    out["vals"], out["arg"] = values, index
    return out


def _nan_extreme(host, axis, is_max):
    """The smallest (largest) value skipping NaN and its first index, NaN where all are NaN."""
    data = host.reshape(-1) if axis is None else host
    reduce_axis = 0 if axis is None else axis
    best = (numpy.fmax if is_max else numpy.fmin).reduce(data, axis=reduce_axis, keepdims=True)
    index = numpy.argmax(data == best, axis=reduce_axis, keepdims=True).astype(numpy.int64)
    if axis is None:
        shape = (1,) * host.ndim
        return best.reshape(shape), index.reshape(shape)
    return best, index


def _arg_pick(op, data, axis=None, keepdims=False, **kwargs):
    """The partials' extreme, and the lowest index among equal extremes (the first NaN's, if any,
    unless NaN is skipped)."""
    values, index = data["vals"], data["arg"]
    arg_axis = None if len(axis) == values.ndim or values.ndim == 1 else axis[0]
    flat = arg_axis is None
    if flat:
        values, index, arg_axis = values.reshape(-1), index.reshape(-1), 0
    is_max, skip_nan = op.endswith("max"), op.startswith("nan")
    if skip_nan:
        best = (numpy.fmax if is_max else numpy.fmin).reduce(values, axis=arg_axis, keepdims=True)
    else:
        best = (numpy.max if is_max else numpy.min)(values, axis=arg_axis, keepdims=True)
    hit = values == best
    if values.dtype.kind == "f":
        hit |= numpy.isnan(values) & numpy.isnan(best)
    chosen = numpy.min(numpy.where(hit, index, numpy.iinfo(numpy.int64).max), axis=arg_axis, keepdims=True)
    if flat:
        shape = (1,) * data.ndim if keepdims else ()
        best, chosen = best.reshape(shape), chosen.reshape(shape)
    elif not keepdims:
        best, chosen = best.squeeze(axis=arg_axis), chosen.squeeze(axis=arg_axis)
    out = numpy.empty(best.shape, dtype=[("vals", best.dtype), ("arg", numpy.int64)])
    out["vals"], out["arg"] = best, chosen
    return out


def _arg_combine(op, data, axis=None, **kwargs):
    return _arg_pick(op, data, axis=axis, keepdims=True)


def _arg_aggregate(op, data, axis=None, keepdims=False, **kwargs):
    picked = _arg_pick(op, data, axis=axis, keepdims=keepdims)
    if op.startswith("nan") and picked["vals"].dtype.kind == "f" and numpy.any(numpy.isnan(picked["vals"])):
        raise ValueError(f"xreduce.dask.{op}: All-NaN slice encountered")
    return picked["arg"]


def _arg_reduction(x, op, axis, keepdims, split_every, how):
    if axis is not None and not isinstance(axis, int):
        raise TypeError(f"xreduce.dask.{op}: axis is an int or None (as Dask's own), not {axis!r}")
    _check_extremes_of_empty(x, _axes(axis, x.ndim), op)
    if x.size == 0:
        raise ValueError(f"xreduce.dask.{op}: an empty array has no {op}")
    return arg_reduction(x, functools.partial(_arg_chunk, op, how), functools.partial(_arg_combine, op),
                         functools.partial(_arg_aggregate, op), axis=axis, keepdims=keepdims,
                         split_every=_tree_width(x, _axes(axis, x.ndim), split_every))


# --- the public functions -----------------------------------------------------------------------


def _how(how):
    """The keywords handed to each chunk's xreduce call: threads=1 unless given."""
    unknown = set(how) - {"backend", "threads", "settings"}
    if unknown:
        raise TypeError(f"xreduce.dask: unknown keyword(s) {sorted(unknown)}; these take backend=, threads= and settings=")
    return {"threads": 1, **how}


def _make(op):
    is_arg = op in ("argmin", "argmax", "nanargmin", "nanargmax")
    moments = op in ("mean", "var", "std", "nanmean", "nanvar", "nanstd")

    def reduce(x, /, *, axis=None, dtype=None, keepdims=False, accuracy=None, correction=0.0, split_every=None, **how):
        x = x if isinstance(x, _da.Array) else _da.asarray(x)
        how = _how(how)
        if correction != 0 and op not in ("var", "std", "nanvar", "nanstd"):
            raise ValueError(f"xreduce.dask: correction= is for var and std (and nanvar, nanstd), not {op}")
        if accuracy not in (None, "standard", "exact"):
            raise ValueError(f"xreduce.dask: unknown accuracy {accuracy!r}; choose standard or exact")
        if is_arg:
            return _arg_reduction(x, op, axis, keepdims, split_every, how)
        axes = _axes(axis, x.ndim)
        if op in ("min", "max", "nanmin", "nanmax"):
            _check_extremes_of_empty(x, axes, op)
            if x.size == 0 and len(axes) == x.ndim:
                raise ValueError(f"xreduce.dask.{op}: an empty array has no {op}")
        exact = (accuracy or xreduce.config.accuracy) == "exact"
        out_dtype = _result_dtype(op, x.dtype, dtype, correction=correction)
        if exact and op in ("sum", "mean", "var", "std") and _is_float(x.dtype):
            plan = Plan(op, "exact", out_dtype, None, how, correction)
        else:
            # exact asked of another op: each chunk gets the core's own answer (exact already, or refused)
            chunk_how = {**how, "accuracy": "exact"} if exact else how
            if moments:
                plan = Plan(op, "moments", out_dtype, _wide(x.dtype), chunk_how, correction)
            else:
                plan = Plan(op, "fold", out_dtype, _wide(x.dtype) if _FOLDS[op][1] else None, chunk_how)
        return _reduce(x, plan, axes, keepdims, split_every)

    reduce.__name__ = reduce.__qualname__ = op
    reduce.__doc__ = (f"xreduce.{op} of a dask array, chunk by chunk: a dask array (``.compute()`` it). Takes "
                      f"axis=, keepdims=, dtype=, accuracy= and correction= as xreduce.{op} does, split_every= "
                      f"as dask.array.reduction, and backend=, threads= (default 1: one per Dask task) and "
                      f"settings= for each chunk's call. See the module's documentation for how the partials combine.")
    return reduce


_OPS = ("sum", "prod", "min", "max", "argmin", "argmax", "sumsq", "mean", "var", "std", "norm1", "norm2",
        "norminf", "logsumexp", "count_nonzero", "any", "all", "nansum", "nanprod", "nanmin", "nanmax",
        "nanargmin", "nanargmax", "nanmean", "nanvar", "nanstd")
for _op in _OPS:
    globals()[_op] = _make(_op)
del _op


def var_mean(x, /, *, axis=None, correction=0.0, keepdims=False, **how):
    """``(var(x), mean(x))`` of a dask array, as two dask arrays (``torch.var_mean``'s order)."""
    return (var(x, axis=axis, correction=correction, keepdims=keepdims, **how),  # noqa: F821 - made above
            mean(x, axis=axis, keepdims=keepdims, **how))  # noqa: F821


__all__ = list(_OPS) + ["var_mean"]
