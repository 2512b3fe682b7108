#pragma once
// Single-source bodies of the blocked inclusive scan (kernels::inclusive_scan): block sums, one
// serial exclusive scan of the block sums, then each block scanned from its offset.

#include <cstdint>

#include <halo/kernels/hd.hpp>

namespace halo::kernels::detail {

/// sums[b] = a[b * block] + ... over block b of a[0, n).
struct BlockSumBody {
  const std::int64_t* a;
  std::int64_t n;
  std::int64_t block;
  std::int64_t* sums;
  HALO_HD void operator()(std::int64_t b) const {
    const std::int64_t lo = b * block;
    const std::int64_t hi = lo + block < n ? lo + block : n;
    std::int64_t s = 0;
    for (std::int64_t i = lo; i < hi; ++i) s += a[i];
    sums[b] = s;
  }
};

/// sums[0, num_blocks) becomes its exclusive prefix sums (one index: a serial pass).
struct ScanSumsBody {
  std::int64_t* sums;
  std::int64_t num_blocks;
  HALO_HD void operator()(std::int64_t) const {
    std::int64_t s = 0;
    for (std::int64_t b = 0; b < num_blocks; ++b) {
      const std::int64_t v = sums[b];
      sums[b] = s;
      s += v;
    }
  }
};

/// Inclusive scan of block b of a[0, n), starting from offsets[b] (the sum of earlier blocks).
struct BlockScanBody {
  std::int64_t* a;
  std::int64_t n;
  std::int64_t block;
  const std::int64_t* offsets;
  HALO_HD void operator()(std::int64_t b) const {
    const std::int64_t lo = b * block;
    const std::int64_t hi = lo + block < n ? lo + block : n;
    std::int64_t s = offsets[b];
    for (std::int64_t i = lo; i < hi; ++i) {
      s += a[i];
      a[i] = s;
    }
  }
};

}  // namespace halo::kernels::detail
