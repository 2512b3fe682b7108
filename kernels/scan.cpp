#include <halo/kernels/error.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/kernels/scan_body.hpp>

namespace halo::kernels {

void inclusive_scan(const Resources& res, std::int64_t* a, std::int64_t n, std::int64_t* block_sums,
                    std::int64_t block) {
  HALO_EXPECTS(n >= 0 && block >= 1, "inclusive_scan: n must be >= 0 and block >= 1");
  if (n == 0) return;
  const std::int64_t blocks = scan_blocks(n, block);
  launch(res, blocks, detail::BlockSumBody{a, n, block, block_sums}, n);
  launch(res, 1, detail::ScanSumsBody{block_sums, blocks}, blocks);
  launch(res, blocks, detail::BlockScanBody{a, n, block, block_sums}, n);
}

}  // namespace halo::kernels
