#pragma once
// Measures the cost model's coefficients (cluster::CostModel) on this machine: `halo calibrate`.

#include <halo/cluster/plan.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::cluster {

/// How long and how large the measurements are.
struct CalibrateConfig {
  /// Timed calls of each kernel per window (at least; and at least 0.1 s of them): their mean is
  /// kept, so that a loaded machine's sharing shows as it does over an epoch. Round trips of the
  /// link: 30 x repeats, their median.
  int repeats = 7;
  /// Independent rounds of every measurement (each kernel's window, each whole-step and in-step
  /// message run), their median kept: one round disturbed by another process (a time slice
  /// lost, a page-cache flush) then moves nothing. Odd counts give a measured value itself.
  int rounds = 3;
  /// R-MAT scale of the graph the SpMM and sampler terms are measured on (2^scale nodes,
  /// degree 8); the whole-step fits' graphs are sized from it too.
  int rmat_scale = 14;
  /// Scale (2^scale nodes) of the largest graph of the whole-step fits (the working-set rule).
  int large_rmat_scale = 19;
};

/// The compute terms, measured on res's CPU threads, with two points per alpha + beta fit:
///   gemm:   a 16 x 16 x 16 product (alpha) and a 16384 x 128 x 64 one (beta), then the three
///           products of a layer (forward, weight and input gradient) on 16384 rows with in and
///           out widths of 16, 64 and 256 (gemm_shapes);
///   spmm:   an R-MAT graph at 1 and 64 columns (per entry and per byte in the caches), a
///           16-row graph (alpha), random graphs without hubs whose input is 16 times the R-MAT
///           one's at 16 and 256 columns (per entry and per byte beyond the caches);
///   elementwise: ReLU over 16 Mi floats (8 bytes moved per float);
///   loss:   the log-softmax loss and its gradient over every other row of 2^16 x 16 (per cell);
///   sampler: batches of 1024 seeds, fan-outs 10,5, on the R-MAT graph (per sampled edge, and
///            the per-batch remainder as alpha);
///   disk: 32 MiB written and fsynced in `scratch_dir`;
///   memory: the resident set after one epoch of each mode on a 64-node graph (libraries,
///           threads, BLAS buffers, the code pages a run touches);
///   step:   GCN full graph (5 epochs) and SAGE mini-batch (fan-outs 10,5) on random graphs
///           without hubs (datasets::make_synthetic, degree 8, 16 features) of 2^scale nodes,
///           scales from rmat_scale - 2 to large_rmat_scale: measured median epoch / modelled
///           epoch at each (the working-set rule); mini-batch at batches of 1024, 128 and 32 on the
///           small graph, solved for the scale and the per-batch and per-epoch fixed costs.
/// The link and MPI terms keep `base`'s values. Host only.
CostModel calibrate_compute(const kernels::Resources& res, const CalibrateConfig& config,
                            const std::filesystem::path& scratch_dir, CostModel base = {});

/// The link terms between ranks 0 and 1 of `comm` (collective; at least 2 ranks): ping-pong of
/// 8-byte and 1 MiB messages (30 x repeats round trips each, the median round trip: a rank
/// descheduled by another process must not count as the link), alpha = half the small round
/// trip, beta = the large one's extra half round trip per byte. Then the collectives' entry for
/// comm.size() ranks (CostModel::collectives; other rank counts' entries are kept): the in-step
/// message latency (full_graph_message_s, mini_batch_message_s) from short Trainer runs on all
/// ranks of `comm` over a METIS partition of generated R-MAT graphs (16 features; GCN full graph on
/// scale 12, SAGE mini-batch with batches of 1024 on config.rmat_scale + 1; config.rounds runs
/// each, the median), measured epoch minus the plan's epoch without message latency, per message
/// the plan counts; before the mini-batch latency, mini_batch_fetch_row_s from one 4-epoch run on
/// the same graph (fetch time, less the plan's charge for the rows' bytes, per remote row
/// fetched). The plans assume the cores the ranks share
/// (the union of their CPU affinities). Written under `scratch_dir` and removed. Also what an MPI
/// rank adds to the resident set (mpi_rank_extra_bytes: this process's resident set minus
/// base.process_base_bytes, which must come from a one-process calibration). Returns `base` with
/// those terms replaced.
CostModel calibrate_link(const kernels::Resources& res, runtime::Comm& comm,
                         const CalibrateConfig& config, const std::filesystem::path& scratch_dir,
                         CostModel base);

/// One epoch of each mode (one process) on a 64-node R-MAT graph: after it, libraries, OpenMP
/// threads, BLAS buffers and the code pages a run touches are resident, and the graph's few KiB
/// are freed again. What the footprint terms are measured after.
void warm_up(const kernels::Resources& res);

}  // namespace halo::cluster
