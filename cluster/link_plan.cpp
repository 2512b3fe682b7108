// The plan of link prediction (docs/scheduler.md, "Link prediction").
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <halo/cluster/detail/units.hpp>
#include <halo/cluster/link_plan.hpp>
#include <halo/kernels/error.hpp>

namespace halo::cluster {

using runtime::TrainConfig;

namespace {

using detail::as_bytes;
using detail::kF;
using detail::kI;

/// Floats of the encoder's and the scorer's parameters (nn::TemporalModel, nn::PairScorer).
double parameter_floats(const runtime::LinkPredictionConfig& l, double f) {
  const double h = static_cast<double>(l.model.hidden), s = static_cast<double>(l.scorer_hidden);
  double p = 0;
  if (l.model.kind == nn::TemporalKind::EvolveGcnO) {
    // Per layer: Q_0 (rows x h), the GRU's six square gates and three rows x h biases.
    for (const double r : {f, h}) p += r * h + 6 * r * r + 3 * r * h;
  } else {
    p += f * h + h * h + 6 * h * h + 3 * h;
  }
  return p + 2 * h * s + s + s + 1;
}

}  // namespace

LinkCounts link_counts(const runtime::TemporalShard& s) {
  HALO_EXPECTS(!s.distributed(), "plan: link counts of a one-process shard");
  LinkCounts c;
  c.dataset = s.dataset;
  c.num_nodes = s.num_nodes;
  c.num_events = s.num_events;
  c.num_features = s.num_features;
  for (std::int64_t t = 0; t < s.num_steps(); ++t) {
    const auto i = static_cast<std::size_t>(t);
    c.entries.push_back(s.adjacency[i].num_edges());
    c.targets.push_back(static_cast<std::int64_t>(s.targets[i].size()));
    c.active.push_back(static_cast<std::int64_t>(s.active[i].size()));
  }
  return c;
}

std::int64_t temporal_step_bytes(const nn::TemporalModelConfig& model, int window,
                                 std::int64_t nodes) {
  const double n = static_cast<double>(nodes), h = static_cast<double>(model.hidden);
  const double f = static_cast<double>(model.in_features), w = window;
  if (model.kind == nn::TemporalKind::EvolveGcnO) {
    // The weights' GRU keeps per layer and step its state and three gates (rows x h) and the
    // evolved weight; the last step's GCN holds at its peak seven n x h arrays (its caches, its
    // temporaries, the output and the previous step's), the GRU two rows x h temporaries. (The
    // backward stays below: measured, tests/cluster/link_plan_test.cpp.)
    const double gru = (4 * w + 1) * (f + h) * h;
    return as_bytes(kF * (gru + 7 * n * h + 2 * std::max(f, h) * h));
  }
  // GCRN: per step the GCN's four arrays and the GRU's state, input and three gates; the output,
  // and the backward's gradient of the state and its twelve n x h temporaries (the GRU's seven,
  // the GCN's four).
  return as_bytes(kF * (9 * w * n * h + 14 * n * h));
}

Plan make_link_plan(const LinkCounts& c, const TrainConfig& config, const CostModel& m,
                    const std::string& device, int threads) {
  HALO_EXPECTS(device == "cpu", "plan: link prediction runs on the CPU (--device " + device + ")");
  const auto steps = static_cast<std::int64_t>(c.entries.size());
  HALO_EXPECTS(c.num_nodes >= 1 && c.num_features >= 1 && c.targets.size() == c.entries.size() &&
                   c.active.size() == c.entries.size(),
               "plan: the link counts need nodes, features and every step's sizes");
  const runtime::LinkPredictionConfig& lc = config.link;
  const runtime::LinkSplit split = runtime::link_split(steps, lc);
  const double n = static_cast<double>(c.num_nodes), f = static_cast<double>(c.num_features);
  const double h = static_cast<double>(lc.model.hidden), hs = static_cast<double>(lc.scorer_hidden);
  nn::TemporalModelConfig model = lc.model;
  model.in_features = c.num_features;
  const bool evolve = model.kind == nn::TemporalKind::EvolveGcnO;

  Plan plan;
  plan.dataset = c.dataset;
  plan.mode = "full-graph";
  plan.model = nn::to_string(model.kind);
  plan.device = device;
  plan.ranks = 1;
  plan.threads = threads;
  plan.epochs = config.epochs;
  plan.calibrated = m.calibrated;
  plan.link_calibrated = m.link_calibrated;
  const double params = parameter_floats(lc, f);
  plan.parameters = as_bytes(params);
  plan.checkpoint_bytes = checkpoint_bytes(plan.parameters);
  plan.checkpoint_seconds = m.disk_s_per_byte * static_cast<double>(plan.checkpoint_bytes);
  plan.batches_per_epoch = split.train_end - split.train_begin;

  RankPlan rp;
  auto& host = rp.host;
  host.push_back({"process", m.process_base_bytes});
  // The events (ids, times) the snapshots are cut from, held while they are prepared.
  const double events = static_cast<double>(c.num_events) * (kF + kF + kI);
  // Per step: the GCN matrix (offsets, columns, values), every node's degree bucket, the active
  // nodes, the pairs to predict.
  double snapshots = 0, widest_step = 0;
  std::int64_t most_pairs = 0;
  for (std::int64_t t = 0; t < steps; ++t) {
    const auto i = static_cast<std::size_t>(t);
    snapshots += kI * (n + 1) + (kF + kF) * static_cast<double>(c.entries[i]) + kF * n +
                 kF * static_cast<double>(c.active[i]) + 2 * kF * static_cast<double>(c.targets[i]);
    widest_step = std::max(widest_step, static_cast<double>(c.entries[i]));
    if (t >= split.train_begin && t < split.train_end)
      most_pairs = std::max(most_pairs, c.targets[i]);
  }
  host.push_back({"snapshots", as_bytes(snapshots)});
  // Parameters: values, gradients, Adam's moments, the kept epoch's copy.
  host.push_back({"model_optimizer", as_bytes(5 * kF * params)});
  const std::int64_t encoder = temporal_step_bytes(model, lc.window, c.num_nodes);
  host.push_back({"encoder", encoder});
  // The scorer's P, Q and their gradients (n x scorer hidden), the embeddings' gradient.
  host.push_back({"scorer", as_bytes(kF * (4 * n * hs + n * h))});
  // A training step's pairs (positives and sampled negatives: ids, labels, logits and their
  // gradients).
  const double pairs = static_cast<double>(most_pairs) * (1.0 + lc.negatives);
  host.push_back({"pairs", as_bytes(pairs * (kF + kF + 1 + kF + kF))});
  // The ranking evaluation of a step: every ordered pair's score and label (n (n - 1)); the
  // test scoring's ROC AUC adds their order (8 bytes each).
  const double ordered = n * (n - 1);
  host.push_back({"evaluation", as_bytes(ordered * (kF + 1 + kI))});
  std::int64_t steady = 0;
  for (const MemoryItem& i : host) steady += i.bytes;
  rp.peak_host_bytes = std::max(steady, m.process_base_bytes + as_bytes(events + snapshots));
  for (const MemoryItem& i : host)
    if (i.name != "process") rp.working_set_bytes += i.bytes;
  rp.dataset_bytes = as_bytes(events);

  // Time of a training step: the encoder over its window, the scorer on the step's pairs, the
  // loss, Adam.
  double gemm_s = 0, other_s = 0;
  auto gemm = [&](GemmPass pass, double rows, double in, double out) {
    gemm_s += gemm_seconds(m, pass, rows, in, out);
  };
  auto dense = [&](double rows, double in, double out, int products) {
    for (int k = 0; k < products; ++k) gemm(GemmPass::Forward, rows, in, out);
    for (int k = 0; k < products; ++k) {
      gemm(GemmPass::WeightGrad, rows, in, out);
      gemm(GemmPass::InputGrad, rows, in, out);
    }
  };
  const double entries = widest_step;
  auto gcn = [&]() {
    other_s += elementwise_seconds(m, 2 * kF * n * h);  // the one-hot input's rows
    for (int k = 0; k < 2; ++k) other_s += 2 * spmm_seconds(m, entries, h, n, nullptr);
    dense(n, h, h, 1);
    other_s += elementwise_seconds(m, 8 * kF * n * h, 8);  // ReLUs, copies, their adjoints
  };
  if (evolve) {
    for (const double r : {f, h}) {
      dense(r, r, h, 6 * lc.window);  // per step: W and U on the state, three gates
      other_s += lc.window * elementwise_seconds(m, 20 * kF * r * h, 20);
    }
    gcn();
  } else {
    for (int s = 0; s < lc.window; ++s) {
      gcn();
      dense(n, h, h, 6);
      other_s += elementwise_seconds(m, 20 * kF * n * h, 20);
    }
  }
  dense(n, h, hs, 2);  // the scorer's P and Q
  const double cells = pairs * hs;
  other_s += 2 * elementwise_seconds(m, 3 * kF * cells);  // the pairs' scores and gradients
  other_s += m.loss_s_per_cell * pairs;
  const double param_bytes = kF * params;
  const double adam =
      m.elementwise_alpha_s * 20 + elementwise_s_per_byte(m, 4 * param_bytes) * 7 * param_bytes;
  const double scale = step_scale(m, false, static_cast<double>(rp.working_set_bytes), 0);
  rp.step_scale = scale;
  const double train_steps = static_cast<double>(plan.batches_per_epoch);
  rp.dense_s = train_steps * (gemm_s + adam);
  rp.compute_s = train_steps * scale * other_s + rp.dense_s;
  rp.epoch_s = rp.compute_s;
  // The evaluation of a step: the encoder forward (a third of a step), the scorer's P and Q, and
  // every ordered pair's score (scorer hidden cells each, reading Q's row), then the rankings.
  const double score_s = elementwise_s_per_byte(m, kF * n * hs) * kF * ordered * hs * 2 +
                         elementwise_seconds(m, 2 * (kF + 1) * ordered);
  const double eval_step_s = (scale * other_s + gemm_s) / 3 + score_s;
  const double val_steps = static_cast<double>(split.val_end - split.train_end);
  const double test_steps = static_cast<double>(split.test_end - split.val_end);
  plan.epoch_seconds = rp.epoch_s;
  plan.train_seconds =
      config.epochs * (rp.epoch_s + val_steps * eval_step_s) + test_steps * eval_step_s;
  plan.peak_host_bytes_per_rank = rp.peak_host_bytes;
  plan.per_rank.push_back(std::move(rp));
  return plan;
}

}  // namespace halo::cluster
