"""Run under mpirun by test_mpi.py: each rank reduces its shard of one array through xreduce.mpi
(mpi4py), and checks the whole's result against references in Python's own arithmetic. Exits
non-zero on a failed check; the seed is the first argument, the same on every rank."""

import math
import sys

import numpy
import xreduce
import xreduce.mpi
from mpi4py import MPI
from reference import exact_sum, integer_result, round_to

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
seed = int(sys.argv[1])
rng = numpy.random.default_rng(seed)  # the same draws on every rank: the whole array, and where it is cut


def shard_of(whole, width=1):
    """This rank's part of `whole` (rows of `width`): uneven cuts, some shards empty."""
    rows = len(whole) // width
    cuts = numpy.sort(rng.integers(0, rows + 1, size - 1))
    edges = [0, *cuts.tolist(), rows]
    return whole[edges[rank] * width:edges[rank + 1] * width]


def expect_error(call, code, text):
    try:
        call()
    except xreduce.Error as e:
        assert e.code == code, (e.code, str(e))
        assert text in str(e), str(e)
        return
    raise AssertionError(f"rank {rank}: no error ({code}, {text})")


# Exact float sums: the exact sum rounded once, whatever the split.
for dtype in (numpy.float32, numpy.float64):
    span = 60 if dtype == numpy.float32 else 300
    whole = (rng.standard_normal(4001) * numpy.exp2(rng.integers(-span, span, 4001))).astype(dtype)
    got = xreduce.mpi.allreduce(comm, shard_of(whole), "sum", accuracy="exact").value
    assert numpy.array(got, dtype=dtype).tobytes() == numpy.array(exact_sum(whole), dtype=dtype).tobytes(), (got, exact_sum(whole))
    standard = xreduce.mpi.allreduce(comm, shard_of(whole), "sum").value
    magnitude = math.fsum(abs(float(v)) for v in whole)
    assert abs(standard - exact_sum(whole.astype(numpy.float64))) <= (64 + size) * float(numpy.finfo(dtype).eps) * magnitude + 1e-300

# argmin/argmax: few values (ties across ranks) and NaNs; the lowest index wins, the first NaN first.
for nan in (False, True):
    whole = rng.integers(0, 4, 3001).astype(numpy.float64)
    if nan:
        whole[rng.random(3001) < 0.01] = numpy.nan
    for op in ("argmin", "argmax", "min", "max"):
        r = xreduce.mpi.allreduce(comm, shard_of(whole), op)
        expected = getattr(numpy, op)(whole)
        if op.startswith("arg"):
            assert r.index == expected, (op, r.index, expected)
        else:
            assert r.value == expected or (math.isnan(r.value) and math.isnan(expected)), (op, r.value, expected)

# Integer sums wrap modulo 2^64; records reduce column by column.
whole = rng.integers(-(2**62), 2**62, 999, dtype=numpy.int64)
assert xreduce.mpi.allreduce(comm, shard_of(whole), "sum").value == integer_result(sum(int(v) for v in whole), numpy.int64)
records = rng.standard_normal(3 * 700)
got = xreduce.mpi.allreduce(comm, shard_of(records, 3), "sum", width=3, accuracy="exact").value
assert got == [exact_sum(records.reshape(-1, 3)[:, c].copy()) for c in range(3)], got

# Statistics: exact mean, var and std the exact value rounded once; standard ones within their
# bound; logsumexp around the ranks' maxima.
from fractions import Fraction  # noqa: E402

whole = (rng.standard_normal(2001) * 3 + 1e4).astype(numpy.float32)  # a large mean, a small spread
values = [Fraction(float(v)) for v in whole]
n, total = len(values), sum(values, Fraction(0))
mean = total / n
for correction in (0.0, 1.0):
    var = sum((v - mean) ** 2 for v in values) / (n - Fraction(correction))
    got = xreduce.mpi.allreduce(comm, shard_of(whole), "var", accuracy="exact", correction=correction).value
    assert numpy.float32(got) == numpy.float32(round_to(var, numpy.float32)), (got, float(var))
    standard = xreduce.mpi.allreduce(comm, shard_of(whole), "var", correction=correction).value
    assert abs(standard - float(var)) <= 1e-4 * float(var), (standard, float(var))
assert xreduce.mpi.allreduce(comm, shard_of(whole), "mean", accuracy="exact").value == round_to(mean, numpy.float32)
logits = rng.standard_normal(3001) * 50 + 700  # exp overflows without the running maximum
top = float(logits.max())
want = top + math.log(math.fsum(math.exp(v - top) for v in logits))
assert abs(xreduce.mpi.allreduce(comm, shard_of(logits), "logsumexp").value - want) <= 1e-12 * abs(want)

# argmax of records: each column's row in the whole, the first column's in index.
records = rng.integers(0, 5, 3 * 900).astype(numpy.float64)
r = xreduce.mpi.allreduce(comm, shard_of(records, 3), "argmax", width=3)
expected = numpy.argmax(records.reshape(-1, 3), axis=0).tolist()
assert r.indices == expected and r.index == expected[0], (r.indices, r.index, expected)

# N-D arrays split along axis 0 (axis= naming axes that include 0; transposed strides, keepdims),
# against numpy on the whole.
cube = rng.integers(-1000, 1000, (int(rng.integers(1, 60)), 4, 6)).astype(numpy.int64)
floats = rng.standard_normal(cube.shape)
for name, whole, real in (("C order", cube, floats), ("axes 1, 2 swapped", cube.transpose(0, 2, 1), floats.transpose(0, 2, 1))):
    for axis in (0, (0, 2), (0, 1), None):
        for keepdims in (False, True):
            where = f"{name}, axis {axis}, keepdims {keepdims}, seed {seed}"
            r = xreduce.mpi.allreduce(comm, shard_of(whole), "sum", axis=axis, keepdims=keepdims)
            assert numpy.array_equal(numpy.asarray(r.value), whole.sum(axis=axis, keepdims=keepdims)), where
            r = xreduce.mpi.allreduce(comm, shard_of(real), "var", axis=axis, keepdims=keepdims)
            want = real.var(axis=axis, keepdims=keepdims)
            assert numpy.shape(r.value) == numpy.shape(want) and numpy.allclose(r.value, want, rtol=1e-12, atol=0), where
    for axis in (0, None):  # numpy's argmax takes one axis or none
        r = xreduce.mpi.allreduce(comm, shard_of(whole), "argmax", axis=axis)
        got = r.index if axis is None else r.indices
        assert numpy.array_equal(numpy.asarray(got), numpy.argmax(whole, axis=axis)), (name, axis, seed)
expect_error(lambda: xreduce.mpi.allreduce(comm, shard_of(cube), "sum", axis=1), "unsupported", "axis 0")

# reduce: the root alone has the result.
root = size - 1
whole = rng.standard_normal(1234)
r = xreduce.mpi.reduce(comm, shard_of(whole), "sum", root, accuracy="exact")
assert (r is None) == (rank != root)
if r is not None:
    assert r.value == exact_sum(whole)

# Failures: no rank hangs, every rank (allreduce) or the failing one and the root (reduce) raise.
failing = size - 1
backend = "no-such-backend" if rank == failing else None
expect_error(lambda: xreduce.mpi.allreduce(comm, numpy.ones(10), "sum", backend=backend), "unknown_backend", f"rank {failing}")
x = ["not", "an", "array"] if rank == failing else numpy.ones(10)
expect_error(lambda: xreduce.mpi.allreduce(comm, x, "sum"), "invalid_argument", f"rank {failing}")
if rank in (failing, 0):
    expect_error(lambda: xreduce.mpi.reduce(comm, numpy.ones(10), "sum", 0, backend=backend), "unknown_backend", f"rank {failing}")
else:
    assert xreduce.mpi.reduce(comm, numpy.ones(10), "sum", 0, backend=backend) is None
expect_error(lambda: xreduce.mpi.allreduce(comm, numpy.ones(0), "max"), "empty_input", "")
expect_error(lambda: xreduce.mpi.allreduce(comm, numpy.ones(5), "nanmean"), "unsupported", "")
comm.Barrier()
print(f"rank {rank} of {size}: ok (seed {seed})", flush=True)
