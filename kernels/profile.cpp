#include <chrono>

#include <halo/kernels/profile.hpp>

namespace halo::kernels {
namespace {
thread_local OpProfile* t_profile = nullptr;
thread_local int t_depth = 0;  // open OpTimers that count

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

const char* to_string(Op op) {
  switch (op) {
    case Op::Gemm:
      return "gemm";
    case Op::Spmm:
      return "spmm";
    case Op::Elementwise:
      return "elementwise";
    case Op::Loss:
      return "loss";
    case Op::Optimizer:
      return "optimizer";
  }
  return "?";
}

ProfileScope::ProfileScope(OpProfile* profile) : m_previous(t_profile) { t_profile = profile; }
ProfileScope::~ProfileScope() { t_profile = m_previous; }

OpTimer::OpTimer(const Resources& res, Op op, double bytes, double flops) {
  if (t_profile == nullptr || t_depth > 0) return;
  if (res.device() != Device::Cpu) res.synchronize();
  m_res = &res;
  m_profile = t_profile;
  m_op = op;
  m_bytes = bytes;
  m_flops = flops;
  ++t_depth;
  m_start_ns = now_ns();
}

OpTimer::~OpTimer() {
  if (m_profile == nullptr) return;
  if (m_res->device() != Device::Cpu) {
    try {
      m_res->synchronize();
    } catch (...) {  // the kernel's own error surfaces at the next synchronisation
    }
  }
  --t_depth;
  OpCounters& c = (*m_profile)[m_op];
  c.seconds += 1e-9 * static_cast<double>(now_ns() - m_start_ns);
  c.bytes += m_bytes;
  c.flops += m_flops;
  ++c.calls;
}

}  // namespace halo::kernels
