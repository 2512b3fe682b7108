#pragma once
// The host-side range check of the row ids an op reads or writes (gather, scatter-add, the
// gathering dropout).

#include <string>

#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels::detail {

/// Every idx[i] in [0, bound), checked on the host for CPU data; device data is validated where
/// it is produced.
template <class Idx>
void check_ids(const Resources& res, Span<const Idx> idx, std::int64_t bound, const char* op) {
  if (res.device() != Device::Cpu) return;
  for (std::int64_t i = 0; i < idx.size; ++i)
    HALO_EXPECTS(idx[i] >= 0 && idx[i] < bound, std::string(op) + ": row id " +
                                                    std::to_string(idx[i]) + " out of range [0, " +
                                                    std::to_string(bound) + ")");
}

}  // namespace halo::kernels::detail
