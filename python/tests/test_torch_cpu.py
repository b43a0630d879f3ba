"""PyTorch tensors in host memory (read through torch's own accessors when plain, through DLPack
otherwise). Skipped where PyTorch is not installed."""

import sys

import numpy
import pytest
import xreduce
from reference import exact_sum, reference

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "argmin", "argmax"])
def test_every_dtype_and_op(rng, dtype, op):
    if not hasattr(torch, dtype):
        pytest.skip(f"this torch has no {dtype}")
    n = 300 if op == "prod" else 100_003
    if dtype.startswith("float"):
        host = ((1 + (rng.random(n) - 0.5) / 64) if op == "prod" else rng.random(n) - 0.5).astype(dtype)
    else:
        info = numpy.iinfo(dtype)
        host = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    r = xreduce.reduce(torch.from_numpy(host), op)
    want, index = reference(host, op)
    if op in ("argmin", "argmax"):
        assert r.index == index
    elif dtype.startswith("float") and op in ("sum", "prod"):
        assert abs(r.value - want) <= (n + 64) * numpy.finfo(dtype).eps * float(numpy.abs(host.astype(float)).sum())
    else:
        assert r.value == want


def test_views_grads_and_types(rng):
    host = rng.random((400, 30))
    t = torch.from_numpy(host)
    assert xreduce.sum(t[10:300], accuracy="exact") == exact_sum(host[10:300])  # offset into the storage
    assert xreduce.sum(t.requires_grad_(True), accuracy="exact") == exact_sum(host)  # read, never written
    # A transpose is read in place (strides), and with copy=True from a contiguous copy: the same bits.
    assert xreduce.sum(t.detach().T, accuracy="exact") == exact_sum(host)
    assert xreduce.sum(t.detach().T, copy=True, accuracy="exact") == exact_sum(numpy.ascontiguousarray(host.T))
    assert xreduce.sum(t.detach().T, axis=1, accuracy="exact").tolist() == [exact_sum(host[:, c]) for c in range(30)]
    assert xreduce.sum(torch.tensor(2.5)) == 2.5
    assert xreduce.sum(torch.empty(0, dtype=torch.int64)) == 0
    mask = torch.from_numpy(host[:, 0] > 0.5)
    assert xreduce.sum(mask) == int(numpy.count_nonzero(host[:, 0] > 0.5))  # bool sums count
    assert xreduce.sum(torch.ones(300, dtype=torch.bfloat16)) == 300.0  # 16-bit floats accumulate wider
    with pytest.raises(ValueError, match="width 7 does not divide"):
        xreduce.sum(t, width=7)
    assert xreduce.sum(t.detach(), width=30, accuracy="exact") == [exact_sum(host[:, c]) for c in range(30)]


def test_no_reference_leaks():
    t = torch.arange(1000, dtype=torch.float32)
    before = sys.getrefcount(t)
    for _ in range(100_000):
        xreduce.sum(t)
    assert sys.getrefcount(t) == before
