#pragma once
// Segmented reductions (Request::segments), balanced whatever the segments' lengths. The
// elements are cut into tiles of 32 KB, one block each, staged in shared memory with coalesced
// loads (issued before anything else, so they overlap the offsets' lookups), and a block reduces
// the pieces of segments in its tile: each thread folds its own contiguous items into runs
// between piece starts, finishes the pieces it holds whole, and hands a run that continues from
// a neighbour to the thread where that piece starts, through shared memory and a warp-level
// segmented fold. So short and long segments, power-law or empty, are all read alike: the work
// of a tile does not depend on how it is cut (but its bookkeeping costs more instructions than
// the reading: rows_kernel takes equal rows, when there are enough to fill the GPU, at the
// memory's pace). A segment that runs past its tile leaves a partial there (its tail) and one in
// each later tile it covers (carries); a short second kernel combines them, a warp per tail.
// Offsets are checked as they are read: a bad one is reported after the launch, and every read
// is kept inside the data whatever the offsets say.

#include "vector_loads.cuh"

namespace xreduce::cuda {

struct SegmentPolicy {
  static constexpr int block = 256;
  static constexpr int warps = block / 32;
  //! 128 bytes a thread: at 16 KB a tile, the blocks' starts and ends held rows of 2^14 to 71%
  //! of the read probe on an H200.
  static constexpr int tile_bytes = 32768;  //!< 128 bytes a thread, staged in shared memory
  static constexpr int unroll = 4;  //!< 16-byte loads in flight per thread, in group mode
  static constexpr int min_blocks = 4;  //!< per SM: caps the registers at 64
  //! Pieces a tile may hold for thread mode (its list lives in shared memory); more (empty
  //! segments by the thousand): group mode.
  static constexpr int max_pieces = 2048;
};

//! Several ops of each segment (StatsOp's 48-byte accumulator): half the tile, so that the tile,
//! its piece list and a StatsAcc a thread fit in a block's 48 KB of shared memory, and room for
//! the accumulator's registers.
struct StatsSegmentPolicy : SegmentPolicy {
  static constexpr int tile_bytes = 16384;
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

//! The tiles' bookkeeping, in the workspace's scratch.
template <class A>
struct SegmentTiles {
  std::uint64_t tiles;       //!< they cover all n elements (the host does not know where the offsets start and end)
  std::uint64_t tile;        //!< elements per tile
  std::uint64_t* own;        //!< offsets only: own[t], the first segment that starts in tile t or later
  A* carry;                  //!< the piece of tile t that continues a segment from before it
  A* tail;                   //!< the piece of a segment that starts in tile t and runs on
  long long* carried;        //!< carry's segment, or -1
  long long* tail_of;        //!< tail's segment, or -1
  unsigned long long* bad;   //!< the first offset found wrong (count if the last is past n), else ~0
};

//! own[t] for offsets, and the offsets' check: one thread per s in [0, count].
template <class A>
__global__ void segment_owners_kernel(SegmentBounds b, SegmentTiles<A> t) {
  const std::uint64_t s = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (s > b.count) return;
  const std::uint64_t raw = b.offsets[s];
  if ((s == b.count && raw > b.n) || (s < b.count && b.offsets[s + 1] < raw)) atomicMin(t.bad, s);
  if (t.tiles == 0) return;
  // Tiles whose start lies in (begin(s - 1), begin(s)] have s as the first segment from there;
  // tiles that start after the last segment's end have count (no segment of theirs). Every tile
  // is written: own[] lives in reused scratch, and a stale entry from an earlier request would
  // send that tile's block back over segments another block owns.
  const std::uint64_t p = b.begin(s);
  std::uint64_t hi = p / t.tile;  // the last tile starting at or before p
  std::uint64_t lo = 0;
  if (s > 0) {
    const std::uint64_t q = b.begin(s - 1);
    lo = q > p ? hi + 1 : q / t.tile + 1;  // decreasing offsets: nothing to own
  }
  if (s == b.count) hi = t.tiles - 1;
  for (std::uint64_t u = lo; u <= hi && u < t.tiles; ++u) t.own[u] = s;
}

//! Group-wide reduction of one value per thread for groups of G threads (G a power of two up to
//! the block): within a warp by shuffle, then the group's warps through shared memory. Every
//! thread of the block calls it; the group's first thread gets the result.
template <int kBlock, class A, class F>
__device__ inline A group_reduce(A a, int group_size, const F& f, A* shared) {
  // Groups of fewer than 32 lanes: their first lane reads only its own group's lanes.
  for (int offset = (group_size < 32 ? group_size : 32) / 2; offset > 0; offset >>= 1) a = f(a, shfl_down(a, offset));
  if (group_size <= 32) return a;
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) shared[warp] = a;
  __syncthreads();
  if (threadIdx.x % group_size == 0)
    for (int w = warp + 1; w < warp + group_size / 32; ++w) a = f(a, shared[w]);
  __syncthreads();
  return a;
}

//! This thread's partial of x[a, b) as one of `group_size` threads at `rank` in its group:
//! elements up to a 16-byte boundary one by one, then vectors, `unroll` in flight, then the rest.
//! Either end holds fewer elements than a vector: one apiece for a group of a vector's threads or
//! more; `kNarrow` (a group of fewer, one thread a row of 7 f32) reads them in loops. The loops
//! are their own instantiation: merely present, they held rows of 256 f32 on an H200 to 83% of
//! the read probe, where the code without them read 95%.
template <class P, bool kNarrow, class F>
__device__ inline typename F::acc_t group_partial(const typename F::In* __restrict__ x, std::uint64_t a, std::uint64_t b,
                                                  int rank, int group_size, const F& f) {
  using In = typename F::In;
  constexpr int kVec = vector_width<In>();
  Accumulator<F> acc[P::unroll];
#pragma unroll
  for (int u = 0; u < P::unroll; ++u) acc[u].init(f);
  if (a < b) {
    std::uint64_t head = (16 - reinterpret_cast<std::uintptr_t>(x + a) % 16) % 16 / sizeof(In);
    if (head > b - a) head = b - a;
    const std::uint64_t body = a + head, nvec = (b - body) / kVec;
    const Vec<In>* v = reinterpret_cast<const Vec<In>*>(x + body);
    const std::uint64_t step = static_cast<std::uint64_t>(group_size);
    auto add_end = [&](std::uint64_t from, std::uint64_t to) {
      if constexpr (kNarrow) {
        for (std::uint64_t j = from; j < to; j += step) acc[0].add(f, f.lift(x[j], j));
      } else if (from < to) {
        acc[0].add(f, f.lift(x[from], from));
      }
    };
    add_end(a + rank, a + head);
    std::uint64_t i = rank;
    // Every step issues up to `unroll` loads before it adds any: a warp on a row of 256 f32 has
    // two vectors a lane, which a loop of one load at a time would fetch one latency apart.
    for (; i < nvec; i += P::unroll * step) {
      Vec<In> r[P::unroll];
#pragma unroll
      for (int u = 0; u < P::unroll; ++u)
        if (i + u * step < nvec) r[u] = v[i + u * step];
#pragma unroll
      for (int u = 0; u < P::unroll; ++u)
        if (i + u * step < nvec) add_vector(acc[u], f, r[u], body + (i + u * step) * kVec);
    }
    add_end(body + nvec * kVec + rank, b);
  }
  typename F::acc_t r = acc[0].value(f);
#pragma unroll
  for (int u = 1; u < P::unroll; ++u) r = f(r, acc[u].value(f));
  return r;
}

//! Writes segment s's result: the value narrowed to Out, and the index relative to `start`.
template <class F, class Out>
__device__ inline void write_segment(const F& f, typename F::acc_t a, std::uint64_t s, std::uint64_t start, Out* out,
                                     std::uint64_t* out_index) {
  if constexpr (is_arg_op<F>) {
    out[s] = a.value;
    out_index[s] = a.index == ~index_t{0} ? a.index : a.index - start;  // an empty segment: no_index
  } else {
    out[s] = static_cast<Out>(a);
  }
}

//! What a block knows of its tile: [lo, hi), the segments that start in it [own, own_end), and
//! whether the segment before `own` runs into it (the carry, up to carry_end).
struct TileView {
  std::uint64_t tile, lo, hi, own, own_end, carry_end;
  bool has_carry;
  bool tail_runs_on;  //!< the last owned segment ends past hi
};

//! The end of a tile-level piece: into the carry or tail arrays, or written as the segment's result.
template <class F, class Out>
__device__ inline void finish_piece(const F& f, typename F::acc_t r, long long s, std::uint64_t start, bool carry,
                                    bool tail, const SegmentTiles<typename F::acc_t>& t, std::uint64_t tile, Out* out,
                                    std::uint64_t* out_index) {
  if (s < 0) return;  // elements that belong to no segment
  if (carry) t.carry[tile] = r;
  else if (tail) t.tail[tile] = r, t.tail_of[tile] = s;
  else write_segment(f, r, static_cast<std::uint64_t>(s), start, out, out_index);
}

//! Group mode: groups of 1 to 256 threads, about one piece each, 16-byte loads. A tile of pieces
//! of one or two elements takes a thread a piece: groups of a warp at least held 2^18 rows of 1
//! from host data to 1 GB/s on an H200.
template <class P, class F, class Out>
__device__ __noinline__ void segments_by_groups(const typename F::In* __restrict__ x, const SegmentBounds& b,
                                   const SegmentTiles<typename F::acc_t>& t, const TileView& v, const F& f, Out* out,
                                   std::uint64_t* out_index) {
  using A = typename F::acc_t;
  __shared__ A shared[P::warps];
  const std::uint64_t pieces = v.own_end - v.own + (v.has_carry ? 1 : 0);
  int group = P::block;
  while (group > 1 && pieces * group > 2 * P::block) group /= 2;  // about one piece per group
  const int groups = P::block / group, rank = threadIdx.x % group, me = threadIdx.x / group;
  // Every group runs the same number of rounds: group_reduce synchronises the block.
  for (std::uint64_t round = 0; round * groups < pieces; ++round) {
    const std::uint64_t piece = round * groups + me;
    std::uint64_t s = 0, a = 0, e = 0;
    const bool carry = v.has_carry && piece == 0;
    if (piece < pieces) {
      if (carry) {
        s = v.own - 1, a = v.lo, e = v.carry_end;
      } else {
        s = v.own + piece - (v.has_carry ? 1 : 0);
        a = b.begin(s), e = b.begin(s + 1);
        if (a < v.lo) a = v.lo;  // only with bad offsets
        if (e < a) e = a;
      }
    }
    const std::uint64_t stop = e < v.hi ? e : v.hi;
    const A r = group_reduce<P::block>(group < vector_width<typename F::In>() ? group_partial<P, true>(x, a, stop, rank, group, f)
                                                                            : group_partial<P, false>(x, a, stop, rank, group, f),
                                       group, f, shared);
    if (piece < pieces && rank == 0)
      finish_piece(f, r, static_cast<long long>(s), a, carry, !carry && e > v.hi, t, v.tile, out, out_index);
  }
}

//! Thread mode's view of the tile: staged in shared memory, `vectors` 16-byte vectors (and
//! `items` contiguous elements) a thread.
template <class P, class In>
struct TileStage {
  static constexpr int vectors = P::tile_bytes / 16 / P::block;
  static constexpr int items = vectors * vector_width<In>();
  //! Where vector i of the tile sits: XOR-swizzled within each 128 bytes, so that neither the
  //! coalesced stores (vectors j + 256u of threads j..j+7) nor a thread's reads of its own
  //! vectors (t * vectors + k of threads t..t+7) meet in a bank.
  __device__ static int at(int i) { return i ^ ((i / vectors) & 7); }
};

//! Thread mode, for any tile of up to max_pieces pieces. The tile comes into shared memory with
//! coalesced loads (a thread reading its own contiguous bytes straight from memory touched 32
//! lines a load: the L1, not the memory, set the pace); its piece starts are listed there too.
//! Each thread folds its contiguous items into runs between piece starts (all at once, four to
//! an addition, when they lie in one piece), finishes the pieces it holds whole, and leaves a
//! run that began in an earlier thread in first_run[] for the thread where that piece starts
//! (its owner). A warp-level segmented fold of first_run[] leaves an owner one value a warp.
template <class P, class F, class Out>
__device__ void segments_by_threads(const SegmentBounds& b, const SegmentTiles<typename F::acc_t>& t, const TileView& v,
                                    std::uint64_t lead, std::uint64_t pieces, const F& f, Out* out,
                                    std::uint64_t* out_index, const Vec<typename F::In>* stage) {
  using In = typename F::In;
  using A = typename F::acc_t;
  using S = TileStage<P, In>;
  constexpr int kVec = vector_width<In>();
  __shared__ unsigned piece_start[P::max_pieces + 1];  // offsets in the tile; piece j is [start[j], start[j + 1])
  __shared__ A first_run[P::block];
  __shared__ int first_piece[P::block];
  const int lane = threadIdx.x % 32;
  const unsigned length = static_cast<unsigned>(v.hi - v.lo);
  const std::uint64_t owned = v.own_end - v.own;
  auto clamp_start = [&](std::uint64_t a) { return static_cast<unsigned>((a < v.lo ? v.lo : a > v.hi ? v.hi : a) - v.lo); };
  for (std::uint64_t j = threadIdx.x; j < pieces; j += P::block)
    piece_start[j] = j < lead ? 0 : clamp_start(b.begin(j < lead + owned ? v.own + (j - lead) : b.count));
  if (threadIdx.x == 0) piece_start[pieces] = length;
  first_piece[threadIdx.x] = -1;
  __syncthreads();  // the stage and the list
  // Empty segments hold no element: their results are written here.
  for (std::uint64_t s = v.own + threadIdx.x; s < v.own_end; s += P::block)
    if (b.begin(s + 1) <= b.begin(s)) write_segment(f, f.identity(), s, 0, out, out_index);

  // Piece j's segment: the carry's, an owned one, or -1 for elements of no segment.
  auto segment_of = [&](int j) -> long long {
    const std::uint64_t u = static_cast<std::uint64_t>(j);
    if (u < lead) return v.has_carry ? static_cast<long long>(v.own - 1) : -1;
    return u < lead + owned ? static_cast<long long>(v.own + (u - lead)) : -1;
  };
  auto finish = [&](int j, A r) {
    finish_piece(f, r, segment_of(j), v.lo + piece_start[j], v.has_carry && j == 0,
                 v.tail_runs_on && static_cast<std::uint64_t>(j) == lead + owned - 1, t, v.tile, out, out_index);
  };
  const unsigned p0 = threadIdx.x * S::items, p1 = p0 + S::items < length ? p0 + S::items : length;
  int owner_piece = -1;
  A owner_run = f.identity();
  if (p0 < p1) {
    // The piece that holds p0: the last that starts at or before it.
    int lo_j = 0, hi_j = static_cast<int>(pieces) - 1;
    while (lo_j < hi_j) {
      const int mid = (lo_j + hi_j + 1) / 2;
      if (piece_start[mid] <= p0) lo_j = mid;
      else hi_j = mid - 1;
    }
    int j = lo_j;
    unsigned next = piece_start[j + 1], run_from = p0;
    Accumulator<F> acc;
    acc.init(f);
    auto hand_on = [&](unsigned to) {  // the run [run_from, to) of piece j is done here
      const A r = acc.value(f);
      if (run_from == piece_start[j] && to == piece_start[j + 1]) finish(j, r);
      else if (run_from == p0 && run_from != piece_start[j]) first_run[threadIdx.x] = r, first_piece[threadIdx.x] = j;
      else owner_piece = j, owner_run = r;  // it starts here and runs on into the next threads
    };
    if (next >= p1 && p1 - p0 == S::items) {  // one piece holds them all: no checks
#pragma unroll
      for (int k = 0; k < S::vectors; ++k)
        add_vector(acc, f, stage[S::at(threadIdx.x * S::vectors + k)], v.lo + p0 + k * kVec);
    } else {
#pragma unroll
      for (int k = 0; k < S::vectors; ++k) {
        const Vec<In> r = stage[S::at(threadIdx.x * S::vectors + k)];
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const unsigned p = p0 + k * kVec + e;
          if (p < p1) {
            if (p >= next) {
              hand_on(p);
              while (piece_start[j + 1] <= p) ++j;  // past empty pieces too
              next = piece_start[j + 1];
              run_from = p;
              acc.init(f);
            }
            acc.add(f, f.lift(r.e[e], v.lo + p));
          }
        }
      }
    }
    hand_on(p1);
  }
  __syncthreads();
  // Each warp folds its runs of equal first_piece (contiguous) into the run's first lane, so an
  // owner adds at most one value a warp: a piece over the whole tile costs 8 reads, not 255.
  {
    const int key = first_piece[threadIdx.x];
    A r = key >= 0 ? first_run[threadIdx.x] : f.identity();
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const A other = shfl_down(r, offset);
      const int other_key = __shfl_down_sync(0xffffffffu, key, offset);
      if (lane + offset < 32 && other_key == key) r = f(r, other);
    }
    __syncwarp();
    first_run[threadIdx.x] = r;
  }
  __syncthreads();
  if (owner_piece >= 0) {
    A r = owner_run;
    for (int u = threadIdx.x + 1; u < P::block && first_piece[u] == owner_piece; u = (u / 32 + 1) * 32) r = f(r, first_run[u]);
    finish(owner_piece, r);
  }
}

template <class P, class F, class Out>
__global__ __launch_bounds__(P::block, P::min_blocks) void segments_kernel(const typename F::In* __restrict__ x,
                                                                          SegmentBounds b,
                                                                          SegmentTiles<typename F::acc_t> t, F f,
                                                                          Out* out, std::uint64_t* out_index) {
  using In = typename F::In;
  using S = TileStage<P, In>;
  constexpr int kVec = vector_width<In>();
  __shared__ Vec<In> stage[S::vectors * P::block];
  TileView v;
  v.tile = blockIdx.x;
  v.lo = v.tile * t.tile;
  v.hi = v.lo + t.tile < b.n ? v.lo + t.tile : b.n;
  const unsigned length = static_cast<unsigned>(v.hi - v.lo);
  // The tile's loads go first: they need only the tile, and overlap the lookups below.
  const In* tile_data = x + v.lo;
  const bool whole = length == static_cast<unsigned>(S::items * P::block) && reinterpret_cast<std::uintptr_t>(tile_data) % 16 == 0;
  Vec<In> raw[S::vectors];
  if (whole) {
#pragma unroll
    for (int u = 0; u < S::vectors; ++u) raw[u] = reinterpret_cast<const Vec<In>*>(tile_data)[threadIdx.x + u * P::block];
  }
  auto own_from = [&](std::uint64_t u) -> std::uint64_t {
    std::uint64_t s = b.offsets ? t.own[u] : (u * t.tile + b.row_length - 1) / b.row_length;
    return s < b.count ? s : b.count;
  };
  v.own = own_from(v.tile);
  v.own_end = v.tile + 1 < t.tiles ? own_from(v.tile + 1) : b.count;
  if (v.own_end < v.own) v.own_end = v.own;  // only with bad offsets
  const std::uint64_t first_start = b.begin(v.own);  // begin(count): where the last segment ends
  v.has_carry = v.own > 0 && first_start > v.lo;
  v.carry_end = first_start < v.hi ? first_start : v.hi;
  v.tail_runs_on = v.own_end > v.own && b.begin(v.own_end) > v.hi;
  if (threadIdx.x == 0) {
    t.carried[v.tile] = v.has_carry ? static_cast<long long>(v.own - 1) : -1;
    t.tail_of[v.tile] = -1;
  }
  // Thread mode's list: a leading piece (the carry, or elements before segment 0) unless a
  // segment starts right at lo, the owned segments, and the elements after the last segment.
  const std::uint64_t lead = first_start > v.lo || v.own_end == v.own ? 1 : 0;
  const std::uint64_t end = b.begin(b.count);
  const std::uint64_t trail = v.own_end == b.count && end < v.hi && (end > v.lo || v.own_end > v.own) ? 1 : 0;
  const std::uint64_t pieces = lead + (v.own_end - v.own) + trail;
  // Block-uniform: every thread of the block takes the same branch (both synchronise it).
  if (pieces > P::max_pieces) return segments_by_groups<P>(x, b, t, v, f, out, out_index);  // very many (empty) segments
  if (whole) {
#pragma unroll
    for (int u = 0; u < S::vectors; ++u) stage[S::at(threadIdx.x + u * P::block)] = raw[u];
  } else {  // the last tile, or misaligned data: element by element into the same places
    In* staged = reinterpret_cast<In*>(stage);
    for (unsigned q = threadIdx.x; q < length; q += P::block) staged[S::at(q / kVec) * kVec + q % kVec] = tile_data[q];
  }
  segments_by_threads<P>(b, t, v, lead, pieces, f, out, out_index, stage);
}

//! Equal rows, many of them: a group per row (1 to 32 lanes, about four 16-byte loads each, for
//! short rows; the block for long ones), rows round the groups, the loads all in flight. When rows are regular and plenty,
//! this beats the tiles: their bookkeeping (the lookups, the list, three barriers, the fold) cost
//! more instructions than the reading on an H200 (22 a element at 45% of the read probe).
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
    const std::uint64_t a = s < b.count ? s * b.row_length : 0, e = s < b.count ? a + b.row_length : 0;
    const A r = group_reduce<P::block>(group_partial<P, kNarrow>(x, a, e, rank, group, f), group, f, shared);
    if (s < b.count && rank == 0) write_segment(f, r, s, a, out, out_index);
  }
}

//! A warp per tile whose tail runs on: the tail and the carries of the tiles the segment covers.
template <class F, class Out>
__global__ void segment_tails_kernel(SegmentBounds b, SegmentTiles<typename F::acc_t> t, F f, Out* out,
                                     std::uint64_t* out_index) {
  using A = typename F::acc_t;
  const std::uint64_t tile = (blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (tile >= t.tiles) return;
  const long long s = t.tail_of[tile];
  if (s < 0) return;
  const std::uint64_t start = b.begin(s), stop = b.begin(s + 1);
  const std::uint64_t last = stop > 0 ? (stop - 1) / t.tile : tile;  // the tile of its last element
  A a = lane == 0 ? t.tail[tile] : f.identity();
  for (std::uint64_t u = tile + 1 + lane; u <= last && u < t.tiles; u += 32)
    if (t.carried[u] == s) a = f(a, t.carry[u]);
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) a = f(a, shfl_down(a, offset));
  if (lane == 0) write_segment(f, a, s, start, out, out_index);
}

//! Empty segments all (no tiles): each gets the identity.
template <class F, class Out>
__global__ void segment_identities_kernel(std::uint64_t count, F f, Out* out, std::uint64_t* out_index) {
  const std::uint64_t s = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (s < count) write_segment(f, f.identity(), s, 0, out, out_index);
}

}  // namespace xreduce::cuda
