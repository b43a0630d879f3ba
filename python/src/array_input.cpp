#include "array_input.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <cstring>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace xreduce::python {
namespace {

// DLPack's device types (dlpack.h): the ones xreduce can read.
constexpr std::int32_t kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

std::string python_type_name(nb::handle object) { return nb::type_name(object.type()).c_str(); }

std::string dtype_name(nb::dlpack::dtype t) {
  std::string kind;
  switch (static_cast<nb::dlpack::dtype_code>(t.code)) {
    case nb::dlpack::dtype_code::Int: kind = "int"; break;
    case nb::dlpack::dtype_code::UInt: kind = "uint"; break;
    case nb::dlpack::dtype_code::Float: kind = "float"; break;
    case nb::dlpack::dtype_code::Bfloat: kind = "bfloat"; break;
    case nb::dlpack::dtype_code::Complex: kind = "complex"; break;
    case nb::dlpack::dtype_code::Bool: return "bool";
    default: kind = "code" + std::to_string(t.code) + "_";
  }
  std::string name = kind + std::to_string(t.bits);
  if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
  return name;
}

DType dtype_of(nb::dlpack::dtype t) {
  using code = nb::dlpack::dtype_code;
  struct Known {
    code kind;
    int bits;
    DType dtype;
  };
  static constexpr Known known[] = {
      {code::Float, 16, DType::f16}, {code::Float, 32, DType::f32}, {code::Float, 64, DType::f64},
      {code::Bfloat, 16, DType::bf16}, {code::Int, 8, DType::i8},    {code::Int, 16, DType::i16},
      {code::Int, 32, DType::i32},    {code::Int, 64, DType::i64},   {code::UInt, 8, DType::u8},
      {code::UInt, 16, DType::u16},   {code::UInt, 32, DType::u32},  {code::UInt, 64, DType::u64},
      {code::Bool, 8, DType::boolean}};
  if (t.lanes == 1)
    for (const Known& k : known)
      if (static_cast<code>(t.code) == k.kind && t.bits == k.bits) return k.dtype;
  throw nb::type_error(("xreduce: element type " + dtype_name(t) +
                        " is not reduced; supported: float16, bfloat16, float32, float64, int8, int16, int32, int64, "
                        "uint8, uint16, uint32, uint64, bool")
                           .c_str());
}

//! Whether `object` is a numpy array of ml_dtypes' bfloat16, which numpy can export neither through
//! DLPack nor the buffer protocol (it is no numpy type): read through a uint16 view of it instead.
bool ml_dtypes_bfloat16(nb::handle object) {
  if (!nb::hasattr(object, "dtype") || !nb::hasattr(object, "view")) return false;
  nb::object dtype = object.attr("dtype");
  return nb::hasattr(dtype, "name") && nb::str(dtype.attr("name")).equal(nb::str("bfloat16")) &&
         nb::hasattr(dtype, "itemsize") && nb::cast<int>(dtype.attr("itemsize")) == 2 &&
         nb::hasattr(dtype, "kind") && nb::str(dtype.attr("kind")).equal(nb::str("V"));
}

bool c_contiguous(const nb::ndarray<nb::ro>& a) {
  if (a.size() <= 1) return true;  // whatever its strides say
  std::int64_t expected = 1;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= a.shape(i);
  }
  return true;
}

// The object's DLPack device (type, id), or CPU for an object without __dlpack_device__.
std::pair<int, int> dlpack_device(nb::handle object) {
  if (!nb::hasattr(object, "__dlpack_device__")) return {kDLCPU, 0};
  nb::object where = object.attr("__dlpack_device__")();
  return {nb::cast<int>(where[0]), nb::cast<int>(where[1])};
}

// What xreduce uses of PyTorch, once torch is imported (never imported here): its Tensor type,
// its dtypes, and the call Triton launches its kernels with to learn the current stream. Kept
// for good: an object destroyed at exit, after the interpreter, would crash it.
struct Torch {
  PyTypeObject* tensor = nullptr;
  PyObject* current_stream = nullptr;          // torch._C._cuda_getCurrentRawStream(device) -> int
  std::array<PyObject*, all_dtypes.size()> dtypes{};  // in DType order; null where torch lacks one

  //! Null while torch is not imported, or if it lacks what is used here.
  static const Torch* get() {
    static const Torch* loaded = nullptr;
    if (loaded) return loaded;
    nb::object module = nb::steal(PyImport_GetModule(nb::str("torch").ptr()));
    if (!module.is_valid()) {
      PyErr_Clear();
      return nullptr;
    }
    if (!nb::hasattr(module, "Tensor") || !nb::hasattr(module, "_C") ||
        !nb::hasattr(module.attr("_C"), "_cuda_getCurrentRawStream"))
      return nullptr;
    auto* t = new Torch;
    t->tensor = reinterpret_cast<PyTypeObject*>(nb::object(module.attr("Tensor")).release().ptr());
    t->current_stream = nb::object(module.attr("_C").attr("_cuda_getCurrentRawStream")).release().ptr();
    for (std::size_t i = 0; i < t->dtypes.size(); ++i) {
      const std::string name = numpy_name(all_dtypes[i]);
      if (nb::hasattr(module, name.c_str())) t->dtypes[i] = nb::object(module.attr(name.c_str())).release().ptr();
    }
    return loaded = t;
  }

  //! Whether torch's current stream on `device` is the legacy default stream (torch's default).
  bool on_legacy_stream(int device) const {
    return nb::cast<std::uintptr_t>(nb::handle(current_stream)(device)) == 0;
  }
};

// Whether `object` is a PyTorch tensor on the GPU whose current stream is the legacy default one.
bool torch_on_legacy_stream(nb::handle object, int device) {
  const Torch* torch = Torch::get();
  return torch && PyObject_TypeCheck(object.ptr(), torch->tensor) && torch->on_legacy_stream(device);
}

// A PyTorch tensor read through its own accessors (about 0.5 us, where its DLPack export costs
// about 3): contiguous, of a dtype xreduce reduces, on the CPU or on a GPU whose current stream
// is the legacy default one. Anything else (nullopt) goes through DLPack, which orders streams,
// copies, and names what it refuses.
struct TorchView {
  const void* data;
  std::size_t size;
  DType dtype;
  bool cuda;
};
std::optional<TorchView> torch_view(nb::handle object) {
  const Torch* torch = Torch::get();
  if (!torch || !PyObject_TypeCheck(object.ptr(), torch->tensor)) return std::nullopt;
  nb::object dtype = object.attr("dtype");
  std::size_t k = 0;
  while (k < torch->dtypes.size() && torch->dtypes[k] != dtype.ptr()) ++k;
  if (k == torch->dtypes.size()) return std::nullopt;
  const bool cuda = nb::cast<bool>(object.attr("is_cuda"));
  if (!cuda && !(nb::hasattr(object, "is_cpu") && nb::cast<bool>(object.attr("is_cpu")))) return std::nullopt;
  if (!nb::cast<bool>(object.attr("is_contiguous")())) return std::nullopt;
  if (cuda && !torch->on_legacy_stream(nb::cast<int>(object.attr("get_device")()))) return std::nullopt;
  return TorchView{reinterpret_cast<const void*>(nb::cast<std::uintptr_t>(object.attr("data_ptr")())),
                   nb::cast<std::size_t>(object.attr("numel")()), all_dtypes[k], cuda};
}

// The exported array. CUDA memory is exported for the legacy default stream (stream=1): the
// producer makes that stream wait for the work that writes the array, and the CUDA module's
// blocking streams wait for that stream, so a reduction never reads an array still being written.
// A PyTorch tensor whose current stream is that stream already needs no wait, and is exported
// without one: torch's ordering of stream=1 costs about 8 us a call.
nb::ndarray<nb::ro> export_array(nb::handle object) {
  nb::ndarray<nb::ro> array;
  const auto [type, device] = dlpack_device(object);
  if ((type == kDLCUDA || type == kDLCUDAManaged) && !torch_on_legacy_stream(object, device)) {
    nb::object capsule;
    try {
      capsule = object.attr("__dlpack__")(nb::arg("stream") = 1);
    } catch (nb::python_error&) {
      capsule = object.attr("__dlpack__")();  // a producer that takes no stream orders its own work
    }
    if (nb::try_cast(capsule, array, /*convert=*/false)) return array;
  } else if (nb::try_cast(object, array, /*convert=*/false)) {
    return array;
  }
  if (nb::hasattr(object, "__dlpack__")) {
    // An array that would not export itself: its own reason says most (a byte order, a dtype).
    std::string why = "it exported nothing readable";
    try {
      object.attr("__dlpack__")();
    } catch (nb::python_error& e) {
      why = e.what();
    }
    throw nb::type_error(("xreduce: the " + python_type_name(object) + " cannot be read in place: " + why).c_str());
  }
  throw nb::type_error(("xreduce: expected an array (an object with __dlpack__ or the buffer protocol, such as a "
                        "numpy, PyTorch or CuPy array), got " + python_type_name(object))
                           .c_str());
}

// Copies a strided host array into fresh memory in C order.
std::unique_ptr<std::byte[]> gather(const nb::ndarray<nb::ro>& a, std::size_t item) {
  const std::size_t n = a.size(), dims = a.ndim();
  auto out = std::make_unique<std::byte[]>(n * item);  // aligned for any element type
  std::vector<std::size_t> index(dims, 0);
  const auto* base = static_cast<const std::byte*>(a.data());
  std::int64_t offset = 0;  // in elements, of `index`
  for (std::size_t k = 0; k < n; ++k) {
    std::memcpy(out.get() + k * item, base + offset * static_cast<std::int64_t>(item), item);
    for (std::size_t d = dims; d-- > 0;) {  // the next index, last dimension fastest
      offset += a.stride(d);
      if (++index[d] < a.shape(d)) break;
      offset -= a.stride(d) * a.shape(d);
      index[d] = 0;
    }
  }
  return out;
}

void check_width(std::size_t size, std::size_t width) {
  if (size % width != 0)
    throw nb::value_error(("xreduce: width " + std::to_string(width) + " does not divide the array's " +
                           std::to_string(size) + " elements")
                              .c_str());
}

//! `size` elements at `data`, flat, or as records of `width` (Request::records).
Request request_of(const void* data, std::size_t size, std::size_t width, DType dtype, Op op, Memory memory) {
  Request q = width > 1 ? Request::records(data, size / width, width, dtype, op) : Request{data, size, dtype, op};
  q.memory = memory;
  return q;
}

//! The exported array of `object` (bfloat16 numpy arrays through a uint16 view), its memory
//! checked, with its element type and where it lives.
struct Exported {
  nb::ndarray<nb::ro> array;
  DType dtype;
  Memory memory;
  bool device;
  //! Strides in elements from the array's CUDA array interface, where it has one: CuPy up to
  //! 14.x exports a negative stride to DLPack divided as an unsigned number (cupy/cupy issue
  //! 10172, fixed by pull request 10228), so its own signed byte strides are read instead. Empty:
  //! the DLPack strides.
  std::vector<std::int64_t> strides;
};
Exported export_checked(nb::handle object) {
  const bool bfloat16_view = ml_dtypes_bfloat16(object);
  Exported e;
  e.array = export_array(bfloat16_view ? object.attr("view")("uint16") : nb::object(nb::borrow(object)));
  const std::int32_t device_type = e.array.device_type();
  if (device_type != kDLCPU && device_type != kDLCUDA && device_type != kDLCUDAHost && device_type != kDLCUDAManaged)
    throw nb::value_error(("xreduce: the array lives in DLPack device type " + std::to_string(device_type) +
                           "; xreduce reads host memory and CUDA device memory")
                              .c_str());
  e.device = device_type == kDLCUDA || device_type == kDLCUDAManaged;
  e.dtype = bfloat16_view ? DType::bf16 : dtype_of(e.array.dtype());
  // Host memory is named as such, so that no module is asked where it lives; managed memory is
  // left to the CUDA module, which knows it.
  e.memory = device_type == kDLCUDA ? Memory::device : device_type == kDLCUDAManaged ? Memory::automatic : Memory::host;
  // Only a non-contiguous CuPy array's: a contiguous one's strides are not read.
  if (e.device && !c_contiguous(e.array) && python_type_name(object).rfind("cupy.", 0) == 0 &&
      nb::hasattr(object, "__cuda_array_interface__")) {
    const nb::object strides = nb::borrow<nb::dict>(object.attr("__cuda_array_interface__"))["strides"];
    if (!strides.is_none() && nb::len(strides) == e.array.ndim())
      for (nb::handle bytes : strides)
        e.strides.push_back(nb::cast<std::int64_t>(bytes) / static_cast<std::int64_t>(size_of(e.dtype)));
  }
  return e;
}

//! numpy's `axis` over `rank` dimensions as dimension numbers; empty: every axis (None).
std::vector<std::size_t> axes_of(nb::handle axis, std::size_t rank) {
  std::vector<std::size_t> axes;
  if (axis.is_none()) return axes;
  std::vector<nb::handle> items;
  const bool tuple = nb::isinstance<nb::tuple>(axis) || nb::isinstance<nb::list>(axis);
  if (tuple)
    for (nb::handle a : axis) items.push_back(a);
  else
    items.push_back(axis);
  if (tuple && items.empty())
    throw nb::value_error("xreduce: axis=() reduces no axis; pass None (every axis) or the axes to reduce");
  for (nb::handle a : items) {
    if (!PyIndex_Check(a.ptr()) || PyBool_Check(a.ptr()))
      throw nb::type_error(("xreduce: axis must be None, an int or a tuple of ints, got " + python_type_name(a)).c_str());
    const long long k = nb::cast<long long>(nb::int_(a));
    const auto r = static_cast<long long>(rank);
    if (k < -r || k >= r)
      throw nb::value_error(("xreduce: axis " + std::to_string(k) + " is out of bounds for an array of " + std::to_string(rank) +
                             " dimension" + (rank == 1 ? "" : "s"))
                                .c_str());
    const auto d = static_cast<std::size_t>(k < 0 ? k + r : k);
    for (std::size_t seen : axes)
      if (seen == d) throw nb::value_error(("xreduce: axis " + std::to_string(d) + " is named twice").c_str());
    axes.push_back(d);
  }
  return axes;
}

//! The request over an exported array as an N-D view with numpy's `axis` reduced (read_view).
ArrayInput view_of(const Exported& e, Op op, nb::handle axis, bool keepdims) {
  ArrayInput in;
  in.array = e.array;
  in.device = e.device;
  in.view = true;
  const std::size_t rank = in.array.ndim();
  if (rank > kMaxRank)
    throw nb::value_error(("xreduce: an array of " + std::to_string(rank) + " dimensions; at most " + std::to_string(kMaxRank) +
                           " are read")
                              .c_str());
  const std::vector<std::size_t> axes = axes_of(axis, rank);
  if (rank == 0) {  // a 0-d array: one element, one result (numpy's keepdims keeps no axis either)
    in.request = request_of(in.array.data(), 1, 1, e.dtype, op, e.memory);
    return in;
  }
  std::int64_t shape[kMaxRank], strides[kMaxRank];
  for (std::size_t d = 0; d < rank; ++d)
    shape[d] = static_cast<std::int64_t>(in.array.shape(d)), strides[d] = e.strides.empty() ? in.array.stride(d) : e.strides[d];
  Axes reduced;
  for (std::size_t d : axes) reduced.add(d);
  in.request = Request::over(in.array.data(), e.dtype, View::of(shape, strides, rank), reduced, op);
  in.request.keepdims = keepdims;
  in.request.memory = e.memory;
  return in;
}

}  // namespace

ArrayInput read_view(nb::handle object, Op op, nb::handle axis, bool keepdims) {
  return view_of(export_checked(object), op, axis, keepdims);
}

std::string numpy_name(DType t) {
  static constexpr const char* names[] = {"float32", "float64", "int32", "int64", "uint32", "uint64", "float16",
                                          "bfloat16", "int8", "uint8", "int16", "uint16", "bool"};
  static_assert(std::size(names) == all_dtypes.size(), "in DType order");
  return names[static_cast<int>(t)];
}

ArrayInput read_array(nb::handle object, Op op, std::size_t width, bool copy) {
  if (width == 0) throw nb::value_error("xreduce: width must be at least 1");
  ArrayInput in;
  if (const std::optional<TorchView> t = torch_view(object)) {
    check_width(t->size, width);
    in.owner = nb::borrow(object);
    in.device = t->cuda;
    in.request = request_of(t->data, t->size, width, t->dtype, op, t->cuda ? Memory::device : Memory::host);
    return in;
  }
  const Exported e = export_checked(object);
  in.array = e.array;
  in.device = e.device;
  const DType dtype = e.dtype;
  const std::size_t size = in.array.size();
  check_width(size, width);
  const void* data = in.array.data();
  if (!c_contiguous(in.array)) {
    // In place, any strides: host arrays of one column; device arrays of one column unless a copy
    // is asked for (cuda.shuffle reads N-D views of device data in place, argmin's and argmax's
    // index counted in C order over the view, as numpy counts it).
    if (width == 1 && (!in.device || !copy)) return view_of(e, op, nb::none(), /*keepdims=*/false);
    if (!copy)
      throw nb::value_error("xreduce: the array is not C-contiguous; pass copy=True to reduce a contiguous copy "
                            "(made once), or make one yourself");
    if (in.device) {
      // Device memory is copied by the array's own library: the core never calls CUDA itself.
      in.contiguous = nb::hasattr(object, "contiguous") ? object.attr("contiguous")()
                                                         : object.attr("copy")(nb::arg("order") = "C");
      ArrayInput copied = read_array(in.contiguous, op, width, /*copy=*/false);
      copied.contiguous = in.contiguous;
      return copied;
    }
    in.gathered = gather(in.array, size_of(dtype));
    data = in.gathered.get();
  }
  in.request = request_of(data, size, width, dtype, op, e.memory);
  return in;
}

}  // namespace xreduce::python
