// What sets the pace of pageable host data on its way to one GPU or several: the rates of the
// pieces the streamed path can be built from, each measured alone, on every GPU at once, and as
// a pipeline. CUDA runtime only, no xreduce: these are the ceilings the staging is judged by.
//
//   xreduce_bench_staging [--gib 4] [--repeat 3] [--out DIR]     (DIR/staging.{json,md})
//
// - copy:      memcpy of pageable memory into pinned buffers by T persistent threads; and reading
//              it alone (the host's read rate, the ceiling of anything that reads it)
// - dma:       cudaMemcpyAsync to the device from pinned memory, and from pageable memory (the
//              driver stages it itself)
// - register:  cudaHostRegister + cudaHostUnregister of the pageable buffer in pieces of P MiB
// - pipelines: per GPU, a thread that either copies each chunk into a pinned ring (with T copy
//              threads) or registers it in place, while the previous chunks cross the bus; or T
//              workers, each with its own stream and ring of two small pinned chunks (the design
//              the streamed path took: backends/cuda/streamed.cu)
// Each figure is the best of R runs, in GB/s of pageable input consumed.

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <emmintrin.h>
#include <nlohmann/json.hpp>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "xreduce_bench_staging: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double seconds_of(const std::function<void()>& f, int repeat) {
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

std::string read_line(const char* path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

//! Runs body(g) for every GPU g in its own thread, all at once.
void on_every_gpu(int gpus, const std::function<void(int)>& body) {
  std::vector<std::thread> pool;
  for (int g = 0; g < gpus; ++g) pool.emplace_back(body, g);
  for (auto& t : pool) t.join();
}

//! memcpy of [src, src+bytes) into `dst` chunk by chunk (dst holds one chunk) by `threads` threads,
//! each its own stripe of every chunk: the copy-thread pool of the streamed path, persistent.
struct CopyPool {
  explicit CopyPool(int threads) : sync(threads + 1) {
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([this, t, threads] {
        for (;;) {
          sync.arrive_and_wait();  // a job is posted
          if (stop) return;
          const std::size_t part = (bytes / threads + 63) / 64 * 64;
          const std::size_t begin = std::min(bytes, t * part), end = std::min(bytes, begin + part);
          std::memcpy(dst + begin, src + begin, end - begin);
          sync.arrive_and_wait();  // done
        }
      });
  }
  ~CopyPool() {
    stop = true;
    sync.arrive_and_wait();
    for (auto& t : pool) t.join();
  }
  void copy(void* d, const void* s, std::size_t n) {
    dst = static_cast<char*>(d), src = static_cast<const char*>(s), bytes = n;
    sync.arrive_and_wait();
    sync.arrive_and_wait();
  }
  std::barrier<> sync;
  std::vector<std::thread> pool;
  char* dst = nullptr;
  const char* src = nullptr;
  std::size_t bytes = 0;
  bool stop = false;
};

}  // namespace

int main(int argc, char** argv) {
  double gib = 4;
  int repeat = 3;
  std::string out_dir = ".";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--gib") gib = std::atof(argv[i + 1]);
    else if (a == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--out") out_dir = argv[i + 1];
  }
  int gpus = 0;
  check(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  const std::size_t chunk = std::size_t{32} << 20;
  const std::size_t bytes = static_cast<std::size_t>(gib * (1 << 30)) / chunk * chunk;
  char* pageable = static_cast<char*>(std::aligned_alloc(4096, bytes));
  // Filled by every core, as an application's data would be: its pages lie where they were touched.
  {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> fill;
    for (unsigned t = 0; t < hw; ++t)
      fill.emplace_back([&, t] {
        for (std::size_t i = t * 4096; i < bytes; i += std::size_t{hw} * 4096) std::memset(pageable + i, int(i >> 12) & 0x7f, 4096);
      });
    for (auto& t : fill) t.join();
  }
  std::vector<void*> device(gpus);
  std::vector<cudaStream_t> stream(gpus);
  for (int g = 0; g < gpus; ++g) {
    check(cudaSetDevice(g), "cudaSetDevice");
    check(cudaMalloc(&device[g], bytes), "cudaMalloc");
    check(cudaStreamCreateWithFlags(&stream[g], cudaStreamNonBlocking), "cudaStreamCreate");
  }
  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream md;
  auto record = [&](const std::string& what, const std::string& detail, int on_gpus, double s) {
    const double rate = static_cast<double>(bytes) / s / 1e9;
    rows.push_back({{"what", what}, {"detail", detail}, {"gpus", on_gpus}, {"seconds", s}, {"gb_per_s", rate}});
    md << "| " << what << " | " << detail << " | " << on_gpus << " | " << std::to_string(rate).substr(0, 6) << " |\n";
    std::printf("%-28s %-34s gpus=%d %8.2f GB/s\n", what.c_str(), detail.c_str(), on_gpus, rate);
    std::fflush(stdout);
  };
  const std::size_t share_of = bytes / chunk;  // chunks in all
  auto range = [&](int g, int parts) {  // GPU g's chunks [first, last) of `parts` equal parts
    const std::size_t first = share_of * g / parts, last = share_of * (g + 1) / parts;
    return std::pair{first, last};
  };

  // 1. memcpy into pinned memory, T persistent threads (each its own pinned chunk).
  for (int threads : {1, 2, 4, 8, 16, 32}) {
    if (threads > static_cast<int>(2 * std::thread::hardware_concurrency())) continue;
    std::vector<void*> pinned(threads);
    for (auto& p : pinned) check(cudaMallocHost(&p, chunk), "cudaMallocHost");
    const double s = seconds_of([&] {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          for (std::size_t c = t; c < share_of; c += threads) std::memcpy(pinned[t], pageable + c * chunk, chunk);
        });
      for (auto& t : pool) t.join();
    }, repeat);
    record("copy pageable->pinned", std::to_string(threads) + " threads", 0, s);
    for (auto& p : pinned) cudaFreeHost(p);
  }

  // 1b. Reading pageable memory alone (a sum of its words): the ceiling of anything that reads it.
  for (int threads : {8, 16, 32}) {
    if (threads > static_cast<int>(std::thread::hardware_concurrency())) continue;
    std::atomic<unsigned long long> sink{0};
    const double s = seconds_of([&] {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          unsigned long long acc = 0;
          for (std::size_t c = t; c < share_of; c += threads) {
            const auto* w = reinterpret_cast<const unsigned long long*>(pageable + c * chunk);
            for (std::size_t i = 0; i < chunk / 8; ++i) acc += w[i];
          }
          sink += acc;
        });
      for (auto& t : pool) t.join();
    }, repeat);
    record("read pageable", std::to_string(threads) + " threads", 0, s);
  }

  // 2. DMA from pinned memory (the whole buffer pinned) and from pageable memory.
  {
    void* pinned = nullptr;
    check(cudaMallocHost(&pinned, bytes), "cudaMallocHost (the whole buffer)");
    std::memcpy(pinned, pageable, bytes);
    for (int on : {1, gpus}) {
      const double s = seconds_of([&] {
        on_every_gpu(on, [&](int g) {
          cudaSetDevice(g);
          const auto [first, last] = range(g, on);
          check(cudaMemcpyAsync(device[g], static_cast<char*>(pinned) + first * chunk, (last - first) * chunk,
                                cudaMemcpyHostToDevice, stream[g]), "cudaMemcpyAsync");
          check(cudaStreamSynchronize(stream[g]), "cudaStreamSynchronize");
        });
      }, repeat);
      record("dma from pinned", "one copy per GPU", on, s);
      if (gpus == 1) break;
    }
    cudaFreeHost(pinned);
  }
  for (int on : {1, gpus}) {
    const double s = seconds_of([&] {
      on_every_gpu(on, [&](int g) {
        cudaSetDevice(g);
        const auto [first, last] = range(g, on);
        for (std::size_t c = first; c < last; ++c)
          check(cudaMemcpyAsync(static_cast<char*>(device[g]) + (c - first) * chunk, pageable + c * chunk, chunk,
                                cudaMemcpyHostToDevice, stream[g]), "cudaMemcpyAsync (pageable)");
        check(cudaStreamSynchronize(stream[g]), "cudaStreamSynchronize");
      });
    }, repeat);
    record("dma from pageable", "driver's staging, 32 MiB calls", on, s);
    if (gpus == 1) break;
  }

  // 3. cudaHostRegister + cudaHostUnregister in pieces, alone.
  for (std::size_t piece_mib : {32, 512}) {
    const std::size_t piece = piece_mib << 20;
    for (int threads : {1, 4}) {
      const double s = seconds_of([&] {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            for (std::size_t at = t * piece; at + piece <= bytes; at += threads * piece) {
              check(cudaHostRegister(pageable + at, piece, cudaHostRegisterDefault), "cudaHostRegister");
              check(cudaHostUnregister(pageable + at), "cudaHostUnregister");
            }
          });
        for (auto& t : pool) t.join();
      }, repeat);
      record("register+unregister", std::to_string(piece_mib) + " MiB pieces, " + std::to_string(threads) + " threads", 0, s);
    }
  }

  // 4. Pipelines, per GPU: register each chunk in place (no copy) while earlier chunks cross.
  for (std::size_t piece_mib : {32}) {
    const std::size_t piece = piece_mib << 20;
    for (int on : {1, gpus}) {
      const double s = seconds_of([&] {
        on_every_gpu(on, [&](int g) {
          cudaSetDevice(g);
          const std::size_t begin = bytes / piece * g / on * piece, end = bytes / piece * (g + 1) / on * piece;
          constexpr int kRing = 3;
          cudaEvent_t done[kRing];
          std::size_t held[kRing];
          for (int k = 0; k < kRing; ++k) cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming), held[k] = ~std::size_t{0};
          int k = 0;
          for (std::size_t at = begin; at < end; at += piece, k = (k + 1) % kRing) {
            if (held[k] != ~std::size_t{0}) {
              check(cudaEventSynchronize(done[k]), "cudaEventSynchronize");
              check(cudaHostUnregister(pageable + held[k]), "cudaHostUnregister");
            }
            check(cudaHostRegister(pageable + at, piece, cudaHostRegisterDefault), "cudaHostRegister");
            check(cudaMemcpyAsync(static_cast<char*>(device[g]) + (at - begin),
                                  pageable + at, piece, cudaMemcpyHostToDevice, stream[g]), "cudaMemcpyAsync");
            check(cudaEventRecord(done[k], stream[g]), "cudaEventRecord");
            held[k] = at;
          }
          for (int j = 0; j < kRing; ++j)
            if (held[j] != ~std::size_t{0}) {
              check(cudaEventSynchronize(done[j]), "cudaEventSynchronize");
              check(cudaHostUnregister(pageable + held[j]), "cudaHostUnregister");
            }
          for (auto& e : done) cudaEventDestroy(e);
        });
      }, repeat);
      record("pipeline: register in place", std::to_string(piece_mib) + " MiB pieces", on, s);
      if (gpus == 1) break;
    }
  }

  // 5. Pipelines, per GPU: T persistent threads copy each chunk into a ring of 3 pinned chunks.
  for (int threads : {8, 16}) {
    for (int on : {1, gpus}) {
      if (threads * on > static_cast<int>(2 * std::thread::hardware_concurrency())) continue;
      const double s = seconds_of([&] {
        on_every_gpu(on, [&](int g) {
          cudaSetDevice(g);
          const auto [first, last] = range(g, on);
          constexpr int kRing = 3;
          void* ring[kRing];
          cudaEvent_t done[kRing];
          for (int k = 0; k < kRing; ++k) {
            check(cudaMallocHost(&ring[k], chunk), "cudaMallocHost");
            cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming);
          }
          {
            CopyPool pool(threads);
            for (std::size_t c = first; c < last; ++c) {
              const int k = static_cast<int>(c % kRing);
              check(cudaEventSynchronize(done[k]), "cudaEventSynchronize");
              pool.copy(ring[k], pageable + c * chunk, chunk);
              check(cudaMemcpyAsync(static_cast<char*>(device[g]) + (c - first) * chunk, ring[k], chunk,
                                    cudaMemcpyHostToDevice, stream[g]), "cudaMemcpyAsync");
              check(cudaEventRecord(done[k], stream[g]), "cudaEventRecord");
            }
            check(cudaStreamSynchronize(stream[g]), "cudaStreamSynchronize");
          }
          for (int k = 0; k < kRing; ++k) cudaFreeHost(ring[k]), cudaEventDestroy(done[k]);
        });
      }, repeat);
      record("pipeline: copy to pinned ring", std::to_string(threads) + " threads per GPU", on, s);
      if (gpus == 1) break;
    }
  }

  // 6. Pipelines, per GPU: T workers, each with its own stream and its own ring of two small
  // pinned buffers, taking every T-th chunk of C bytes: one thread copies a chunk and sends it on.
  // Small rings stay in the last-level cache, where the DMA finds what the copy wrote.
  // Streaming stores (no read of the staging before it is written) once, at 1 MiB and 8 a GPU:
  // they send the staging to memory, where the DMA must fetch it again.
  for (bool streaming_stores : {false, true})
    for (std::size_t chunk_kib : {512, 1024, 2048, 4096})
      for (int threads : {4, 8, 16}) {
        if (streaming_stores && (chunk_kib != 1024 || threads != 8)) continue;
        const std::size_t small = chunk_kib << 10;
        for (int on : {1, gpus}) {
          if (threads * on > static_cast<int>(std::thread::hardware_concurrency())) continue;
          const double s = seconds_of([&] {
            on_every_gpu(on, [&](int g) {
              const std::size_t begin = bytes / on * g, end = bytes / on * (g + 1), pieces = (end - begin) / small;
              std::vector<std::thread> workers;
              for (int t = 0; t < threads; ++t)
                workers.emplace_back([&, t] {
                  cudaSetDevice(g);
                  cudaStream_t st;
                  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
                  void* ring[2];
                  cudaEvent_t done[2];
                  for (int k = 0; k < 2; ++k) {
                    check(cudaMallocHost(&ring[k], small), "cudaMallocHost");
                    cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming);
                  }
                  int k = 0;
                  for (std::size_t p = t; p < pieces; p += threads, k ^= 1) {
                    check(cudaEventSynchronize(done[k]), "cudaEventSynchronize");
                    const char* from = pageable + begin + p * small;
                    if (streaming_stores) {
                      // 64-byte streaming stores: no read of the destination before it is written.
                      auto* d = static_cast<__m128i*>(ring[k]);
                      const auto* f = reinterpret_cast<const __m128i*>(from);
                      for (std::size_t i = 0; i < small / 16; ++i) _mm_stream_si128(d + i, _mm_loadu_si128(f + i));
                      _mm_sfence();
                    } else {
                      std::memcpy(ring[k], from, small);
                    }
                    check(cudaMemcpyAsync(static_cast<char*>(device[g]) + p * small, ring[k], small, cudaMemcpyHostToDevice, st),
                          "cudaMemcpyAsync");
                    check(cudaEventRecord(done[k], st), "cudaEventRecord");
                  }
                  check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
                  for (int j = 0; j < 2; ++j) cudaFreeHost(ring[j]), cudaEventDestroy(done[j]);
                  cudaStreamDestroy(st);
                });
              for (auto& w : workers) w.join();
            });
          }, repeat);
          record("pipeline: workers, own rings", std::to_string(threads) + " per GPU, " + std::to_string(chunk_kib) +
                     " KiB chunks" + (streaming_stores ? ", streaming stores" : ""), on, s);
          if (gpus == 1) break;
        }
      }

  const std::string thp = read_line("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string nodes = read_line("/sys/devices/system/node/online");
  nlohmann::json doc{{"bytes", bytes}, {"gpus", gpus}, {"cores", std::thread::hardware_concurrency()},
                     {"transparent_hugepage", thp}, {"numa_nodes", nodes}, {"rows", rows}};
  std::ofstream(out_dir + "/staging.json") << doc.dump(2) << "\n";
  std::ofstream(out_dir + "/staging.md")
      << "# Pageable host data to the GPUs: the rates of the pieces\n\n"
      << bytes / double(1 << 30) << " GiB of pageable memory (filled by every core), " << gpus << " GPU(s), "
      << std::thread::hardware_concurrency() << " host threads, NUMA nodes " << nodes << ", transparent huge pages: " << thp
      << ". Best of " << repeat << ", GB/s of pageable input consumed (gpus 0: host only).\n\n"
      << "| what | how | gpus | GB/s |\n|---|---|---:|---:|\n"
      << md.str();
  for (int g = 0; g < gpus; ++g) cudaSetDevice(g), cudaFree(device[g]);
  std::free(pageable);
}
