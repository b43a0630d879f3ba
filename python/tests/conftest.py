"""Shared fixtures: the seeded random generator (its seed printed on failure), the backends to run
every case on, and the configuration put back after each test."""

import os
import random

import pytest
import xreduce


def pytest_report_header(config):
    return f"xreduce {xreduce.__version__} from {os.path.dirname(xreduce.__file__)}"


@pytest.fixture
def rng(request):
    import numpy

    seed = int(os.environ.get("XREDUCE_TEST_SEED", random.SystemRandom().randrange(2**32)))
    request.node.user_properties.append(("seed", seed))
    print(f"seed {seed} (XREDUCE_TEST_SEED={seed} repeats it)")  # shown by pytest when the test fails
    return numpy.random.default_rng(seed)


BACKENDS = {b.name: b for b in xreduce.backends()}


def declared(backend, dtype, op):
    """Whether `backend` ("auto": any) declares (dtype, op): if not, it must refuse it."""
    return backend == "auto" or op in BACKENDS[backend].support.get(str(dtype), {})


def reduce_or_refused(x, op, backend):
    """`xreduce.reduce(x, op, backend=backend)`, or None where the backend does not declare the
    array's dtype and op, after checking that it refuses it with "unsupported"."""
    if not declared(backend, x.dtype.name, op):
        with pytest.raises(xreduce.Error) as e:
            xreduce.reduce(x, op, backend=backend)
        assert e.value.code == "unsupported"
        return None
    r = xreduce.reduce(x, op, backend=backend)
    assert backend == "auto" or r.backend == backend
    return r


def host_backends(exact=False):
    """Every backend that runs here on host data and promises the semantics table."""
    return [
        b.name
        for b in xreduce.backends()
        if b.available and b.host_memory and b.name != "sequential.naive" and (b.exact_sums or not exact)
    ]


@pytest.fixture(autouse=True)
def restore_config():
    saved = (xreduce.config.backend, xreduce.config.accuracy, xreduce.config.threads, xreduce.config.plugin_path)
    yield
    if saved != (xreduce.config.backend, xreduce.config.accuracy, xreduce.config.threads, xreduce.config.plugin_path):
        xreduce.config.load()
