"""Device arrays (PyTorch, CuPy, JAX) read in place on their GPU. Skipped where no GPU backend runs."""

import math
from fractions import Fraction

import numpy
import pytest
import xreduce
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import exact_sum, reference, round_to
from test_statistics import arrays, exact_moments, sqrt_rounded

GPU = [b.name for b in xreduce.backends() if b.available and b.device_memory]
pytestmark = pytest.mark.skipif(not GPU, reason="no GPU backend can run here")

torch = pytest.importorskip("torch") if GPU else None
if GPU and not torch.cuda.is_available():
    pytest.skip("PyTorch sees no GPU", allow_module_level=True)

TORCH_DTYPES = ["float32", "float64", "int32", "int64"]
OPS = ["sum", "prod", "min", "max", "argmin", "argmax"]
# Backends that promise the semantics table for every op on device data.
ARG_BACKENDS = [b for b in ("cuda.shuffle", "cuda.single_pass", "cub") if b in GPU]
# Backends with exact sums of device data, and those of them that compute the statistics (the
# exact mean, var and std among them).
EXACT_GPU = [b for b in GPU if next(x for x in xreduce.backends() if x.name == b).exact_sums]
EXACT_STATISTICS_GPU = [b.name for b in xreduce.backends()
                        if b.name in EXACT_GPU and "var" in b.support.get("float32", {})]


def device_draw(rng, dtype, n, op):
    if dtype.startswith("float"):
        host = (1 + (rng.random(n) - 0.5) / 64) if op == "prod" else (rng.random(n) - 0.5) * 2.0 ** rng.integers(-20, 20, n)
        host = host.astype(dtype)
    else:
        info = numpy.iinfo(dtype)
        host = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return host, torch.from_numpy(host).cuda()


def check(host, op, r):
    want, want_index = reference(host, op)
    if op in ("argmin", "argmax"):
        assert r.index == want_index
    elif host.dtype.kind != "f" or op in ("min", "max"):
        assert r.value == want
    elif op == "sum":
        assert abs(r.value - want) <= 64 * numpy.finfo(host.dtype).eps * float(numpy.abs(host.astype(float)).sum())
    else:
        assert abs(r.value - want) <= (host.size + 64) * numpy.finfo(host.dtype).eps * abs(want)


@pytest.mark.parametrize("backend", ["auto", *ARG_BACKENDS])
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_torch_device_tensors(rng, backend, dtype, op):
    for n in (1, 1000, int(rng.integers(1, 1 << 22))):
        host, x = device_draw(rng, dtype, n if op != "prod" else min(n, 300), op)
        r = xreduce.reduce(x, op, backend=backend)
        assert r.backend in GPU  # device data stays on the GPU
        check(host, op, r)


@pytest.mark.parametrize("backend", EXACT_GPU)
def test_exact_device_sums_are_bit_exact(rng, backend):
    for dtype in ("float32", "float64"):
        host = ((rng.random(1 << 20) - 0.5) * 2.0 ** rng.integers(-60, 60, 1 << 20)).astype(dtype)
        got = xreduce.sum(torch.from_numpy(host).cuda(), backend=backend, accuracy="exact")
        assert got == exact_sum(host)


@pytest.mark.parametrize("backend", EXACT_STATISTICS_GPU)
@given(drawn=arrays(), correction=st.sampled_from([0.0, 1.0, 0.5]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_exact_mean_var_std_of_device_tensors_are_rounded_once(backend, drawn, correction):
    """The GPU's exact mean, var and std of a device tensor: the exact value (fractions) rounded
    once, as on the host (test_statistics.py, whose data this draws)."""
    host, how = drawn
    mean, var = exact_moments(host.tolist(), correction)
    x = torch.from_numpy(host).cuda()
    exact = dict(backend=backend, accuracy="exact")
    assert xreduce.mean(x, **exact) == round_to(mean, host.dtype), how
    if var is None:
        assert math.isnan(xreduce.var(x, correction=correction, **exact)), how
        return
    assert xreduce.var(x, correction=correction, **exact) == round_to(var, host.dtype), how
    assert xreduce.std(x, correction=correction, **exact) == sqrt_rounded(var, host.dtype), how


@pytest.mark.parametrize("backend", [b for b in ("auto", "cuda.shuffle") if b == "auto" or b in GPU])
def test_exact_column_sums_of_device_tensors(rng, backend):
    # axis=0 of a C-order matrix: the GPU's exact column sums, each column the exact sum's bits.
    for dtype in ("float32", "float64"):
        for rows, width in ((3000, 9), (37, 130), (1, 5)):
            host = ((rng.random((rows, width)) - 0.5) * 2.0 ** rng.integers(-60, 60, (rows, width))).astype(dtype)
            got = xreduce.sum(torch.from_numpy(host).cuda(), axis=0, backend=backend, accuracy="exact")
            assert got.device.type == "cuda" and got.shape == (width,)
            assert got.cpu().numpy().tolist() == [exact_sum(host[:, j]) for j in range(width)]


def test_work_on_another_stream_is_waited_for():
    # Written on a side stream and reduced at once: the export orders the reduction after it.
    side = torch.cuda.Stream()
    for _ in range(20):
        with torch.cuda.stream(side):
            x = torch.empty(1 << 24, device="cuda")
            x.fill_(0.5)
            x.mul_(4.0)
            assert xreduce.sum(x) == 2.0 * (1 << 24)
        side.synchronize()


def test_work_queued_on_the_default_stream_is_waited_for():
    # Still being written when the call comes: the module's streams wait for torch's default one.
    for _ in range(5):
        x = torch.ones(1 << 26, device="cuda")
        for _ in range(30):
            x.mul_(2.0)
        assert xreduce.sum(x) == float(2**30 * (1 << 26))


def test_device_views_and_copies(rng):
    host = rng.random((512, 300))
    x = torch.from_numpy(host).cuda()
    view = x[100:400]  # contiguous, not at the start of the allocation
    assert xreduce.sum(view, accuracy="exact") == exact_sum(host[100:400])
    assert xreduce.sum(x.T, accuracy="exact") == exact_sum(host.T)  # in place
    assert xreduce.argmax(x.T) == int(numpy.argmax(host.T))  # in place: the index in C order of the transpose
    assert xreduce.argmin(x[100:400:2, 5:200:3]) == int(numpy.argmin(host[100:400:2, 5:200:3]))
    assert xreduce.argmax(x.T, copy=True) == int(numpy.argmax(host.T))
    assert xreduce.sum(x.T, copy=True, accuracy="exact") == exact_sum(numpy.ascontiguousarray(host.T))
    with pytest.raises(ValueError, match="host copy"):
        xreduce.validate(x, "sum")
    with pytest.raises(TypeError, match="element type complex64"):
        xreduce.sum(x.to(torch.complex64))


def test_cupy_arrays_every_dtype(rng):
    cupy = pytest.importorskip("cupy")
    for dtype in ("float32", "float64", "int32", "int64", "uint32", "uint64"):
        for op in OPS:
            host, _ = device_draw(rng, dtype, 100_003 if op != "prod" else 200, op)
            r = xreduce.reduce(cupy.asarray(host), op)
            assert r.backend in GPU
            check(host, op, r)


def test_pinned_host_tensors_are_host_data(rng):
    host = rng.random(1 << 20).astype(numpy.float32)
    pinned = torch.from_numpy(host).pin_memory()
    assert xreduce.sum(pinned, accuracy="exact") == exact_sum(host)
    assert not math.isnan(xreduce.sum(pinned, backend="cuda.shuffle"))


# The 8- and 16-bit types and bool as torch device tensors (bfloat16 and float16 as a model's
# weights are, uint8 as images, bool as masks), against the Fraction and integer references of
# test_dtypes.py. torch has no uint16 reductions on the GPU but holds and exports them.
NARROW = ["bfloat16", "float16", "int8", "uint8", "int16", "uint16", "bool"]


def torch_of(host, name):
    if name == "bfloat16":
        return torch.from_numpy(host.view(numpy.uint16)).view(torch.bfloat16).cuda()
    if name == "uint16":
        return torch.from_numpy(host.view(numpy.int16)).view(torch.uint16).cuda()
    return torch.from_numpy(host).cuda()


@pytest.mark.parametrize("backend", ["auto", *ARG_BACKENDS[:1]])  # every GPU backend: tests/gpu in C++
@pytest.mark.parametrize("name", NARROW)
@pytest.mark.parametrize("op", OPS)
def test_torch_device_tensors_of_the_narrow_types(rng, backend, name, op):
    from test_dtypes import check, draw  # needs ml_dtypes, as those tests do

    # The references add Fractions in Python: sizes that keep the whole matrix of cases within seconds.
    for n in (1, 33, 4099):
        host = draw(rng, name, n if op != "prod" else min(n, 300), op)
        r = xreduce.reduce(torch_of(host, name), op, backend=backend)
        assert r.backend in GPU
        check(r, host, name, op)


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_exact_device_sums_of_16_bit_floats_round_once(rng, name):
    from test_dtypes import FLOAT16, numpy_dtype, round_to
    from fractions import Fraction

    _, _, largest = FLOAT16[name]
    for n in (1, 100, int(rng.integers(1, 1 << 16))):
        host = ((rng.random(n) - 0.5) * 2.0 ** rng.integers(-20, 12, n)).astype(numpy_dtype(name))
        if n >= 3:
            host[0], host[1] = largest, -largest
        want = round_to(sum((Fraction(float(v)) for v in host.astype(numpy.float64).tolist()), Fraction(0)), name)
        for backend in ("cuda.single_pass", "cuda.shuffle"):
            if backend in GPU:
                got = xreduce.sum(torch_of(host, name), backend=backend, accuracy="exact")
                assert got == want and math.copysign(1, got) == math.copysign(1, want), (backend, got, want)


def test_cupy_arrays_of_the_narrow_types(rng):
    cupy = pytest.importorskip("cupy")
    from test_dtypes import check, draw

    for name in ("float16", "int8", "uint8", "int16", "uint16", "bool"):
        for op in ("sum", "max", "argmin"):
            host = draw(rng, name, 20_003, op)
            r = xreduce.reduce(cupy.asarray(host), op)
            assert r.backend in GPU
            check(r, host, name, op)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_device_axes_read_in_place(rng, op):
    """Axes of N-D device tensors and views (a middle axis, axes apart, a transpose, a step): the
    results a tensor on the same GPU, each against numpy's float64 reduction of the host copy."""
    host = (1 + (rng.random((48, 33, 40)) - 0.5) / 64) if op == "prod" else rng.random((48, 33, 40)) - 0.5
    host = host.astype(numpy.float32)
    x = torch.from_numpy(host).cuda()
    cases = [(x, host, 1), (x, host, (0, 2)), (x, host, 0), (x, host, (1, 2)), (x, host, -1),
             (x.transpose(0, 2), host.swapaxes(0, 2), 1), (x[:, ::2], host[:, ::2], (0, 2)),
             (x.permute(1, 0, 2), host.transpose(1, 0, 2), (1,))]
    for t, h, axis in cases:
        got = getattr(xreduce, op)(t, axis=axis)
        assert isinstance(got, torch.Tensor) and got.device == t.device, (axis, type(got))
        want = getattr(numpy, op)(h.astype(numpy.float64), axis=axis)
        got = got.cpu().numpy().astype(numpy.float64)
        assert got.shape == want.shape, axis
        if op in ("min", "max"):
            assert numpy.array_equal(got, want), axis
        else:  # the stated bounds: 64 eps(f32) of the sum of |x|; a product's (n + 64) eps of its value
            n = h.size // want.size
            bound = 64 * numpy.finfo(numpy.float32).eps * numpy.abs(h.astype(numpy.float64)).sum(axis=axis) if op == "sum" \
                else (n + 64) * numpy.finfo(numpy.float32).eps * numpy.abs(want)
            assert numpy.all(numpy.abs(got - want) <= bound), axis


@pytest.mark.parametrize("op", ["mean", "var", "std", "nanmean", "nanvar", "logsumexp", "norm2"])
def test_device_statistics_over_axes(rng, op):
    """Statistics over the axes of N-D device tensors and views (rows, columns, middle and strided
    layouts), each result finished on the GPU: a tensor on the same GPU, against
    numpy's float64 statistic of the host copy within a few eps(f32) of its value (the stated
    bounds, docs/semantics.md, are tighter on this data than this test's)."""
    host = (rng.random((48, 33, 40)) * 4 - 1).astype(numpy.float32)
    if op.startswith("nan"):
        host[rng.random(host.shape) < 0.05] = numpy.nan
    x = torch.from_numpy(host).cuda()
    kwargs = {"correction": 1} if op in ("var", "std", "nanvar") else {}
    reference_of = {"logsumexp": lambda h, axis: numpy.log(numpy.exp(h).sum(axis=axis)),
                    "norm2": lambda h, axis: numpy.sqrt((h * h).sum(axis=axis))}
    for t, h, axis in [(x, host, 1), (x, host, (0, 2)), (x, host, 0), (x.transpose(0, 2), host.swapaxes(0, 2), 1),
                       (x[:, ::2], host[:, ::2], (0, 2)), (x.permute(1, 0, 2), host.transpose(1, 0, 2), (1,)),
                       (x, host, -1), (x, host, (1, 2))]:
        got = getattr(xreduce, op)(t, axis=axis, **kwargs)
        assert isinstance(got, torch.Tensor) and got.device == t.device, (axis, type(got))
        h64 = h.astype(numpy.float64)
        want = reference_of[op](h64, axis) if op in reference_of else \
            getattr(numpy, op)(h64, axis=axis, **({"ddof": 1} if kwargs else {}))
        got = got.cpu().numpy().astype(numpy.float64)
        assert got.shape == want.shape, axis
        assert numpy.allclose(got, want, rtol=4 * numpy.finfo(numpy.float32).eps, atol=1e-6, equal_nan=True), (axis, op)


def test_cupy_axes_of_reversed_views(rng):
    """Negative strides, which CuPy up to 14.x exports wrongly to DLPack (read from its CUDA array
    interface instead)."""
    cupy = pytest.importorskip("cupy")
    host = rng.random((40, 30, 20)).astype(numpy.float32)
    c = cupy.asarray(host)
    for v, h, axis in ((c[::-1], host[::-1], (0, 2)), (c[:, ::-3], host[:, ::-3], 1), (c.T, host.T, 1)):
        got = xreduce.max(v, axis=axis)
        assert isinstance(got, cupy.ndarray)
        assert numpy.array_equal(cupy.asnumpy(got), h.max(axis=axis))


def test_jax_device_arrays_of_every_type(rng):
    """JAX arrays on the GPU, read in place through DLPack: flat against the exact references, and
    a middle axis, the result a JAX array on the GPU."""
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    import jax.numpy as jnp
    from test_dtypes import check, draw

    gpu = next(d for d in jax.devices() if d.platform == "gpu")
    for name in ("float16", "bfloat16", "int8", "uint8", "int16", "bool"):
        for op in ("sum", "max", "argmin"):
            host = draw(rng, name, 20_003, op)
            r = xreduce.reduce(jax.device_put(host, gpu), op)
            assert r.backend in GPU, (name, op, r.backend)
            check(r, host, name, op)
    host = rng.random((16, 33, 40)).astype(numpy.float32)
    got = xreduce.sum(jax.device_put(host, gpu), axis=1)
    assert isinstance(got, jax.Array) and got.shape == (16, 40)
    want = host.astype(numpy.float64).sum(axis=1)
    assert numpy.all(numpy.abs(numpy.asarray(got) - want) <= 64 * 2.0**-23 * numpy.abs(host).astype(numpy.float64).sum(axis=1))


@pytest.mark.parametrize("op", ["argmin", "argmax"])
def test_device_argmin_argmax_over_axes(rng, op):
    """argmin/argmax of N-D device tensors over an axis, in place (the views kernels): the index
    along the axis, the first of ties, as numpy's; values drawn from few levels, so ties are many."""
    host = rng.integers(0, 7, (48, 33, 40)).astype(numpy.float32)
    x = torch.from_numpy(host).cuda()
    for t, h, axis in [(x, host, 1), (x, host, 0), (x.transpose(0, 2), host.swapaxes(0, 2), 1), (x[:, ::2], host[:, ::2], 0),
                       (x.permute(1, 0, 2), host.transpose(1, 0, 2), 2), (x, host, None)]:
        got = getattr(xreduce, op)(t, axis=axis)
        want = getattr(numpy, op)(h, axis=axis)
        if axis is None:
            assert got == int(want)
            continue
        assert isinstance(got, torch.Tensor) and got.device == t.device, axis
        assert numpy.array_equal(got.cpu().numpy(), want), axis


def test_several_ops_of_device_tensors(rng):
    """reduce_ops on device data: the core ops in one read on the GPU (a whole array and rows,
    the results on x's device), and mean, var and std beside them of a whole array, each within
    its own bound (docs/semantics.md); over an axis, or another statistic, a statistic among
    them is refused there, and var_mean and minmax still give each op's own value."""
    host = rng.normal(0, 1, (int(rng.integers(1, 300)), int(rng.integers(1, 3000)))).astype(numpy.float32)
    x = torch.from_numpy(host).cuda()
    got = xreduce.reduce_ops(x, ["max", "argmin", "sum"])
    assert got["max"] == float(host.max()) and got["argmin"] == int(host.argmin())
    assert abs(got["sum"] - exact_sum(host)) <= 64 * numpy.finfo(numpy.float32).eps * float(numpy.abs(host.astype(float)).sum())
    rows = xreduce.reduce_ops(x, "min,argmax", axis=1)
    assert rows["min"].is_cuda and rows["argmax"].is_cuda
    assert numpy.array_equal(rows["min"].cpu().numpy(), host.min(axis=1))
    assert numpy.array_equal(rows["argmax"].cpu().numpy(), host.argmax(axis=1))
    f32, f64 = numpy.finfo(numpy.float32).eps, numpy.finfo(numpy.float64).eps
    top = float(numpy.abs(host).max())
    correction = int(rng.integers(0, 2)) if host.size > 1 else 0
    mean_want, var_want = exact_moments(host.ravel().tolist(), correction)

    def within(got):  # (var, mean) within their bounds in docs/semantics.md, against the exact values
        var, mean = got
        mean_ok = abs(Fraction(mean) - mean_want) <= f32 * abs(mean_want) + 64 * f64 * top
        if var_want is None:
            return mean_ok and math.isnan(var)
        return mean_ok and abs(Fraction(var) - var_want) <= f32 * var_want + 4096 * f64 * (float(var_want) + top * math.sqrt(var_want))

    together = xreduce.reduce_ops(x, ["var", "mean", "max"], backend="cuda.shuffle", correction=correction)
    assert together["max"] == float(host.max())
    assert within((together["var"], together["mean"]))
    with pytest.raises(xreduce.Error) as e:
        xreduce.reduce_ops(x, ["mean", "max"], axis=1, backend="cuda.shuffle")
    assert e.value.code == "unsupported"
    with pytest.raises(xreduce.Error) as e:
        xreduce.reduce_ops(x, ["logsumexp", "max"], backend="cuda.shuffle")
    assert e.value.code == "unsupported"
    assert within(xreduce.var_mean(x, correction=correction))
    assert xreduce.minmax(x) == (float(host.min()), float(host.max()))
