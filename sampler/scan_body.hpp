#pragma once
// Single-source bodies of the two-pass inclusive scan: block sums, then per-block scans from the
// scanned block sums (the serial middle pass runs on the host).

#include <cstdint>

#include <halo/kernels/hd.hpp>

namespace halo::sampler::detail {

/// Entries per scan block: large enough that the serial pass over block sums is negligible,
/// small enough that 1M entries give every thread many blocks.
constexpr std::int64_t kScanBlock = std::int64_t{1} << 14;

/// sums[b] = a[b * kScanBlock] + ... over block b of a[0, n).
struct BlockSumBody {
  const std::int64_t* a;
  std::int64_t n;
  std::int64_t* sums;
  HALO_HD void operator()(std::int64_t b) const {
    const std::int64_t lo = b * kScanBlock;
    const std::int64_t hi = lo + kScanBlock < n ? lo + kScanBlock : n;
    std::int64_t s = 0;
    for (std::int64_t i = lo; i < hi; ++i) s += a[i];
    sums[b] = s;
  }
};

/// Inclusive scan of block b of a[0, n), starting from offsets[b] (the sum of earlier blocks).
struct BlockScanBody {
  std::int64_t* a;
  std::int64_t n;
  const std::int64_t* offsets;
  HALO_HD void operator()(std::int64_t b) const {
    const std::int64_t lo = b * kScanBlock;
    const std::int64_t hi = lo + kScanBlock < n ? lo + kScanBlock : n;
    std::int64_t s = offsets[b];
    for (std::int64_t i = lo; i < hi; ++i) {
      s += a[i];
      a[i] = s;
    }
  }
};

}  // namespace halo::sampler::detail
