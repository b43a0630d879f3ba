"""Reductions of one array spread over the ranks of an mpi4py communicator: each rank reduces its
own shard (any backend, CPU or GPU), and one collective combines the partials, in the wire format
and with the combine of the C++ library's ``xreduce::mpi`` (the same semantics table)::

    from mpi4py import MPI
    import numpy, xreduce.mpi
    shard = numpy.random.default_rng(MPI.COMM_WORLD.rank).random(1 << 20)
    print(xreduce.mpi.allreduce(MPI.COMM_WORLD, shard, "sum", accuracy="exact").value)

- The shards are the whole array in rank order: rank r's elements follow rank r-1's. Any shard
  may be empty; an empty whole gives sum 0, prod 1, and xreduce.Error (code empty_input) for min,
  max, argmin and argmax.
- argmin/argmax: the index in the whole array, the lowest among equal extremes; the first NaN wins.
- ``accuracy="exact"`` float sums: the exact sum rounded once, the same bits for any number of
  ranks and any split. Standard float sums and products: each rank's partial in double, combined
  in the order MPI chooses.
- A shard is a flat array, records (``width=``: rows of ``width`` values reduced column by
  column), or an N-D array split along axis 0 with ``axis=`` (and ``keepdims=``) naming reduced
  axes that include 0: the Result's value (and indices, for argmin/argmax along the reduced axes)
  is then a numpy array of the whole's result shape; an axis= that keeps axis 0 is refused
  (xreduce.Error, code unsupported) on every rank. Every op but nanmean, nanvar and nanstd
  (xreduce.Error, code unsupported): the statistics combine as the op table combines them (mean,
  var and std by Chan's update from each rank's mean and variance, logsumexp around the larger
  maximum, norm2 scaled); with
  ``accuracy="exact"``, a float mean, var or std combines the ranks' exact partials of x and of x
  squared and is the exact value rounded once, the same bits for any split.
- A failure on a rank (an unknown backend, an array it cannot read) never leaves the others
  waiting: allreduce raises the same xreduce.Error on every rank, naming the lowest failing rank
  and its reason; reduce raises it on that rank and on the root.

Every rank must call with the same op, dtype, width (or axis and the kept extents) and
accuracy. mpi4py is an optional dependency: ``pip install "xreduce[mpi]"``.
"""

import numpy

from . import _core

try:
    from mpi4py import MPI
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError("xreduce.mpi needs mpi4py: pip install mpi4py") from error

_REASON_BYTES = 512  # the failing rank's reason, as xreduce::mpi broadcasts it
_types = {}
_operator = None


def _buffer_type(size):
    """A contiguous byte type of `size`: one partial buffer is one element, which MPI never splits."""
    if size not in _types:
        _types[size] = MPI.BYTE.Create_contiguous(size).Commit()
    return _types[size]


def _combine(inbuf, inoutbuf, datatype):
    size = datatype.Get_size()
    lower = numpy.frombuffer(inbuf, dtype=numpy.uint8)
    into = numpy.frombuffer(inoutbuf, dtype=numpy.uint8)
    for start in range(0, into.size, size):
        _core._combine_partials(lower[start:start + size], into[start:start + size])


def _partial_op():
    # Non-commutative: MPI then combines in rank order, which places each rank's argmin/argmax
    # index after the records of the ranks before it.
    global _operator
    if _operator is None:
        _operator = MPI.Op.Create(_combine, commute=False)
    return _operator


def _local(comm, x, op, with_message, how):
    return _core._rank_partials(x, op, comm.Get_rank(), with_message, **how)


def allreduce(comm, x, op="sum", /, *, backend=None, accuracy=None, dtype=None, width=1, threads=0, settings=None,
              correction=0.0, axis=None, keepdims=False):
    """The whole array's xreduce.Result on every rank of ``comm``: ``x`` is this rank's shard (any
    array xreduce reads), ``op`` a name of xreduce.ops but nanmean, nanvar and nanstd. ``backend``,
    ``accuracy``, ``dtype``, ``width``, ``threads``, ``settings``, ``correction``, ``axis`` (which
    must include 0) and ``keepdims`` as for xreduce.reduce; the Result's ``backend`` and
    ``seconds`` are this rank's."""
    how = dict(backend=backend, accuracy=accuracy, dtype=dtype, width=width, threads=threads, settings=settings,
               correction=correction, axis=axis, keepdims=keepdims)
    local = _local(comm, x, op, False, how)
    buffer = local.buffer
    comm.Allreduce(MPI.IN_PLACE, [buffer, 1, _buffer_type(buffer.nbytes)], op=_partial_op())
    reason = ""
    if local.error_code != 0 and local.error_rank >= 0:
        # Every rank knows who failed: the reason comes from there, only now (a failure's cost).
        text = bytearray(_REASON_BYTES)
        if comm.Get_rank() == local.error_rank:
            mine = local.reason.encode()[: _REASON_BYTES - 1]
            text[: len(mine)] = mine
        comm.Bcast([text, MPI.CHAR], root=local.error_rank)
        reason = bytes(text).split(b"\0", 1)[0].decode(errors="replace")
    return local.result(reason, dtype)


def reduce(comm, x, op="sum", root=0, /, *, backend=None, accuracy=None, dtype=None, width=1, threads=0, settings=None,
           correction=0.0, axis=None, keepdims=False):
    """The whole array's xreduce.Result on ``root``, None on the other ranks (one MPI_Reduce).
    Takes what allreduce takes. A failure on a rank raises there and on ``root``."""
    how = dict(backend=backend, accuracy=accuracy, dtype=dtype, width=width, threads=threads, settings=settings,
               correction=correction, axis=axis, keepdims=keepdims)
    local = _local(comm, x, op, True, how)  # the root alone learns of a failure elsewhere: the reason travels in the buffer
    rank = comm.Get_rank()
    received = local.copy() if rank == root else None
    kind = _buffer_type(local.buffer.nbytes)
    comm.Reduce([local.buffer, 1, kind], [received.buffer, 1, kind] if rank == root else None, op=_partial_op(), root=root)
    if rank != root:
        if local.error_code != 0:
            local.result(f"rank {rank}: {local.reason}", dtype)  # raises this rank's own error
        return None
    return received.result("", dtype)


__all__ = ["allreduce", "reduce"]
