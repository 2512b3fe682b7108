#pragma once
// Where an epoch's time goes (TrainConfig::profile, `halo train --profile`): the phases of its
// steps, the kernels of the training thread, and the machine's limits they are measured against.

#include <span>
#include <string>

#include <halo/kernels/profile.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::runtime {

/// One epoch's phases, in seconds, on this rank (zero when profiling is off).
struct EpochProfile {
  // Mini-batch preparation, on the producer thread with prefetch (overlapping the training
  // thread's phases), on the training thread without; on a device, the host's time to issue it.
  double sample_s = 0;  // drawing the blocks (sampler::NeighborSampler::sample)
  double gather_s = 0;  // input feature rows, the seeds' labels, the block weights
  double copy_s = 0;    // host-to-device copies of host-sampled blocks (device runs)
  // The training thread. wait_s: inside BatchSource::next(), waiting for a prepared batch (with
  // --prefetch 0: preparing it).
  double wait_s = 0;
  double forward_s = 0;
  double loss_s = 0;  // the loss and its gradient
  double backward_s = 0;
  double optimizer_s = 0;
  /// The kernels that forward, loss, backward and optimizer called on the training thread.
  kernels::OpProfile ops;
};

/// The median of every field over `epochs` (zero without epochs).
EpochProfile median_profile(std::span<const EpochProfile> epochs);

/// The machine's limits the kernels are compared with, measured by measure_machine_limits.
struct MachineLimits {
  /// STREAM-style triad a = b + s c over three 64 MiB float arrays on res's threads, best of 5
  /// (12 bytes per element; write-allocate traffic not counted, as in STREAM).
  double triad_bytes_per_s = 0;
  /// OpenBLAS sgemm 2048 x 2048 x 2048 on res's threads, best of 3.
  double sgemm_flops_per_s = 0;
};

/// Measures both on res's CPU threads now (about 0.5 s), anew on every call (shared machines
/// drift); `small`: 1 Mi floats and 256^3 (tests, smoke runs). bench/support/machine.hpp uses
/// the same measurements.
MachineLimits measure_machine_limits(const kernels::Resources& res, bool small = false);
double measure_triad_bytes_per_s(const kernels::Resources& res, bool small = false);
double measure_sgemm_flops_per_s(const kernels::Resources& res, bool small = false);

/// The fastest the machine could run `c`: max(bytes / triad, flops / sgemm rate), in seconds.
double limit_seconds(const kernels::OpCounters& c, const MachineLimits& m);

/// The `--profile` table: one line per phase and per kernel kind (seconds, share of the epoch,
/// and for kernels calls, GB moved, GFLOP, the achieved rates and the time at the machine's
/// limit), then the kernels' total against their limit. `epoch_s`: the epoch time the shares
/// are of; `mini_batch` adds the preparation phases.
std::string profile_table(const EpochProfile& p, double epoch_s, const MachineLimits& m,
                          bool mini_batch);

}  // namespace halo::runtime
