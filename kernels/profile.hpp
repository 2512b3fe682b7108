#pragma once
// Per-op counters of the kernels a thread calls (halo train --profile): time, calls, and the bytes
// and floating-point operations each call's shape implies. One thread-local test when off.

#include <array>
#include <cstdint>

#include <halo/kernels/resources.hpp>

namespace halo::kernels {

/// The kinds of kernel an epoch spends its time in.
enum class Op : int { Gemm, Spmm, Elementwise, Loss, Optimizer };
inline constexpr int kNumOps = 5;

/// "gemm", "spmm", "elementwise", "loss", "optimizer".
const char* to_string(Op op);

/// What the calls of one kind added up to. bytes: the memory traffic the call's shape implies
/// (every operand read once and every output written once; an SpMM reads one input row per
/// stored entry, as an uncached gather does); flops: 2 m n k for a product, 2 per stored entry
/// and column for an SpMM, a few per element otherwise.
struct OpCounters {
  double seconds = 0;
  double bytes = 0;
  double flops = 0;
  std::int64_t calls = 0;
};

struct OpProfile {
  std::array<OpCounters, kNumOps> ops{};
  OpCounters& operator[](Op op) { return ops[static_cast<std::size_t>(op)]; }
  const OpCounters& operator[](Op op) const { return ops[static_cast<std::size_t>(op)]; }
};

/// Makes `profile` the calling thread's profile until the scope ends (nullptr: none); scopes
/// nest, the previous profile is restored. Kernels called on other threads are not counted.
class ProfileScope {
 public:
  explicit ProfileScope(OpProfile* profile);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  OpProfile* m_previous;
};

/// Counts one kernel call into the calling thread's profile, if any: placed at the top of a
/// public kernel function. Only the outermost timer of a thread counts (a kernel calling another
/// is one call of the outer kind). With a profile on a device, waits for the device before and
/// after the call so that its time is its own.
class OpTimer {
 public:
  OpTimer(const Resources& res, Op op, double bytes, double flops);
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  const Resources* m_res = nullptr;
  OpProfile* m_profile = nullptr;  // null: not counting
  Op m_op = Op::Gemm;
  double m_bytes = 0, m_flops = 0;
  std::int64_t m_start_ns = 0;
};

}  // namespace halo::kernels
