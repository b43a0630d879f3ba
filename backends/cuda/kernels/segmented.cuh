#pragma once
// Segmented reductions (Request::segments), balanced whatever the segments' lengths.
// Each segment is read by as many threads as its length calls for, as CUB's segmented sort bins
// its segments: a group of 1 to 32 lanes with about four 16-byte loads each for a short segment,
// the block for a long one, and several blocks (chunks, their partials combined in order after)
// for a very long one. Equal rows all take one group size (rows_kernel). Offsets are binned
// within a block (short_segments_kernel): its threads look up 256 consecutive segments, rank
// them by group size in shared memory, and pack their groups into whole rounds of a warp's
// lanes; the long ones go to a list that long_segments_kernel reads. (The tiles this replaced,
// 32 KB of elements a block whatever the segments, spent 22 instructions an element on finding
// where the pieces start and read power-law segments at 28% of the read probe on an H200.) A
// segment's threads and their order follow from its length alone, so the results do not depend
// on the launch. Offsets are checked as they are read: a bad one is reported after the launch,
// and every read is kept inside the data whatever the offsets say.

#include "vector_loads.cuh"

namespace xreduce::cuda {

struct SegmentPolicy {
  static constexpr int block = 256;
  static constexpr int warps = block / 32;
  static constexpr int unroll = 4;      //!< 16-byte loads in flight per thread
  //! Per SM: caps the registers at 64. (long_segments_kernel fits in 40, but its grid of six
  //! blocks an SM read power-law segments 7% slower than four on an H200.)
  static constexpr int min_blocks = 4;
  //! A segment of this many bytes or more is read by a block (or several); a shorter one by a
  //! group of 1 to 32 lanes. At 16 KB a warp has 32 loads a lane. (At 8 KB, segments of 8 to
  //! 16 KB went to a block, two to four loads a thread between a lookup and a block-wide sum:
  //! power-law lengths read 3% slower on an H200; 32 KB read as 16.)
  static constexpr std::uint64_t long_bytes = 16384;
  //! A long segment is cut into chunks of about this many bytes, a block each (so a block reads
  //! 16 KB to 128 KB, one to eight rounds of loads, for one lookup of where it is).
  static constexpr std::uint64_t chunk_bytes = 65536;
  //! The 16-byte loads a lane of a short segment's group takes at least (group_for).
  static constexpr int group_loads = 4;
};

//! Several ops of each segment (StatsOp's 48-byte accumulator, `unroll` of them a thread): room
//! for their registers.
struct StatsSegmentPolicy : SegmentPolicy {
  static constexpr int min_blocks = 2;
};

//! Where segment s begins, kept inside [0, n] (offsets are not trusted until checked).
struct SegmentBounds {
  const std::uint64_t* offsets;  //!< device; null: equal rows of row_length
  std::uint64_t row_length;
  std::uint64_t count;
  std::uint64_t n;
  __device__ std::uint64_t begin(std::uint64_t s) const {
    const std::uint64_t b = offsets ? __ldg(reinterpret_cast<const unsigned long long*>(offsets + s)) : s * row_length;
    return b < n ? b : n;
  }
};

//! The lanes a segment of `bytes` (less than long_bytes) is read by: the most, up to 32, that
//! leave each lane P::group_loads 16-byte loads.
template <class P>
__host__ __device__ inline int group_for(std::uint64_t bytes) {
  const std::uint64_t loads = bytes / 16;
  int group = 32;
  while (group > 1 && static_cast<std::uint64_t>(group) * P::group_loads > loads) group /= 2;
  return group;
}

//! The chunks a long segment of `bytes` is cut into: one per chunk_bytes, the last taking the rest.
template <class P>
__host__ __device__ inline std::uint64_t chunks_of(std::uint64_t bytes) {
  const std::uint64_t c = bytes / P::chunk_bytes;
  return c > 1 ? c : 1;
}

//! A long segment (or a chunk of one): its segment, the index of its first chunk, and its
//! bounds (so that a chunk's block has one lookup to wait for, which it makes a chunk ahead).
struct LongPiece {
  std::uint64_t segment;
  std::uint64_t first_chunk;
  std::uint64_t begin, end;
};

//! The long segments and their chunks, in the workspace's scratch. For offsets,
//! short_segments_kernel lists them; equal rows are all long (row_chunks chunks each) and need no
//! list.
template <class A>
struct LongSegments {
  //! Offsets: (long segments << 32) | their chunks, counted as they are listed (so a segment's
  //! place in the list and its first chunk come from one atomic, and rise together).
  unsigned long long* listed;
  LongPiece* segments;  //!< offsets: the long segments, in no particular order
  LongPiece* chunks;    //!< offsets: chunk c's segment (its entry, as in `segments`)
  A* partial;           //!< chunk c's partial, for segments of more than one chunk
  //! The lists' room: as many long segments and chunks as the data can hold. Overlapping
  //! segments (decreasing offsets, reported as an error) may list more: those are not written,
  //! and nothing past the room is read.
  std::uint64_t room_segments, room_chunks;
  std::uint64_t row_chunks;  //!< equal rows: chunks a row; 0 for offsets
  __device__ std::uint64_t segment_count(std::uint64_t count) const {
    const std::uint64_t listed_ = row_chunks ? count : *listed >> 32;
    return listed_ < room_segments ? listed_ : room_segments;
  }
  __device__ std::uint64_t chunk_count(std::uint64_t count) const {
    const std::uint64_t listed_ = row_chunks ? count * row_chunks : *listed & 0xffffffffull;
    return listed_ < room_chunks ? listed_ : room_chunks;
  }
  __device__ LongPiece chunk(std::uint64_t c, const SegmentBounds& b) const {
    return row_chunks ? row(c / row_chunks, b) : chunks[c];
  }
  __device__ LongPiece segment(std::uint64_t i, const SegmentBounds& b) const { return row_chunks ? row(i, b) : segments[i]; }
  __device__ LongPiece row(std::uint64_t s, const SegmentBounds& b) const {
    return {s, s * row_chunks, s * b.row_length, (s + 1) * b.row_length};
  }
};

//! The check of offsets[s], s in [0, count]: `bad` gets the first offset found wrong (count if
//! the last is past n).
__device__ inline void check_offset(const SegmentBounds& b, std::uint64_t s, unsigned long long* bad) {
  const std::uint64_t raw = b.offsets[s];
  if ((s == b.count && raw > b.n) || (s < b.count && b.offsets[s + 1] < raw)) atomicMin(bad, s);
}

//! The offsets' check alone, for cub::DeviceSegmentedReduce: one thread per s in [0, count].
__global__ inline void segment_offsets_check_kernel(SegmentBounds b, unsigned long long* bad) {
  const std::uint64_t s = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (s <= b.count) check_offset(b, s, bad);
}

//! Where a warp whose lanes are in groups of several widths starts its fold: `from`, or below its
//! widest group where that is narrower (a warp of single-lane groups, as segments of 1 to 32 f32
//! make, folds nothing).
__device__ inline int first_fold_offset(int group, int from) {
  const int widest = static_cast<int>(warp_max(static_cast<unsigned>(group)));
  return widest / 2 < from ? widest / 2 : from;
}

//! Whether F's accumulator adds a lane's elements the cheap way first and, where that turns out
//! not to hold them (Accumulator<F>::in_range() false), has them read again into a form that
//! does (Accumulator<F>::start_second_pass(), which returns what takes them). group_partial
//! stops the first pass at the first step of loads past it.
template <class F>
struct reads_again_past_range : std::false_type {};

//! Folds each group of `group` lanes of the warp (a power of two; 32 or more: the whole warp)
//! into the group's first lane by `f`, a shuffle down a step from offset `from` (a power of two
//! below 32) to 1: a lane takes only what comes from its own group, so groups of several widths
//! may share the warp. Every lane of the warp calls it.
template <class F, class A>
__device__ inline A shuffle_fold(const F& f, A r, int group, int from) {
  for (int offset = from; offset > 0; offset >>= 1) {
    const A other = shfl_down(r, offset);
    if (offset < group) r = f(r, other);
  }
  return r;
}

//! The segments kernels' fold of a warp's partials (shuffle_fold's contract). A policy may bring
//! its own (found by argument-dependent lookup, as write_segment is).
template <class F, class A>
__device__ inline A fold_groups(const F& f, A r, int group, int from) {
  return shuffle_fold(f, r, group, from);
}

//! Group-wide reduction of one value per thread for groups of G threads (G a power of two up to
//! the block): within a warp by shuffle, then the group's warps through shared memory. Every
//! thread of the block calls it; the group's first thread gets the result.
template <int kBlock, class A, class F>
__device__ inline A group_reduce(A a, int group_size, const F& f, A* shared) {
  // Groups of fewer than 32 lanes: their first lane reads only its own group's lanes.
  a = fold_groups(f, a, group_size, (group_size < 32 ? group_size : 32) / 2);
  if (group_size <= 32) return a;
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) shared[warp] = a;
  __syncthreads();
  if (threadIdx.x % group_size == 0)
    for (int w = warp + 1; w < warp + group_size / 32; ++w) a = f(a, shared[w]);
  __syncthreads();
  return a;
}

//! Adds this thread's elements of x[a, b) (group_partial's share: `head` elements before the
//! first 16-byte boundary, then `nvec` vectors, then the rest) to sinks[u % N], u a load's place
//! in its step, all but a wide group's lone elements at either end (group_partial adds those).
//! kStops: stops at the end of the first step of loads past sinks[0]'s range
//! (reads_again_past_range: the elements are read again then).
template <class P, bool kNarrow, bool kStops, class F, class Sink, int N>
__device__ inline void add_share(Sink (&sinks)[N], const F& f, const typename F::In* __restrict__ x, std::uint64_t a,
                                 std::uint64_t b, std::uint64_t head, std::uint64_t nvec, int rank, int group_size) {
  using In = typename F::In;
  constexpr int kVec = vector_width<In>();
  const std::uint64_t body = a + head, step = static_cast<std::uint64_t>(group_size);
  const std::uint64_t lone_tail = body + nvec * kVec + rank;
  const Vec<In>* v = reinterpret_cast<const Vec<In>*>(x + body);
  auto add_end = [&](std::uint64_t from, std::uint64_t to) {  // narrow groups: the elements outside the vectors
    for (std::uint64_t j = from; j < to; j += step) sinks[0].add(f, f.lift(x[j], j));
  };
  if constexpr (kNarrow) add_end(a + rank, a + head);
  // Every step issues up to `unroll` loads before it adds any: a warp on a row of 256 f32 has
  // two vectors a lane, which a loop of one load at a time would fetch one latency apart.
  for (std::uint64_t i = rank; i < nvec; i += P::unroll * step) {
    Vec<In> r[P::unroll];
#pragma unroll
    for (int u = 0; u < P::unroll; ++u)
      if (i + u * step < nvec) r[u] = v[i + u * step];
#pragma unroll
    for (int u = 0; u < P::unroll; ++u)
      if (i + u * step < nvec) add_vector(sinks[u % N], f, r[u], body + (i + u * step) * kVec);
    if constexpr (kStops)
      if (!sinks[0].in_range()) return;
  }
  if constexpr (kNarrow) add_end(lone_tail, b);
}

//! This thread's partial of x[a, b) as one of `group_size` threads at `rank` in its group:
//! elements up to a 16-byte boundary one by one, then vectors, `unroll` in flight, then the rest.
//! Either end holds fewer elements than a vector: one apiece for a group of a vector's threads or
//! more; `kNarrow` (a group of fewer, one thread a row of 7 f32) reads them in loops. The loops
//! are their own instantiation: merely present, they held rows of 256 f32 on an H200 to 83% of
//! the read probe, where the code without them read 95%. An accumulator that
//! reads_again_past_range gets the thread's elements twice where its first pass says so.
template <class P, bool kNarrow, class F>
__device__ inline typename F::acc_t group_partial(const typename F::In* __restrict__ x, std::uint64_t a, std::uint64_t b,
                                                  int rank, int group_size, const F& f) {
  using In = typename F::In;
  constexpr int kVec = vector_width<In>();
  constexpr int kAccumulators = one_accumulator<F>::value ? 1 : P::unroll;
  constexpr bool kTwoPasses = reads_again_past_range<F>::value;
  Accumulator<F> acc[kAccumulators];
#pragma unroll
  for (int u = 0; u < kAccumulators; ++u) acc[u].init(f);
  if (a < b) {
    std::uint64_t head = (16 - reinterpret_cast<std::uintptr_t>(x + a) % 16) % 16 / sizeof(In);
    if (head > b - a) head = b - a;
    const std::uint64_t body = a + head, nvec = (b - body) / kVec;
    // A group of a vector's threads or more: its lane's lone elements at either end (one each at
    // most) are loaded first, so that they are in flight with the vectors (power-law segments 2%
    // faster on an H200; narrow groups, up to three a lane at either end, ran out of registers).
    // They are added here, not in add_share: there, they changed the plain sums' code.
    In ends[2] = {};
    const std::uint64_t lone_head = a + rank, lone_tail = body + nvec * kVec + rank;
    if constexpr (!kNarrow) {
      if (lone_head < body) ends[0] = x[lone_head];
      if (lone_tail < b) ends[1] = x[lone_tail];
    }
    add_share<P, kNarrow, kTwoPasses>(acc, f, x, a, b, head, nvec, rank, group_size);
    if constexpr (!kNarrow) {
      if (lone_head < body) acc[0].add(f, f.lift(ends[0], lone_head));
      if (lone_tail < b) acc[0].add(f, f.lift(ends[1], lone_tail));
    }
    if constexpr (kTwoPasses) {
      if (!acc[0].in_range()) {  // also where add_share stopped: the span only widens
        decltype(acc[0].start_second_pass()) again[1] = {acc[0].start_second_pass()};
        add_share<P, kNarrow, false>(again, f, x, a, b, head, nvec, rank, group_size);
        if constexpr (!kNarrow) {
          if (lone_head < body) again[0].add(f, f.lift(ends[0], lone_head));
          if (lone_tail < b) again[0].add(f, f.lift(ends[1], lone_tail));
        }
      }
    }
  }
  typename F::acc_t r = acc[0].value(f);
#pragma unroll
  for (int u = 1; u < kAccumulators; ++u) r = f(r, acc[u].value(f));
  return r;
}

//! Writes segment s's result: the value narrowed to Out, and the index relative to `start`; or,
//! where Out is F's partial (a statistic's, which a kernel finishes after), the partial whole,
//! its index relative to `start`.
template <class F, class Out>
__device__ inline void write_segment(const F& f, typename F::acc_t a, std::uint64_t s, std::uint64_t start, Out* out,
                                     std::uint64_t* out_index) {
  if constexpr (is_arg_op<F> && std::is_same_v<Out, typename F::acc_t>) {
    if (a.index != ~index_t{0}) a.index -= start;  // an empty or all-NaN segment: no index
    out[s] = a;
  } else if constexpr (is_arg_op<F>) {
    out[s] = a.value;
    out_index[s] = a.index == ~index_t{0} ? a.index : a.index - start;  // an empty segment: no_index
  } else {
    out[s] = static_cast<Out>(a);
  }
}

//! Offsets: a block per 256 consecutive segments (and a thread for offsets[count], which is only
//! checked). Each thread looks up its segment: an empty one gets the identity at once, a long one
//! goes to `L` (with its chunks), and a short one into its bin (by group size: 1, 2, 4 ... 32
//! lanes) of the block's list in shared memory, in segment order within a bin. The groups, the
//! widest first, fill rounds of 32 lanes, which go round the warps: every lane has work, whatever
//! the mix (a round per bin left most lanes idle: power-law lengths read 371 us against 338 on an
//! H200).
template <class P, class F, class Out>
__global__ __launch_bounds__(P::block, P::min_blocks) void short_segments_kernel(const typename F::In* __restrict__ x,
                                                                                SegmentBounds b, LongSegments<typename F::acc_t> L,
                                                                                unsigned long long* bad, F f, Out* out,
                                                                                std::uint64_t* out_index) {
  using In = typename F::In;
  using A = typename F::acc_t;
  constexpr int kBins = 6;                 // groups of 1, 2, 4, 8, 16 and 32 lanes
  constexpr int kLong = kBins, kNone = -1;
  constexpr unsigned kAll = 0xffffffffu;
  __shared__ std::uint64_t list_begin[P::block], list_end[P::block];
  __shared__ unsigned short list_thread[P::block];
  __shared__ unsigned bin_counts[kBins * P::warps];  // bin-major (widest groups first), then warp
  __shared__ unsigned bin_at[kBins * P::warps + 1];  // their running sum: where each warp's entries go
  __shared__ unsigned lane_at[kBins + 1];            // each bin's first lane, the list's lanes in a row
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned lanes_below = (1u << lane) - 1;
  const std::uint64_t first = blockIdx.x * static_cast<std::uint64_t>(P::block), s = first + threadIdx.x;
  if (s <= b.count && bad) check_offset(b, s, bad);  // bad null: checked by an earlier pass
  int bin = kNone;
  std::uint64_t a = 0, e = 0;
  if (s < b.count) {
    a = b.begin(s), e = b.begin(s + 1);
    if (e < a) e = a;  // only with bad offsets
    const std::uint64_t bytes = (e - a) * sizeof(In);
    if (bytes == 0) write_segment(f, f.identity(), s, 0, out, out_index);
    else if (bytes >= P::long_bytes) bin = kLong;
    else bin = __ffs(group_for<P>(bytes)) - 1;
  }
  // A short segment's lines are asked of the L2 now: the bins below are read one after another,
  // and each then waits for the L2 rather than the memory (5% on power-law lengths, H200). The
  // line a segment starts in is left to the segment before when that one (the lane below) asks for
  // the lines it ends in: the L2, not the memory, limits this kernel, and each line is asked once.
  const bool short_segment = bin >= 0 && bin < kBins;
  const bool below_asks = __shfl_up_sync(kAll, short_segment, 1) && lane > 0;
  if (short_segment) {
    const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(x + a), to = reinterpret_cast<std::uintptr_t>(x + e);
    const std::uintptr_t from = start / 128 * 128 + (below_asks && start % 128 ? 128 : 0);
    for (std::uintptr_t line = from; line < to; line += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(line));
  }
  // Long segments: one atomic a warp places them in L's list and their chunks after the chunks
  // listed before.
  const unsigned long_lanes = __ballot_sync(kAll, bin == kLong);
  if (long_lanes) {
    const std::uint64_t chunks = bin == kLong ? chunks_of<P>((e - a) * sizeof(In)) : 0;
    std::uint64_t through = chunks;  // this lane's and the lanes' below
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const std::uint64_t below = __shfl_up_sync(kAll, through, offset);
      if (lane >= offset) through += below;
    }
    const std::uint64_t total = __shfl_sync(kAll, through, 31);
    const int leader = __ffs(long_lanes) - 1;
    unsigned long long before = 0;
    if (lane == leader) before = atomicAdd(L.listed, (static_cast<unsigned long long>(__popc(long_lanes)) << 32) | total);
    before = __shfl_sync(kAll, before, leader);
    if (bin == kLong) {
      const std::uint64_t at = (before >> 32) + __popc(long_lanes & lanes_below);
      const std::uint64_t first_chunk = (before & 0xffffffffull) + through - chunks;
      const LongPiece piece{s, first_chunk, a, e};
      if (at < L.room_segments) L.segments[at] = piece;
      for (std::uint64_t c = first_chunk; c < first_chunk + chunks && c < L.room_chunks; ++c) L.chunks[c] = piece;
    }
  }
  // Short segments: the block's list, bin by bin from the widest groups down, each warp's entries
  // in lane order. Listed so, the groups pack the warps' lanes without a gap: the list's lanes,
  // entry by entry, go 32 to a round, and a group never straddles two rounds.
  unsigned rank = 0;
  const int order = short_segment ? kBins - 1 - bin : -1;
#pragma unroll
  for (int o = 0; o < kBins; ++o) {
    const unsigned in_bin = __ballot_sync(kAll, order == o);
    if (order == o) rank = __popc(in_bin & lanes_below);
    if (lane == 0) bin_counts[o * P::warps + warp] = __popc(in_bin);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned sum = 0, lanes = 0;
    for (int o = 0; o < kBins; ++o) {
      lane_at[o] = lanes;
      for (int w = 0; w < P::warps; ++w) bin_at[o * P::warps + w] = sum, sum += bin_counts[o * P::warps + w];
      lanes += (sum - bin_at[o * P::warps]) << (kBins - 1 - o);
    }
    bin_at[kBins * P::warps] = sum;
    lane_at[kBins] = lanes;
  }
  __syncthreads();
  if (order >= 0) {
    const unsigned at = bin_at[order * P::warps + warp] + rank;
    list_begin[at] = a, list_end[at] = e, list_thread[at] = static_cast<unsigned short>(threadIdx.x);
  }
  __syncthreads();
  // Rounds of 32 lanes round the warps; a lane finds its entry, and its rank in the entry's group,
  // from the bins' first lanes. The fold is by shuffles of the whole warp, each lane taking only
  // its own group's lanes.
  const unsigned lanes = lane_at[kBins];
  for (unsigned round = warp; round * 32 < lanes; round += P::warps) {
    const unsigned at_lane = round * 32 + lane;
    int o = 0;
    while (o < kBins - 1 && at_lane >= lane_at[o + 1]) ++o;
    const int k = kBins - 1 - o, group = 1 << k;
    const unsigned within = at_lane - lane_at[o], at = bin_at[o * P::warps] + (within >> k);
    const int rank_in_group = static_cast<int>(within & (group - 1));
    const bool mine = at_lane < lanes;
    const std::uint64_t sa = mine ? list_begin[at] : 0, se = mine ? list_end[at] : 0;
    A r = group < vector_width<In>() ? group_partial<P, true>(x, sa, se, rank_in_group, group, f)
                                     : group_partial<P, false>(x, sa, se, rank_in_group, group, f);
    r = fold_groups(f, r, group, first_fold_offset(group, 16));
    if (mine && rank_in_group == 0) write_segment(f, r, first + list_thread[at], sa, out, out_index);
  }
}

//! Long segments: a block per chunk, chunks round a grid that fills the GPU. A segment of one
//! chunk is written here; a longer one leaves a partial per chunk for long_segment_totals_kernel.
template <class P, class F, class Out>
__global__ __launch_bounds__(P::block, P::min_blocks) void long_segments_kernel(const typename F::In* __restrict__ x,
                                                                               SegmentBounds b, LongSegments<typename F::acc_t> L,
                                                                               F f, Out* out, std::uint64_t* out_index) {
  using In = typename F::In;
  using A = typename F::acc_t;
  __shared__ A shared[P::warps];
  const std::uint64_t chunks = L.chunk_count(b.count);
  LongPiece piece = blockIdx.x < chunks ? L.chunk(blockIdx.x, b) : LongPiece{};
  for (std::uint64_t c = blockIdx.x; c < chunks; c += gridDim.x) {  // block-uniform: group_reduce synchronises
    const LongPiece next = c + gridDim.x < chunks ? L.chunk(c + gridDim.x, b) : LongPiece{};
    const std::uint64_t a = piece.begin < b.n ? piece.begin : b.n, e = piece.end < a ? a : piece.end < b.n ? piece.end : b.n;
    const std::uint64_t pieces = chunks_of<P>((e - a) * sizeof(In)), j = c - piece.first_chunk, per = (e - a) / pieces;
    // Only bad offsets, whose segments overlap and overran the lists' room, leave a chunk whose
    // entry is not its own (stale, from an earlier call): skipped.
    if (piece.segment < b.count && j < pieces) {
      const std::uint64_t lo = a + j * per, hi = j + 1 == pieces ? e : lo + per;
      const A r = group_reduce<P::block>(group_partial<P, false>(x, lo, hi, threadIdx.x, P::block, f), P::block, f, shared);
      if (threadIdx.x == 0) {
        if (pieces == 1) write_segment(f, r, piece.segment, a, out, out_index);
        else L.partial[c] = r;
      }
    }
    piece = next;
  }
}

//! A warp per long segment of several chunks: their partials, combined in chunk order.
template <class P, class F, class Out>
__global__ void long_segment_totals_kernel(SegmentBounds b, LongSegments<typename F::acc_t> L, F f, Out* out,
                                           std::uint64_t* out_index) {
  using A = typename F::acc_t;
  const int lane = threadIdx.x % 32;
  const std::uint64_t segments = L.segment_count(b.count), warps = gridDim.x * static_cast<std::uint64_t>(blockDim.x) / 32;
  for (std::uint64_t i = (blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x) / 32; i < segments; i += warps) {
    const LongPiece piece = L.segment(i, b);
    if (piece.segment >= b.count) continue;  // only with bad offsets
    const std::uint64_t a = piece.begin, e = piece.end;
    const std::uint64_t pieces = chunks_of<P>((e > a ? e - a : 0) * sizeof(typename F::In));
    if (pieces == 1 || piece.first_chunk + pieces > L.room_chunks) continue;  // written whole; or bad offsets
    A r = f.identity();
    for (std::uint64_t j = lane; j < pieces; j += 32) r = f(r, L.partial[piece.first_chunk + j]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) r = f(r, shfl_down(r, offset));
    if (lane == 0) write_segment(f, r, piece.segment, a, out, out_index);
  }
}

//! Equal rows, up to two chunks long: a group per row (group_for's 1 to 32 lanes for short rows,
//! the block for long ones), rows round the groups, the loads all in flight.
template <class P, bool kNarrow, class F, class Out>
__global__ __launch_bounds__(P::block) void rows_kernel(const typename F::In* __restrict__ x, SegmentBounds b, int group,
                                                        F f, Out* out, std::uint64_t* out_index) {
  using A = typename F::acc_t;
  __shared__ A shared[P::warps];
  const int groups = P::block / group, rank = threadIdx.x % group, me = threadIdx.x / group;
  // The same trip count for the whole block: group_reduce synchronises it when group > 32.
  for (std::uint64_t first = blockIdx.x * static_cast<std::uint64_t>(groups); first < b.count;
       first += static_cast<std::uint64_t>(gridDim.x) * groups) {
    const std::uint64_t s = first + me;
    const bool read = s < b.count;
    const std::uint64_t a = read ? s * b.row_length : 0, e = read ? a + b.row_length : 0;
    const A r = group_reduce<P::block>(group_partial<P, kNarrow>(x, a, e, rank, group, f), group, f, shared);
    if (read && rank == 0) write_segment(f, r, s, a, out, out_index);
  }
}

//! Rows of no elements: each gets the identity.
template <class F, class Out>
__global__ void segment_identities_kernel(std::uint64_t count, F f, Out* out, std::uint64_t* out_index) {
  const std::uint64_t s = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (s < count) write_segment(f, f.identity(), s, 0, out, out_index);
}

}  // namespace xreduce::cuda
