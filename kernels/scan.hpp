#pragma once
// In-place inclusive prefix sums of 64-bit counts (CSR offsets built from row lengths).

#include <cstdint>

#include <halo/kernels/resources.hpp>

namespace halo::kernels {

/// Entries of `block_sums` that inclusive_scan needs for n entries in blocks of `block`.
inline std::int64_t scan_blocks(std::int64_t n, std::int64_t block) {
  return (n + block - 1) / block;
}

/// a[0, n) becomes its inclusive prefix sums, in place, with the same three single-source bodies
/// on every device (so CPU and GPU give the same integers): per-block sums, one serial exclusive
/// scan of those, per-block scans. `block` entries are one index's work: large blocks keep the
/// serial middle pass short, small ones give a GPU enough indices. `a` and `block_sums` (at least
/// scan_blocks(n, block) entries) are on res's device; asynchronous on res's stream.
void inclusive_scan(const Resources& res, std::int64_t* a, std::int64_t n, std::int64_t* block_sums,
                    std::int64_t block);

}  // namespace halo::kernels
