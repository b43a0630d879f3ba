#pragma once
// Host data that is not aligned to its element size is copied once to aligned memory, so no
// kernel ever dereferences a misaligned pointer (undefined behaviour, and a fault on some CPUs).

#include <cstdint>
#include <memory>

#include "xreduce/request.hpp"

namespace xreduce::detail {

//! `q` itself if its data is aligned; otherwise `q` pointing at an aligned copy held in `storage`
//! (of its elements, or of a view's whole span, strides unchanged).
//! Throws Error(out_of_memory) if the copy cannot be allocated.
Request with_aligned_data(const Request& q, std::unique_ptr<std::uint64_t[]>& storage);

}  // namespace xreduce::detail
