// `halo calibrate`'s measurements: the coefficients of the cost model on this machine.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include <halo/cluster/calibrate.hpp>
#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/generators/synthetic.hpp>
#include <halo/kernels/cpus.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/kernels/profile.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/sampler/batch.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

namespace halo::cluster {

using runtime::Comm;
using runtime::current_host_memory_bytes;
using runtime::EpochStats;
using runtime::local_shard;
using runtime::MiniBatchConfig;
using runtime::ReduceOp;
using runtime::Request;
using runtime::Shard;
using runtime::TrainConfig;
using runtime::TrainResult;

namespace {

using Clock = std::chrono::steady_clock;
using kernels::Tensor;

/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Cores this process may run on: the fits below plan this machine's runs, whose producer
/// threads overlap the training threads only where they have cores of their own.
int usable_cores() { return static_cast<int>(kernels::usable_cpus().size()); }

/// Cores the ranks of `comm` may run on together: the union of their CPUs (ranks bound to one
/// core each, `mpiexec --bind-to core`, share as many cores as there are ranks; unbound ranks
/// share the machine's).
int shared_cores(Comm& comm) {
  std::vector<double> used(CPU_SETSIZE, 0.0);
  for (const int cpu : kernels::usable_cpus()) used[static_cast<std::size_t>(cpu)] = 1;
  comm.allreduce(kernels::Span<double>(used.data(), static_cast<std::int64_t>(used.size())),
                 ReduceOp::Sum);
  return std::max<int>(
      1, static_cast<int>(std::count_if(used.begin(), used.end(), [](double v) { return v > 0; })));
}

/// Mean seconds of a call of `f` over one window: after one untimed warm-up call, at least
/// `repeats` calls and at least `min_seconds` in all. The mean over a window, not the best or
/// median call, so that the figure carries the machine's sharing of its cores the way a whole
/// epoch does.
double window_seconds(int repeats, const std::function<void()>& f, double min_seconds) {
  f();
  const auto start = Clock::now();
  double elapsed = 0;
  std::int64_t calls = 0;
  while (calls < repeats || elapsed < min_seconds) {
    f();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return elapsed / static_cast<double>(calls);
}

/// The median of `rounds` values of `f()`.
double median_of(int rounds, const std::function<double()>& f) {
  std::vector<double> v;
  for (int i = 0; i < std::max(1, rounds); ++i) v.push_back(f());
  return median(std::move(v));
}

/// The median over `rounds` windows (of at least 0.1 s each) of a call's mean seconds.
double mean_seconds(int repeats, int rounds, const std::function<void()>& f) {
  return median_of(rounds, [&] { return window_seconds(repeats, f, 0.1); });
}

/// alpha + beta x work through (w1, t1) and (w2, t2), w2 > w1; both clamped at >= 0.
std::pair<double, double> fit(double w1, double t1, double w2, double t2) {
  const double beta = std::max(0.0, (t2 - t1) / (w2 - w1));
  return {std::max(0.0, t1 - beta * w1), beta};
}

/// The least-squares x of rows . x = y over the unknowns `used` (the others held at 0): the
/// normal equations by Gaussian elimination; {-1, -1, -1} when they are singular.
std::array<double, 3> least_squares3(const std::vector<std::array<double, 3>>& rows,
                                     const std::vector<double>& y, std::array<bool, 3> used) {
  double a[3][3] = {}, b[3] = {};
  for (std::size_t k = 0; k < rows.size(); ++k)
    for (std::size_t i = 0; i < 3; ++i) {
      if (!used[i]) continue;
      b[i] += rows[k][i] * y[k];
      for (std::size_t j = 0; j < 3; ++j)
        if (used[j]) a[i][j] += rows[k][i] * rows[k][j];
    }
  for (std::size_t i = 0; i < 3; ++i)
    if (!used[i]) a[i][i] = 1;
  for (int i = 0; i < 3; ++i) {
    int piv = i;
    for (int r = i + 1; r < 3; ++r)
      if (std::abs(a[r][i]) > std::abs(a[piv][i])) piv = r;
    std::swap(a[i], a[piv]);
    std::swap(b[i], b[piv]);
    if (std::abs(a[i][i]) < 1e-300) return {-1, -1, -1};
    for (int r = 0; r < 3; ++r) {
      if (r == i) continue;
      const double f = a[r][i] / a[i][i];
      for (int j = 0; j < 3; ++j) a[r][j] -= f * a[i][j];
      b[r] -= f * b[i];
    }
  }
  return {b[0] / a[0][0], b[1] / a[1][1], b[2] / a[2][2]};
}

Tensor<float> filled(const kernels::Resources& res, std::int64_t rows, std::int64_t cols, float v) {
  Tensor<float> t(res, rows, cols);
  kernels::fill(res, t.span(), v);
  return t;
}

}  // namespace

void warm_up(const kernels::Resources& res) {
  datasets::RmatConfig tiny;
  tiny.scale = 6;
  tiny.num_features = 4;
  TrainConfig config;
  config.epochs = 1;
  for (const bool mini : {false, true}) {
    if (mini) {
      MiniBatchConfig mb;
      mb.batch_size = 4;
      mb.fanouts = {2, 2};
      config.mini_batch = mb;
      config.model.kind = nn::ModelKind::Sage;
    }
    Shard shard = local_shard(res, datasets::make_rmat(res, tiny));
    train(res, shard, config);
  }
}

CostModel calibrate_compute(const kernels::Resources& res, const CalibrateConfig& c,
                            const std::filesystem::path& scratch_dir, CostModel m) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu, "calibrate: the CPU is measured");
  HALO_EXPECTS(c.repeats >= 1 && c.rmat_scale >= 4 && c.rmat_scale <= 22 &&
                   c.large_rmat_scale > c.rmat_scale && c.large_rmat_scale <= 22,
               "calibrate: repeats >= 1 and R-MAT scales 4 <= rmat_scale < large_rmat_scale <= 22 "
               "expected");
  const int r = c.repeats;
  // The process's own footprint, measured first (warm_up).
  warm_up(res);
  m.process_base_bytes = current_host_memory_bytes();
  // GEMM.
  {
    auto run = [&](std::int64_t rows, std::int64_t k, std::int64_t n) {
      Tensor<float> a = filled(res, rows, k, 0.5f), b = filled(res, k, n, 0.25f), o(res, rows, n);
      const double s = mean_seconds(r, c.rounds, [&] {
        kernels::gemm<float>(res, kernels::Trans::No, kernels::Trans::No, 1.f, a.view(), b.view(),
                             0.f, o.view());
      });
      return std::pair<double, double>{2.0 * rows * k * n, s};
    };
    const auto [f1, t1] = run(16, 16, 16);
    const auto [f2, t2] = run(kGemmCalibrationRows, 128, 64);
    std::tie(m.gemm_alpha_s, m.gemm_s_per_flop) = fit(f1, t1, f2, t2);
    // The rate of each product of a layer (forward X W, weight gradient X^T dY, input gradient
    // dY W^T) on a grid of widths: BLAS's rate moves with the shape (gemm_s_per_flop_of).
    m.gemm_shapes.clear();
    const std::int64_t rows = kGemmCalibrationRows;
    for (const GemmPass pass : kGemmPasses)
      for (const std::int64_t in : kGemmCalibrationWidths)
        for (const std::int64_t out : kGemmCalibrationWidths) {
          Tensor<float> x = filled(res, rows, in, 0.5f), w = filled(res, in, out, 0.25f),
                        y = filled(res, rows, out, 0.125f);
          const double s = mean_seconds(r, c.rounds, [&] {
            using kernels::Trans;
            if (pass == GemmPass::Forward)
              kernels::gemm<float>(res, Trans::No, Trans::No, 1.f, x.view(), w.view(), 0.f,
                                   y.view());
            else if (pass == GemmPass::WeightGrad)
              kernels::gemm<float>(res, Trans::Yes, Trans::No, 1.f, x.view(), y.view(), 0.f,
                                   w.view());
            else
              kernels::gemm<float>(res, Trans::No, Trans::Yes, 1.f, y.view(), w.view(), 0.f,
                                   x.view());
          });
          const double flops = 2.0 * static_cast<double>(rows * in * out);
          m.gemm_shapes.push_back({pass, in, out, std::max(s - m.gemm_alpha_s, 0.1 * s) / flops});
        }
  }
  // The R-MAT graph of the SpMM and sampler terms.
  datasets::RmatConfig rc;
  rc.scale = c.rmat_scale;
  rc.avg_degree = 8;
  rc.num_features = 1;
  datasets::Dataset ds = datasets::make_rmat(res, rc);
  const std::int64_t n = ds.num_nodes();
  const auto e = static_cast<double>(ds.graph.num_edges());
  {
    // Seconds of a product of g's adjacency (unit weights) with a `cols`-column input.
    auto product_seconds = [&](const datasets::Dataset& g, std::int64_t cols) {
      const std::int64_t rows = g.num_nodes();
      kernels::CsrMatrix<kernels::NodeId, float> a{
          g.graph.indptr.clone(res), g.graph.indices.clone(res),
          filled(res, g.graph.num_edges(), 1, 1.f), rows, false};
      Tensor<float> x = filled(res, rows, cols, 1.f), o(res, rows, cols);
      return mean_seconds(r, c.rounds, [&] {
        kernels::spmm<kernels::NodeId, float>(res, a.view(), x.view(), o.view());
      });
    };
    const double t1 = product_seconds(ds, 1), t64 = product_seconds(ds, 64);
    // 16 rows of one entry each: the call's fixed cost.
    kernels::CsrMatrix<kernels::NodeId, float> tiny{
        Tensor<std::int64_t>::from_host(res,
                                        [] {
                                          std::vector<std::int64_t> p(17);
                                          std::iota(p.begin(), p.end(), 0);
                                          return p;
                                        }()),
        Tensor<kernels::NodeId>::from_host(res, std::vector<kernels::NodeId>(16, 0)),
        filled(res, 16, 1, 1.f), 16, false};
    Tensor<float> tx = filled(res, 16, 1, 1.f), to(res, 16, 1);
    m.spmm_alpha_s = mean_seconds(r, c.rounds, [&] {
      kernels::spmm<kernels::NodeId, float>(res, tiny.view(), tx.view(), to.view());
    });
    m.spmm_s_per_byte = std::max(0.0, (t64 - t1) / (e * 63 * 4));
    m.spmm_s_per_edge = std::max(0.0, (t1 - m.spmm_alpha_s) / e - 4 * m.spmm_s_per_byte);
    m.spmm_footprint_bytes = static_cast<double>(n) * 64 * 4;
    // The per-entry and per-byte rates of a gather that misses the caches: random graphs
    // without hubs (every row gathered about as often) and inputs of 16 x spmm_footprint_bytes
    // (as a layer's input of a large batch or part): rows of 16 columns (a cache line) and of
    // 256 (sixteen), 64 MiB at the default scale. The entries the plan counts as hits
    // (spmm_miss_share) at the in-cache rates, the rest solved for.
    const std::int64_t cached_rows = n;  // spmm_footprint_bytes of 64-column rows
    const std::array<std::int64_t, 2> widths = {16, 256};
    std::array<double, 2> cost{};
    for (std::size_t i = 0; i < widths.size(); ++i) {
      datasets::SyntheticConfig sc;
      sc.num_nodes = 16 * cached_rows * 64 / widths[i];
      sc.avg_degree = 8;
      sc.num_features = 1;
      sc.seed = 1;
      const datasets::Dataset u = datasets::make_synthetic(res, sc);
      const auto entries = static_cast<double>(u.graph.num_edges());
      const auto cols = static_cast<double>(widths[i]);
      const double miss =
          spmm_miss_share(m, entries, cols, static_cast<double>(sc.num_nodes), nullptr);
      const double hit = m.spmm_s_per_edge + cols * 4 * m.spmm_s_per_byte;
      cost[i] = std::max(0.0, product_seconds(u, widths[i]) / entries - (1 - miss) * hit) /
                std::max(miss, 1e-3);
    }
    m.spmm_streaming_s_per_byte = std::max(m.spmm_s_per_byte, (cost[1] - cost[0]) / (240 * 4));
    m.spmm_streaming_s_per_edge =
        std::max(m.spmm_s_per_edge, cost[0] - 16 * 4 * m.spmm_streaming_s_per_byte);
  }
  // Element-wise passes: ReLU over 16 floats (the call), over kStreamingPassBytes moved
  // (beyond the caches) and over kCachedPassBytes moved, over and over (in them).
  {
    auto relu_s = [&](double bytes_moved) {
      const auto count = static_cast<std::int64_t>(bytes_moved / 8);
      Tensor<float> x = filled(res, count, 1, -0.5f), y(res, count, 1);
      return mean_seconds(r, c.rounds, [&] { kernels::relu<float>(res, x.span(), y.span()); });
    };
    m.elementwise_alpha_s = relu_s(8 * 16);
    m.elementwise_s_per_byte =
        std::max(0.0, relu_s(kStreamingPassBytes) - m.elementwise_alpha_s) / kStreamingPassBytes;
    m.elementwise_cached_s_per_byte =
        std::max(0.0, relu_s(kCachedPassBytes) - m.elementwise_alpha_s) / kCachedPassBytes;
  }
  // The loss and its gradient over every other row of 2^16 rows x 16 classes: seconds per
  // scored cell, the gradient's zeroing of every row (an element-wise pass) left out.
  {
    const std::int64_t rows = 65536, classes = 16;
    std::vector<float> host(static_cast<std::size_t>(rows * classes));
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 7) * 0.25f;
    const Tensor<float> logits = Tensor<float>::from_host(res, host, rows, classes);
    Tensor<float> grad(res, rows, classes);
    std::vector<std::int32_t> label(static_cast<std::size_t>(rows));
    for (std::int64_t i = 0; i < rows; ++i)
      label[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % classes);
    const Tensor<std::int32_t> labels = Tensor<std::int32_t>::from_host(res, label);
    std::vector<std::int64_t> scored;
    for (std::int64_t i = 0; i < rows; i += 2) scored.push_back(i);
    const Tensor<std::int64_t> ids = Tensor<std::int64_t>::from_host(res, scored);
    const double s = mean_seconds(r, c.rounds, [&] {
      kernels::log_softmax_nll<std::int64_t, float>(res, logits.view(), labels.span(), ids.span());
      kernels::log_softmax_nll_backward<std::int64_t, float>(res, logits.view(), labels.span(),
                                                             ids.span(), grad.view());
    });
    const double cells = static_cast<double>(scored.size()) * static_cast<double>(classes);
    const double zeroing = 2 * m.elementwise_alpha_s +
                           m.elementwise_s_per_byte * static_cast<double>(rows * classes) * 4;
    m.loss_s_per_cell = std::max(0.0, s - zeroing) / cells;
  }
  // The sampler.
  {
    const std::int64_t batch = std::min<std::int64_t>(1024, n);
    sampler::SamplerConfig sc;
    sc.fanouts = {10, 5};
    sampler::NeighborSampler s(res, ds.graph, batch, sc);
    std::vector<kernels::NodeId> seeds(static_cast<std::size_t>(batch));
    std::uint64_t b = 0;
    double edges = 0;
    auto one = [&] {
      for (std::int64_t i = 0; i < batch; ++i)
        seeds[static_cast<std::size_t>(i)] =
            static_cast<kernels::NodeId>((static_cast<std::uint64_t>(i) * 2654435761u + b * 7919) %
                                         static_cast<std::uint64_t>(n));
      std::sort(seeds.begin(), seeds.end());
      seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
      const sampler::MiniBatch& mb =
          s.sample(res, {seeds.data(), static_cast<std::int64_t>(seeds.size())}, 0, b++);
      edges = 0;
      for (const sampler::Block& blk : mb.blocks) edges += static_cast<double>(blk.csr.num_edges());
      seeds.resize(static_cast<std::size_t>(batch));
    };
    const double t = mean_seconds(r, c.rounds, one);
    // The per-edge cost carries the batch's work; a 1-seed batch gives the fixed part.
    std::vector<kernels::NodeId> one_seed = {0};
    const double t0 = mean_seconds(r, c.rounds, [&] {
      s.sample(res, {one_seed.data(), 1}, 0, b++);
    });
    m.sampler_alpha_s = t0;
    m.sampler_s_per_edge = edges > 0 ? std::max(0.0, t - t0) / edges : m.sampler_s_per_edge;
  }
  // Gathering a batch's input rows as the producer does (sampler::gather_feature_rows with the
  // input dropout): scattered rows of a 64 MiB feature matrix (beyond the caches, as a large
  // graph's), 16 and 128 floats a row: seconds per row and per byte.
  {
    const std::int64_t rows = 16384;
    auto per_row = [&](std::int64_t cols) {
      const std::int64_t n = (std::int64_t{64} << 20) / (4 * cols);
      const kernels::FeatureMatrix<float> x = filled(res, n, cols, 1.f);
      kernels::FeatureMatrix<float> out = Tensor<float>(res, rows, cols);
      std::vector<kernels::NodeId> ids(static_cast<std::size_t>(rows));
      for (std::int64_t i = 0; i < rows; ++i)
        ids[static_cast<std::size_t>(i)] = static_cast<kernels::NodeId>(
            (static_cast<std::uint64_t>(i) * 2654435761u) % static_cast<std::uint64_t>(n));
      Tensor<std::int64_t> scan(res, sampler::gather_scan_sums_size(rows), 1);
      std::int64_t syncs = 0;
      sampler::GatherDropout dropout{{1, 0, 0, 0, {ids.data(), rows}}, 0.5f};
      return mean_seconds(r, c.rounds,
                          [&] {
                            sampler::gather_feature_rows(res, x, {ids.data(), rows}, out, scan,
                                                         syncs, dropout);
                          }) /
             static_cast<double>(rows);
    };
    const double t16 = per_row(16), t128 = per_row(128);
    m.gather_s_per_byte = std::max(0.0, (t128 - t16) / (112.0 * 4));
    m.gather_s_per_row = std::max(0.0, t16 - 64 * m.gather_s_per_byte);
  }
  // Disk: a checkpoint-sized write, fsynced.
  {
    const std::filesystem::path path =
        scratch_dir / (".halo-calibrate-" + std::to_string(::getpid()));
    const std::vector<char> block(std::size_t{1} << 20, 'x');
    const int blocks = 32;
    const auto start = Clock::now();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw IoError(path.string() + ": cannot create: " + std::strerror(errno));
    bool ok = true;
    for (int i = 0; i < blocks && ok; ++i)
      ok = ::write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size());
    ok = ok && ::fsync(fd) == 0;
    ::close(fd);
    std::filesystem::remove(path);
    if (!ok) throw IoError(path.string() + ": write error");
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    m.disk_s_per_byte = s / (static_cast<double>(blocks) * static_cast<double>(block.size()));
  }
  // Whole steps: short Trainer runs on random graphs without hubs, 16 features (GCN full
  // graph, SAGE mini-batch), of growing size, measured against what the terms above predict for
  // them; the full graph again on R-MAT graphs. Without hubs the sparse products' terms hold
  // and the scale keeps what the step adds to its kernels; on R-MAT graphs it also takes what
  // the terms miss of a skewed graph, which fitted alone carried into every graph
  // (docs/performance.md).
  {
    // The step scale multiplies the modelled compute but its dense part (the GEMMs and Adam,
    // costed as measured): measured - dense = scale x (modelled - dense) (+ the mini-batch
    // fixed costs), the measured compute being the training thread's time and the measured
    // dense part its profiled GEMM and optimizer kernels (the step graphs' tall, narrow
    // products run slower than the GEMM table's 16384-row shapes: subtracting the modelled
    // dense part put that error into every graph's scale).
    struct Fit {
      double measured = 0, modelled = 0;  // the training thread's epoch less its dense part
      double batches = 1, working_set = 0;
      // Mini-batch: the producer's sampling and gathering of an epoch, measured (the median
      // epoch's, median over the rounds) and as the sampler and gather terms predict them.
      double producer_measured = 0, producer_modelled = 0;
      double hubs = 0;  // the graph's hub share
      double producer() const {
        return producer_modelled > 0 ? producer_measured / producer_modelled : 1.0;
      }
    };
    // A graph of 2^scale nodes, degree 8, 16 features: random without hubs, or R-MAT.
    auto step_graph = [&](int scale, bool skewed) {
      if (skewed) {
        datasets::RmatConfig rmat;
        rmat.scale = scale;
        rmat.avg_degree = 8;
        rmat.num_features = 16;
        return datasets::make_rmat(res, rmat);
      }
      datasets::SyntheticConfig random;
      random.num_nodes = std::int64_t{1} << scale;
      random.avg_degree = 8;
      random.num_features = 16;
      random.seed = 2;
      return datasets::make_synthetic(res, random);
    };
    auto run_step = [&](int scale, TrainConfig config, int epochs, bool skewed = false) {
      config.epochs = epochs;
      config.model.hidden = 16;
      config.profile = true;  // the dense kernels' time
      const datasets::Dataset ds = step_graph(scale, skewed);
      // train() consumes its shard's features: a fresh shard per round.
      Shard shard = local_shard(res, ds.clone(res));
      CostModel unscaled = m;
      unscaled.full_graph_steps.clear();
      unscaled.full_graph_skewed_steps.clear();
      unscaled.mini_batch_steps.clear();
      unscaled.batch_alpha_s = unscaled.epoch_alpha_s = 0;
      unscaled.host_cores = usable_cores();
      const PlanInput input = shard_plan_input(shard);
      const Plan plan = make_plan(input, config, unscaled, "cpu", res.cpu_exec().num_threads);
      std::vector<double> producer;
      const double measured = median_of(c.rounds, [&, first = true]() mutable {
        if (!first) shard = local_shard(res, ds.clone(res));
        first = false;
        // The training thread's time (the epoch less its waits for batches) less its GEMM and
        // optimizer kernels, and the producer's (sampling and gathering), each the median
        // epoch's.
        const TrainResult r = train(res, shard, config).result;
        std::vector<double> compute, produce;
        for (const EpochStats& e : r.history) {
          const kernels::OpProfile& ops = e.profile.ops;
          compute.push_back(e.epoch_time_s - e.batch_wait_s - ops[kernels::Op::Gemm].seconds -
                            ops[kernels::Op::Optimizer].seconds);
          produce.push_back(e.profile.sample_s + e.profile.gather_s);
        }
        producer.push_back(median(std::move(produce)));
        return median(std::move(compute));
      });
      const RankPlan& rp = plan.per_rank.front();
      return Fit{measured,
                 rp.compute_s - rp.dense_s,
                 static_cast<double>(plan.batches_per_epoch),
                 static_cast<double>(rp.working_set_bytes),
                 median(std::move(producer)),
                 rp.sampling_s,
                 hub_share(input.graph)};
    };
    // The working-set rule's graphs: 2^scale nodes for two scales below rmat_scale (a working
    // set that fits in the caches, as small graphs such as Cora do), rmat_scale, every second
    // scale above it, and large_rmat_scale (12, 14, 16, 18, 19 by default: working sets about
    // 4x apart).
    std::vector<int> scales;
    if (c.rmat_scale - 2 >= 4) scales.push_back(c.rmat_scale - 2);
    for (int s = c.rmat_scale; s < c.large_rmat_scale; s += 2) scales.push_back(s);
    scales.push_back(c.large_rmat_scale);
    auto point = [](const Fit& f, double scale) {
      return StepScalePoint{static_cast<std::int64_t>(f.working_set), scale, f.producer()};
    };
    TrainConfig full;
    full.model.kind = nn::ModelKind::Gcn;
    // Full graph: on random graphs without hubs, then on R-MAT graphs of the same sizes (the
    // skewed graphs' rule), each rule's hub share the largest graph's.
    m.full_graph_steps.clear();
    m.full_graph_skewed_steps.clear();
    for (const bool skewed : {false, true})
      for (const int s : scales) {
        const Fit f = run_step(s, full, s <= c.rmat_scale ? 5 : 3, skewed);
        (skewed ? m.full_graph_skewed_steps : m.full_graph_steps)
            .push_back(point(f, f.modelled > 0 ? std::max(0.0, f.measured) / f.modelled : 1.0));
        (skewed ? m.full_graph_skewed_hub_share : m.full_graph_hub_share) = f.hubs;
      }
    // Mini-batch: measured = scale x modelled + batches x batch_alpha + epoch_alpha, solved
    // from batches of 1024, 128 and 32 seeds on the smallest graph (three equations; epochs of
    // a few batches, as on small graphs such as Cora, where the fixed costs weigh most); a term
    // that noise makes negative is dropped and the rest solved again. The larger graphs'
    // scales then with those fixed costs (batches of 1024, one epoch).
    TrainConfig mini;
    mini.model.kind = nn::ModelKind::Sage;
    MiniBatchConfig mb;
    mb.fanouts = {10, 5};
    mini.mini_batch = mb;
    std::vector<Fit> fits;
    for (const std::int64_t batch : {1024, 128, 32}) {
      mini.mini_batch->batch_size = batch;
      fits.push_back(run_step(scales.front(), mini, batch == 1024 ? 3 : 2));
    }
    // Least squares over the fits for the unknowns kept (x: scale, batch, epoch).
    auto solve = [&](bool use_batch, bool use_epoch) {
      std::vector<std::array<double, 3>> rows;
      std::vector<double> y;
      for (const Fit& f : fits) {
        rows.push_back({f.modelled, f.batches, 1.0});
        y.push_back(f.measured);
      }
      return least_squares3(rows, y, {true, use_batch, use_epoch});
    };
    std::array<double, 3> x = solve(true, true);
    if (x[0] <= 0 || x[1] < 0 || x[2] < 0) {
      const std::array<double, 3> no_epoch = solve(true, false), no_batch = solve(false, true);
      if (no_epoch[0] > 0 && no_epoch[1] >= 0)
        x = {no_epoch[0], no_epoch[1], 0};
      else if (no_batch[0] > 0 && no_batch[2] >= 0)
        x = {no_batch[0], 0, no_batch[2]};
      else
        x = {fits[0].modelled > 0 ? fits[0].measured / fits[0].modelled : 1.0, 0, 0};
    }
    m.batch_alpha_s = x[1];
    m.epoch_alpha_s = x[2];
    m.mini_batch_steps = {point(fits[0], x[0])};
    mini.mini_batch->batch_size = 1024;
    for (std::size_t i = 1; i < scales.size(); ++i) {
      const Fit f = run_step(scales[i], mini, 1);
      const double fixed = f.batches * x[1] + x[2];
      m.mini_batch_steps.push_back(
          point(f, f.modelled > 0 ? std::max(0.0, f.measured - fixed) / f.modelled : x[0]));
    }
  }
  m.threads = res.cpu_exec().num_threads;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  m.host = host;
  m.calibrated = true;
  return m;
}

CostModel calibrate_link(const kernels::Resources& res, Comm& comm, const CalibrateConfig& c,
                         const std::filesystem::path& scratch_dir, CostModel m) {
  HALO_EXPECTS(comm.size() >= 2, "calibrate: the link needs two ranks (mpiexec -n 2)");
  const int rank = comm.rank();
  // Rank 0's figure for everyone.
  auto from_rank0 = [&](double v) {
    std::vector<double> b = {rank == 0 ? v : 0.0};
    comm.allreduce(kernels::Span<double>(b.data(), 1), ReduceOp::Sum);
    return b[0];
  };
  auto pingpong = [&](std::size_t bytes) {
    std::vector<char> buf(bytes, 'x');
    auto round = [&] {
      if (rank > 1) return;
      std::vector<Request> req;
      if (rank == 0) {
        req.push_back(comm.isend(buf.data(), bytes, 1, 7));
        comm.wait_all(req);
        req.clear();
        req.push_back(comm.irecv(buf.data(), bytes, 1, 8));
        comm.wait_all(req);
      } else {
        req.push_back(comm.irecv(buf.data(), bytes, 0, 7));
        comm.wait_all(req);
        req.clear();
        req.push_back(comm.isend(buf.data(), bytes, 0, 8));
        comm.wait_all(req);
      }
    };
    comm.barrier();
    // Both ranks make the same number of round trips; each is timed, the median kept.
    round();
    const int rounds = std::max(c.repeats, 1) * 30;
    std::vector<double> t(static_cast<std::size_t>(rounds));
    for (double& ti : t) {
      const auto start = Clock::now();
      round();
      ti = std::chrono::duration<double>(Clock::now() - start).count();
    }
    std::nth_element(t.begin(), t.begin() + rounds / 2, t.end());
    return from_rank0(t[static_cast<std::size_t>(rounds / 2)]) / 2;  // one way
  };
  const std::size_t big = std::size_t{1} << 20;
  const double t_small = pingpong(8), t_big = pingpong(big);
  m.link_alpha_s = t_small;
  m.link_s_per_byte = std::max(0.0, (t_big - t_small) / static_cast<double>(big - 8));
  m.mpi_rank_extra_bytes =
      std::max<std::int64_t>(0, current_host_memory_bytes() - m.process_base_bytes);
  m.link_calibrated = true;

  // The in-step message latency: short distributed Trainer runs on generated graphs. Full
  // graph on a small one (scale 12: its epoch is mostly messages, so the residual is theirs);
  // mini-batch on a graph one scale above config.rmat_scale's (batches of 1024, as in the
  // one-process fits; on config.rmat_scale's graph a rank has one batch per epoch whose 2-hop
  // samples cover much of its part), after the per-row fetch cost measured on the same graph,
  // so that the latency carries the messages only (bench/results/plan.md, items 6 and 7).
  const std::string stem =
      ".halo-calibrate-parts-" +
      std::to_string(static_cast<long long>(from_rank0(static_cast<double>(::getpid()))));
  auto write_parts = [&](int scale) {
    const std::filesystem::path dir = scratch_dir / (stem + "-" + std::to_string(scale));
    if (rank == 0) {
      datasets::RmatConfig rc;
      rc.scale = scale;
      rc.avg_degree = 8;
      rc.num_features = 16;
      datasets::Dataset ds = datasets::make_rmat(res, rc);
      partition::PartitionConfig pc;
      pc.num_parts = comm.size();
      std::filesystem::remove_all(dir);
      partition::write_partitions(res, ds, partition::partition_dataset(res, ds, pc), dir);
    }
    comm.barrier();
    return dir;
  };
  const int host_cores = shared_cores(comm);
  // The plan's epoch is linear in the message latency x once the exchange is exposed: two
  // latencies large enough for that give its slope (messages) and intercept; the measured
  // epoch's excess over the intercept, per message, is the fitted latency.
  double fetch_row_s = 0;  // mini-batch: measured before the latency is fitted
  // The costs the plan charges here besides the fitted ones: this host's cores shared by the
  // ranks, and the transport's CPU work at the rate the caller gave (m.transport_s_per_byte,
  // kept in the file: halo plan charges the same unless told otherwise).
  CostModel here = m;
  here.host_cores = host_cores;
  auto fit_message = [&](const std::filesystem::path& dir, TrainConfig config, int epochs) {
    config.epochs = epochs;
    config.model.hidden = 16;
    Shard shard = open_shard(res, comm, dir);
    const PlanInput in = shard_plan_input(shard);
    auto plan_at = [&](double x) {
      CostModel p = here;
      p.collectives = {{comm.size(), x, x, fetch_row_s}};
      return make_plan(in, config, p, "cpu", res.cpu_exec().num_threads).epoch_seconds;
    };
    const double x1 = 1e-3, x2 = 2e-3, y1 = plan_at(x1), y2 = plan_at(x2);
    const double messages = (y2 - y1) / (x2 - x1), base = y1 - messages * x1;
    // Every rank runs the same rounds (train is collective); rank 0's median for everyone.
    const double measured = from_rank0(median_of(c.rounds, [&, first = true]() mutable {
      if (!first) shard = open_shard(res, comm, dir);  // train() consumes its features
      first = false;
      return train(res, shard, config).result.epoch_time_median_s;
    }));
    return messages > 0 ? std::max(m.link_alpha_s, (measured - base) / messages) : m.link_alpha_s;
  };
  // Mini-batch: a remote row's fetch cost, the fetch time per row fetched of a run (its epochs
  // after the first; the ranks' mean), less what the plan charges for the rows' bytes (the
  // link's rate, and the transport's CPU work both ways where the ranks fill the cores),
  // measured before the latency is fitted, so that the latency carries the messages only.
  auto fetch_row_cost = [&](const std::filesystem::path& dir, TrainConfig config, int epochs) {
    config.epochs = epochs;
    config.model.hidden = 16;
    Shard shard = open_shard(res, comm, dir);
    const TrainResult r = train(res, shard, config).result;
    const double ranks = comm.size();
    const double per_byte = fetched_byte_s(here, comm.size(), res.cpu_exec().num_threads);
    double seconds = 0, rows = 0;
    for (std::size_t e = 1; e < r.history.size(); ++e) {
      seconds += r.history[e].fetch_time_s -
                 per_byte * static_cast<double>(r.history[e].feature_bytes) / ranks;
      rows += static_cast<double>(r.history[e].remote_rows - r.history[e].cache_hits) / ranks;
    }
    return from_rank0(rows > 0 ? std::max(0.0, seconds) / rows : 0.0);
  };
  const std::filesystem::path small = write_parts(std::min(12, c.rmat_scale));
  const std::filesystem::path large = write_parts(std::min(c.rmat_scale + 1, c.large_rmat_scale));
  TrainConfig full;
  full.model.kind = nn::ModelKind::Gcn;
  CollectiveCosts fitted;
  fitted.ranks = comm.size();
  fitted.full_graph_message_s = fit_message(small, full, 40);
  TrainConfig mini;
  mini.model.kind = nn::ModelKind::Sage;
  MiniBatchConfig mb;
  mb.fanouts = {10, 5};
  mb.batch_size = 1024;
  mini.mini_batch = mb;
  fitted.mini_batch_fetch_row_s = fetch_row_s = fetch_row_cost(large, mini, 4);
  fitted.mini_batch_message_s = fit_message(large, mini, 10);
  // This rank count's entry, beside (or in place of) the other counts' calibrated before.
  std::erase_if(m.collectives, [&](const CollectiveCosts& e) { return e.ranks == fitted.ranks; });
  m.collectives.insert(
      std::find_if(m.collectives.begin(), m.collectives.end(),
                   [&](const CollectiveCosts& e) { return e.ranks > fitted.ranks; }),
      fitted);
  comm.barrier();
  if (rank == 0) {
    std::filesystem::remove_all(small);
    std::filesystem::remove_all(large);
  }
  return m;
}

}  // namespace halo::cluster
