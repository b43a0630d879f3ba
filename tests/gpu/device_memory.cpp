// The CUDA module on data that already lives on the GPU, and under concurrent use: what the
// host-memory conformance suite cannot reach. Skips, saying so, on a machine without a GPU.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <sys/mman.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "gpu/device_placement.hpp"
#include "support/stats_cases.hpp"
#include "support/test_data.hpp"
#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/pinned.hpp"
#include "xreduce/backend/reducer.hpp"
#include <algorithm>

namespace xr = xreduce;

namespace {

using xr::test::gpu_backends;

bool have_gpu() {
  if (!gpu_backends().empty()) return true;
  MESSAGE("no GPU backend can run here (no CUDA device or no CUDA module): GPU tests skipped");
  return false;
}

//! Host data copied to a fresh device allocation, `byte_offset` bytes past its start.
template <class T>
struct DeviceCopy {
  void* base = nullptr;
  const T* data = nullptr;
  template <class Host>  // std::vector<T> or test::Elements<T> (bools too)
  DeviceCopy(const Host& host, std::size_t byte_offset) {
    REQUIRE(cudaMalloc(&base, host.size() * sizeof(T) + 16) == cudaSuccess);
    auto* p = static_cast<unsigned char*>(base) + byte_offset;
    REQUIRE(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
    data = reinterpret_cast<const T*>(p);
  }
  ~DeviceCopy() { cudaFree(base); }
};

template <class T>
void check_device_resident(xr::Reducer& r, xr::Op op, std::size_t n, std::size_t byte_offset, std::mt19937_64& rng,
                           const xr::Options& options = {}) {
  // cuda.multi_gpu reads host data only.
  if (!r.capabilities().reads(xr::Memory::device) || r.capabilities().support(xr::dtype_of<T>(), op) == xr::Support::none) return;
  const xr::test::Elements<T> host = xr::test::make_data<T>(xr::test::Pattern::random, op, n, rng);
  const xr::Reference ref = xr::exact_reference(xr::Request{host.data(), n, xr::dtype_of<T>(), op, xr::Memory::host});
  DeviceCopy<T> dev(host, byte_offset);
  for (xr::Memory m : {xr::Memory::device, xr::Memory::automatic}) {
    xr::Request q{dev.data, n, xr::dtype_of<T>(), op, m};
    xr::Options o = options;
    o.backend = std::string(r.name());
    xr::Result res = xr::default_context().reduce(q, o);
    INFO("seed " << xr::test::run_seed() << ", backend " << r.name() << ", " << to_string(op) << " of "
                 << to_string(xr::dtype_of<T>()) << ", n " << n << ", byte offset " << byte_offset << ", memory "
                 << to_string(m) << ", settings " << o.settings.to_text() << ": got " << res.value.to_string() << ", reference "
                 << ref.value.to_string());
    CHECK(xr::agrees(q, ref, res));
  }
}

}  // namespace

TEST_CASE("gpu: device-resident data, in place and realigned, every dtype and op") {
  if (!have_gpu()) return;
  std::mt19937_64 rng(xr::test::run_seed());
  for (xr::Reducer* r : gpu_backends())
    for (xr::Op op : xr::all_ops)
      for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{1000003}}) {
        if (n > 1000 && std::getenv("XREDUCE_TEST_QUICK")) continue;  // under the sanitizers
        check_device_resident<float>(*r, op, n, 0, rng);
        check_device_resident<double>(*r, op, n, 8, rng);
        check_device_resident<std::int32_t>(*r, op, n, 4, rng);
        check_device_resident<std::int64_t>(*r, op, n, 0, rng);
        check_device_resident<std::uint32_t>(*r, op, n, 12, rng);
        check_device_resident<std::uint64_t>(*r, op, n, 0, rng);
        check_device_resident<float>(*r, op, n, 1, rng);  // not even aligned to the element
        check_device_resident<xr::f16>(*r, op, n, 2, rng);
        check_device_resident<xr::bf16>(*r, op, n, 0, rng);
        check_device_resident<std::int8_t>(*r, op, n, 3, rng);
        check_device_resident<std::uint8_t>(*r, op, n, 0, rng);
        check_device_resident<std::int16_t>(*r, op, n, 6, rng);
        check_device_resident<std::uint16_t>(*r, op, n, 1, rng);  // odd: realigned
        check_device_resident<bool>(*r, op, n, 5, rng);
      }
}

TEST_CASE("gpu: bool sums count past 2^32 on the device") {
  if (!have_gpu() || std::getenv("XREDUCE_TEST_QUICK")) return;
  // 2^32 + 2^20 + 3 true elements, then a few dozen made false at random places: the count is
  // known without reading the data back, and no 32-bit counter anywhere can hold it.
  const std::size_t n = (std::size_t{1} << 32) + (1u << 20) + 3;
  void* dev = nullptr;
  if (cudaMalloc(&dev, n) != cudaSuccess) {
    MESSAGE("cannot allocate 4 GiB on the GPU: skipped");
    return;
  }
  REQUIRE(cudaMemset(dev, 1, n) == cudaSuccess);
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xb001u);
  std::vector<std::size_t> falses;
  for (int k = 0; k < 40; ++k) falses.push_back(rng() % n);
  falses.push_back(n - 1);
  std::sort(falses.begin(), falses.end());
  falses.erase(std::unique(falses.begin(), falses.end()), falses.end());
  for (std::size_t i : falses) REQUIRE(cudaMemset(static_cast<unsigned char*>(dev) + i, 0, 1) == cudaSuccess);
  const std::uint64_t expected = n - falses.size();
  for (xr::Reducer* r : gpu_backends()) {
    if (!r->capabilities().reads(xr::Memory::device) || r->capabilities().support(xr::DType::boolean, xr::Op::sum) == xr::Support::none)
      continue;
    const xr::Request q{dev, n, xr::DType::boolean, xr::Op::sum, xr::Memory::device};
    INFO("seed " << xr::test::run_seed() << ", backend " << r->name());
    CHECK(r->reduce(q).value.get<std::uint64_t>() == expected);
    // argmin: the first false; min: not all true.
    CHECK(*r->reduce(xr::Request{dev, n, xr::DType::boolean, xr::Op::argmin, xr::Memory::device}).index == falses.front());
  }
  cudaFree(dev);
}

TEST_CASE("gpu: the seed kernels at every block size of the seeds' tables") {
  if (!have_gpu()) return;
  std::mt19937_64 rng(xr::test::run_seed() + 1);
  for (xr::Reducer* r : gpu_backends()) {
    if (std::string(r->name()).rfind("cuda.", 0) != 0) continue;
    for (int block : {128, 256, 512, 1024})
      for (xr::Op op : {xr::Op::sum, xr::Op::max}) {
        xr::Options o;
        o.settings.set("block_size", std::to_string(block));
        check_device_resident<float>(*r, op, (std::size_t{1} << 20) + 3, 0, rng, o);
      }
  }
  xr::Reducer& seed = xr::default_context().registry().get("cuda.cascaded");
  float x = 1;
  const xr::Request one{&x, 1, xr::DType::f32, xr::Op::sum, xr::Memory::host};
  xr::Options bad;
  bad.settings.set("block_size", "100");
  CHECK_THROWS_WITH_AS(seed.reduce(one, bad), doctest::Contains("choose 128, 256, 512 or 1024"), xr::Error);
  // The old spelling, Options::block_size, reaches the setting still.
  xr::Options old;
  old.block_size = 100;
  CHECK_THROWS_WITH_AS(seed.reduce(one, old), doctest::Contains("choose 128, 256, 512 or 1024"), xr::Error);
  old.block_size = 512;
  CHECK(seed.reduce(one, old).value == xr::Scalar(1.0f));
}

TEST_CASE("gpu: auto sends device data to a GPU backend") {
  if (!have_gpu()) return;
  std::vector<float> host(1 << 20, 0.5f);
  DeviceCopy<float> dev(host, 0);
  xr::Result r = xr::reduce(std::span<const float>(dev.data, host.size()), xr::Op::sum);
  CHECK(xr::default_context().registry().get(r.backend).capabilities().engine() == xr::Engine::gpu);
  CHECK(r.value.get<float>() == 0.5f * (1 << 20));
}

TEST_CASE("gpu: several host threads at once get their own correct results") {
  if (!have_gpu()) return;
  const std::size_t n = 1 << 22;
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::uint32_t> v(n, static_cast<std::uint32_t>(t + 1));
      for (xr::Reducer* r : gpu_backends())
        for (int k = 0; k < 3; ++k) {
          xr::Result res = r->reduce(xr::Request{v.data(), n, xr::DType::u32, xr::Op::sum, xr::Memory::host});
          if (res.value.get<std::uint64_t>() != static_cast<std::uint64_t>(t + 1) * n) ++failures[t];
        }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) CHECK(failures[t] == 0);
}

TEST_CASE("gpu: a GPU allocation that cannot be had is an out_of_memory error, not a crash") {
  if (!have_gpu()) return;
  std::size_t free_bytes = 0, total_bytes = 0;
  REQUIRE(cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess);
  // Host input of the GPU's size plus 16 GiB, from untouched pages (no host memory is used).
  const std::size_t bytes = total_bytes + (std::size_t{16} << 30);
  void* p = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(p != MAP_FAILED);
  const xr::Request q{p, bytes / 4, xr::DType::u32, xr::Op::sum, xr::Memory::host};
  // Asked to stream it in one chunk (pageable input of one staging chunk is copied whole), the
  // module needs a device buffer larger than the GPU.
  xr::Options one_chunk;
  one_chunk.settings.set("chunk_bytes", std::to_string(bytes)).set("stage_bytes", std::to_string(bytes));
  for (xr::Reducer* r : gpu_backends()) {
    if (r->name() == "cuda.multi_gpu") continue;  // it cuts the input over the GPUs: each part fits
    INFO("backend " << r->name());
    try {
      r->reduce(q, one_chunk);
      FAIL("no error");
    } catch (const xr::Error& e) {
      CHECK(e.code() == xr::ErrorCode::out_of_memory);
    }
  }
  // In the default chunks, the same input streams through: more data than the GPU can hold.
  CHECK(xr::default_context().registry().get("cuda.single_pass").reduce(q).value.get<std::uint64_t>() == 0);
  munmap(p, bytes);
  // And the module still works afterwards.
  std::vector<float> v(1 << 20, 1.0f);
  for (xr::Reducer* r : gpu_backends())
    CHECK(r->reduce(xr::Request{v.data(), v.size(), xr::DType::f32, xr::Op::sum, xr::Memory::host}).value.get<float>() ==
          float(1 << 20));
}

TEST_CASE("gpu: host input streamed in many small chunks, pageable and pinned, every op") {
  if (!have_gpu()) return;
  std::mt19937_64 rng(xr::test::run_seed() + 2);
  const std::size_t n = (std::size_t{1} << 21) + 777;  // 2 MiB+ of f32 or more: several chunks of 1 MiB
  for (xr::Reducer* r : gpu_backends()) {
    for (xr::Op op : xr::all_ops) {
      if (r->capabilities().support(xr::DType::f32, op) == xr::Support::none) continue;
      std::vector<float> host = xr::test::make_data<float>(xr::test::Pattern::ties, op, n, rng);
      if (xr::accumulates(op)) host = xr::test::make_data<float>(xr::test::Pattern::random, op, n, rng);
      xr::Request q{host.data(), n, xr::DType::f32, op, xr::Memory::host};
      const xr::Reference ref = xr::exact_reference(q);
      xr::PinnedBuffer pinned(n * sizeof(float));
      REQUIRE(pinned.pinned());
      std::copy(host.begin(), host.end(), pinned.as<float>().begin());
      for (int streams : {1, 2, 4})
        for (int copy_threads : {1, 3}) {
          // Pageable: 129 staging chunks of 64 KiB, taken in turn by copy_threads workers (129 is
          // no multiple of 3: the last turn is short). Pinned: chunks of 1 MiB, no staging.
          xr::Options o;
          o.settings.set("chunk_bytes", "1048576").set("streams", std::to_string(streams)).set("stage_bytes", "65536")
              .set("copy_threads", std::to_string(copy_threads));
          INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", " << to_string(op) << ", streams " << streams
                       << ", copy_threads " << copy_threads);
          CHECK(xr::agrees(q, ref, r->reduce(q, o)));
          if (copy_threads > 1) continue;  // copy threads do not touch pinned input
          xr::Request qp = q;
          qp.data = pinned.data();
          CHECK(xr::agrees(qp, ref, r->reduce(qp, o)));
        }
    }
  }
}

TEST_CASE("gpu: pageable records staged by several copy threads, narrow and wide records, the same bits every call") {
  if (!have_gpu()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x57a6eull);
  struct Shape {
    std::size_t count, width;
  };
  // 7 columns: many records a staging chunk; 70001 columns of f32 (273 KiB a record): chunks of
  // one record, wider than a staging chunk of 64 KiB. Under the sanitizers (XREDUCE_TEST_QUICK),
  // which check every launch, the same two kinds of chunk with fewer of them, and the sum alone.
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  const std::vector<Shape> shapes = quick ? std::vector<Shape>{{20011, 7}, {5, 70001}} : std::vector<Shape>{{100003, 7}, {40, 70001}};
  const std::vector<xr::Op> ops = quick ? std::vector<xr::Op>{xr::Op::sum} : std::vector<xr::Op>{xr::Op::sum, xr::Op::min, xr::Op::max};
  for (const Shape& s : shapes)
    for (xr::Reducer* r : gpu_backends()) {
      if (!r->capabilities().takes(xr::Layout::outer)) continue;
      for (xr::Op op : ops) {  // what the records kernels do
        const std::vector<float> host = xr::test::make_data<float>(xr::test::Pattern::random, op, s.count * s.width, rng);
        const xr::Request q = xr::Request::records(host.data(), s.count, s.width, xr::DType::f32, op);
        const xr::Reference ref = xr::exact_reference(q);
        xr::Options o;
        o.settings.set("stage_bytes", "65536").set("copy_threads", "5");
        INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", " << to_string(op) << ", " << s.count
                     << " records of " << s.width);
        const xr::Result first = r->reduce(q, o);
        CHECK(xr::agrees(q, ref, first));
        // Each worker folds its chunks in order, then the workers in theirs: no race in the bits.
        const xr::Result again = r->reduce(q, o);
        REQUIRE(again.values.size() == first.values.size());
        for (std::size_t j = 0; j < first.values.size(); ++j) CHECK(again.values[j] == first.values[j]);
      }
    }
}

TEST_CASE("gpu: several ops in one pass of pageable input staged by several copy threads, every dtype") {
  if (!have_gpu()) return;
  // The stats body reads through Reducer::reduce without options: the staging settings go in by
  // configure, and the module's defaults come back after.
  xr::Settings staged, defaults;
  staged.set("stage_bytes", "65536").set("copy_threads", "3");
  for (xr::Reducer* r : gpu_backends()) {
    if (!r->capabilities().takes_several()) continue;
    for (const xr::SettingInfo& k : r->settings())
      if (k.key == "stage_bytes" || k.key == "copy_threads") defaults.set(k.key, k.default_value);
    r->configure(staged);
    INFO("backend " << r->name());
    xr::test::HostPlacement host;
    xr::test::check_stats_for_type<float>(*r, host, true);
    xr::test::check_stats_for_type<std::uint8_t>(*r, host, true);
    xr::test::check_stats_for_type<xr::bf16>(*r, host, true);
    r->configure(defaults);
  }
}

TEST_CASE("gpu: where a pointer lives, once the driver has started: device, pinned, pageable") {
  if (!have_gpu()) return;  // asking whether the backends can run has started the driver
  const xr::Registry& registry = xr::default_context().registry();
  std::vector<float> host(4096, 1.0f);
  DeviceCopy<float> dev(host, 0);
  xr::PinnedBuffer pinned(host.size() * sizeof(float));
  REQUIRE(pinned.pinned());
  const xr::Registry::Location on_device = registry.where(dev.data), on_pinned = registry.where(pinned.data()),
                               on_pageable = registry.where(host.data());
  CHECK(on_device.memory == xr::Memory::device);
  CHECK(on_pinned.memory == xr::Memory::host);
  CHECK(on_pinned.pinned);
  CHECK(on_pageable.memory == xr::Memory::host);
  CHECK_FALSE(on_pageable.pinned);
  // And auto sends pinned data above its pinned threshold to hybrid, pageable data not.
  xr::Config config = xr::Config::from_string("[dispatch]\ncpu_gpu_min_count_pinned = 1024\n", "(test)");
  config.backend = "auto";
  xr::Context ctx(config);
  if (const xr::Reducer* hybrid = ctx.registry().find("hybrid"); hybrid && hybrid->available()) {
    const xr::Request on_pinned_q{pinned.data(), host.size(), xr::DType::f32, xr::Op::sum, xr::Memory::host};
    const xr::Request on_pageable_q{host.data(), host.size(), xr::DType::f32, xr::Op::sum, xr::Memory::host};
    CHECK(ctx.resolve(on_pinned_q, {}).reducer->name() == "hybrid");
    CHECK(ctx.resolve(on_pageable_q, {}).reducer->name() != "hybrid");
  }
}

TEST_CASE("gpu: a caller's memory pinned in place is read directly and correctly") {
  if (!have_gpu()) return;
  std::vector<std::uint32_t> v(3'000'001);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint32_t>(i % 1000);
  xr::PinnedRegion region(v.data(), v.size() * sizeof(std::uint32_t));
  REQUIRE(region.pinned());
  xr::Request q{v.data(), v.size(), xr::DType::u32, xr::Op::argmax, xr::Memory::automatic};
  const xr::Reference ref = xr::exact_reference(q);
  for (xr::Reducer* r : gpu_backends())
    if (r->capabilities().support(xr::DType::u32, xr::Op::argmax) != xr::Support::none) {
      INFO("backend " << r->name());
      xr::Options o;
      o.settings.set("chunk_bytes", "1048576");
      CHECK(xr::agrees(q, ref, r->reduce(q, o)));
    }
}

TEST_CASE("gpu: records (width > 1) on device-resident data, vector and scalar loads, narrow and wide") {
  if (!have_gpu()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x9ull);
  struct Shape {
    std::size_t count, width, byte_offset;
  };
  // 70001 columns: wider than a block's slots, so partials are kept per slot.
  const std::vector<Shape> shapes{{1, 2, 0}, {1000, 9, 0}, {1000, 9, 4}, {100003, 9, 0}, {77, 1000, 8}, {3, 70001, 0}};
  for (xr::Reducer* r : gpu_backends()) {
    if (!r->capabilities().takes(xr::Layout::outer) || !r->capabilities().reads(xr::Memory::device)) continue;
    for (xr::Op op : {xr::Op::sum, xr::Op::prod, xr::Op::min, xr::Op::max})
      for (const Shape& s : shapes) {
        auto one = [&](auto tag) {
          using T = decltype(tag);
          if (s.byte_offset % sizeof(T) != 0) return;
          std::vector<T> host = xr::test::make_data<T>(xr::test::Pattern::random, op, s.count * s.width, rng);
          const xr::Reference ref =
              xr::exact_reference(xr::Request::records(host.data(), s.count, s.width, xr::dtype_of<T>(), op));
          DeviceCopy<T> dev(host, s.byte_offset);
          xr::Request q = xr::Request::records(dev.data, s.count, s.width, xr::dtype_of<T>(), op);
          q.memory = xr::Memory::device;
          const xr::Result res = r->reduce(q);
          double error = 0;
          INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", " << to_string(op) << " of "
                       << to_string(xr::dtype_of<T>()) << ", " << s.count << " records of width " << s.width
                       << ", byte offset " << s.byte_offset);
          CHECK(xr::agrees(q, ref, res, &error));
        };
        one(float{});
        one(double{});
        one(std::int32_t{});
        one(std::uint64_t{});
      }
  }
}
