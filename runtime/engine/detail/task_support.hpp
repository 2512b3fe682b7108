#pragma once
// What every task's step shares (the tasks in runtime/tasks/ include it; not installed API):
// the one gradient all-reduce, the optimizer's configuration, the checkpoint state of
// parameters and Adam, the divergence check, and the phase clock of TrainConfig::profile.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <halo/kernels/optim.hpp>
#include <halo/kernels/profile.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/nn/module.hpp>
#include <halo/nn/optimizer.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/engine/profile.hpp>
#include <halo/runtime/engine/task.hpp>

namespace halo::runtime::detail {

/// Sums every parameter's gradient and `loss` over the ranks of `comm` in one all-reduce
/// through `flat` (device) / `host` (host-memory comm with device gradients), allocated once;
/// returns the summed loss (as a float) and adds the sum's wall time to `seconds` (timed once
/// `res` finished its queued work: the backward pass belongs to compute). One rank: nothing
/// moves, no wait, `loss` comes back as given.
double allreduce_gradients(const kernels::Resources& res, Comm& comm,
                           const std::vector<nn::Parameter<float>*>& params, double loss,
                           kernels::Tensor<float>& flat, std::vector<float>& host, double& seconds);
/// The parameters' values by name (what a task's state() starts with).
std::vector<NamedTensor> parameter_state(const std::vector<nn::Parameter<float>*>& params);
/// Adam's moments of `params` as "adam.m/NAME" and "adam.v/NAME" (a task's optimizer_state()).
std::vector<NamedTensor> adam_state(nn::Adam<float>& adam,
                                    const std::vector<nn::Parameter<float>*>& params);
/// The epoch's communication counters of `s` (bytes and counts summed over the ranks of
/// `comm`, times averaged), in one all-reduce; one rank: left as they are.
void reduce_epoch_counters(Comm& comm, EpochStats& s);
/// halo::Error naming the epoch and batch (1-based) when `loss` is not finite: the run diverged.
void expect_finite(double loss, std::uint64_t epoch, std::int64_t batch);
/// The Adam (PyTorch semantics) of every task: learning rate `lr`, weight decay `weight_decay`
/// (0 for SparseAdam's embeddings).
kernels::AdamConfig adam_config(double lr, double weight_decay);

/// The phases of an epoch's steps (TrainConfig::profile): lap(field) adds the time since the
/// last mark() or lap() to `profile`.*field, once `res` finished the work queued in it; while
/// it lives, the calling thread's kernels count into profile.ops. Off: every call is a no-op.
class PhaseClock {
 public:
  PhaseClock(const kernels::Resources& res, bool on, EpochProfile& profile)
      : m_res(res), m_profile(on ? &profile : nullptr), m_scope(on ? &profile.ops : nullptr) {}
  bool on() const { return m_profile != nullptr; }
  void mark() {
    if (on()) m_mark = std::chrono::steady_clock::now();
  }
  /// Adds the phase ending now to `field`; returns its seconds (0 when off).
  double lap(double EpochProfile::*field) {
    if (!on()) return 0;
    m_res.synchronize();
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - m_mark).count();
    m_profile->*field += s;
    m_mark = now;
    return s;
  }

 private:
  const kernels::Resources& m_res;
  EpochProfile* m_profile;
  kernels::ProfileScope m_scope;
  std::chrono::steady_clock::time_point m_mark = std::chrono::steady_clock::now();
};

}  // namespace halo::runtime::detail
