"""What x may be: read in place, or refused with an error that names the problem."""

import array
import math

import numpy
import pytest
import xreduce
from reference import exact_sum


def test_buffer_protocol_objects(rng):
    values = rng.random(1001).tolist()
    want = exact_sum(numpy.array(values))
    assert xreduce.sum(array.array("d", values), accuracy="exact") == want
    assert xreduce.sum(memoryview(array.array("d", values)), accuracy="exact") == want
    assert xreduce.sum(array.array("i", [1, -2, 3])) == 2
    assert xreduce.sum(array.array("Q", [2**64 - 1, 1])) == 0


def test_shapes_and_flags(rng):
    x = rng.random((31, 7, 5))
    assert xreduce.sum(x, accuracy="exact") == exact_sum(x)  # every element, in C order
    assert xreduce.argmax(x) == int(x.argmax())
    frozen = x.copy()
    frozen.flags.writeable = False  # read-only arrays are read, never written
    assert xreduce.sum(frozen, accuracy="exact") == exact_sum(x)
    assert xreduce.sum(numpy.float64(2.5)) == 2.5  # a 0-d array
    assert xreduce.sum(numpy.empty((0, 4))) == 0.0
    with pytest.raises(xreduce.Error) as e:
        xreduce.min(numpy.empty(0))
    assert e.value.code == "empty_input"


def test_views_are_read_in_place(rng):
    x = rng.random(10000)
    view = x[17:9000]  # contiguous, but not at the start of its buffer
    assert xreduce.sum(view, accuracy="exact") == exact_sum(view)
    assert xreduce.argmin(view) == int(view.argmin())
    raw = bytearray(8 * x.size + 4)
    misaligned = numpy.frombuffer(raw, dtype=numpy.float64, offset=4)  # doubles at 4-byte alignment
    misaligned[:] = x
    assert xreduce.sum(misaligned, accuracy="exact") == exact_sum(misaligned)


def test_non_contiguous_host_arrays_are_read_in_place(rng):
    x = rng.random((300, 40))
    for strided in (x[::3], x.T, x[:, 5], x[::-2, 3:], x[:, ::-1].T):
        # Read where they are, with their strides: the index is into the view flattened in C order.
        assert xreduce.sum(strided, accuracy="exact") == exact_sum(numpy.ascontiguousarray(strided))
        assert xreduce.argmax(strided) == int(numpy.ascontiguousarray(strided).argmax())
        assert xreduce.sum(strided, copy=True, accuracy="exact") == exact_sum(numpy.ascontiguousarray(strided))
    # Records (width=) of a strided array are cut from a copy, when one is allowed.
    with pytest.raises(ValueError, match="not C-contiguous.*copy=True"):
        xreduce.sum(x[:, 5], width=2)
    pairs = numpy.ascontiguousarray(x[:, 5]).reshape(-1, 2)
    assert xreduce.sum(x[:, 5], copy=True, width=2, accuracy="exact") == [exact_sum(pairs[:, 0]), exact_sum(pairs[:, 1])]


@pytest.mark.parametrize(
    "dtype, name",
    [("complex64", "complex64"), ("complex128", "complex128")],
)
def test_unsupported_dtypes_are_named(dtype, name):
    with pytest.raises(TypeError, match=f"element type {name} is not reduced"):
        xreduce.sum(numpy.zeros(4, dtype=dtype))


def test_objects_that_are_no_arrays():
    for thing in ([1.0, 2.0], (1, 2), "abc", 3.5, None, {"a": 1}):
        with pytest.raises(TypeError, match="expected an array"):
            xreduce.sum(thing)


def test_byte_swapped_arrays_are_refused():
    with pytest.raises(TypeError, match="ndarray cannot be read in place: .*byte order"):
        xreduce.sum(numpy.arange(4, dtype=">f8"))


def test_width_must_divide_the_size():
    x = numpy.arange(10, dtype=numpy.float64)
    assert xreduce.sum(x, width=5) == [5.0, 7.0, 9.0, 11.0, 13.0]
    with pytest.raises(ValueError, match="width 3 does not divide"):
        xreduce.sum(x, width=3)
    with pytest.raises(ValueError, match="width must be at least 1"):
        xreduce.sum(x, width=0)


def test_bad_arguments():
    x = numpy.ones(4)
    with pytest.raises(ValueError, match="unknown op 'median'"):
        xreduce.reduce(x, "median")
    with pytest.raises(ValueError, match="unknown accuracy 'fast'"):
        xreduce.sum(x, accuracy="fast")
    with pytest.raises(ValueError, match="threads"):
        xreduce.sum(x, threads=-1)
    with pytest.raises(TypeError):
        xreduce.sum(x, "sequential")  # options are keyword-only
    assert not math.isnan(xreduce.sum(x))
