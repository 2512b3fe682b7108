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

/// An all-gather of `bytes` in all over `ranks` ranks: a message from every peer and the bytes
/// from the others.
double peers_gather_s(const CostModel& m, int ranks, int threads, double bytes, double alpha) {
  return (ranks - 1) * alpha + fetched_byte_s(m, ranks, threads) * bytes * (ranks - 1) / ranks;
}

}  // namespace

LinkCounts link_counts(const runtime::TemporalShard& s) {
  HALO_EXPECTS(s.comm != nullptr && s.comm->size() == 1,
               "plan: link counts of a one-process shard (local_temporal_shard)");
  LinkCounts c;
  c.dataset = s.dataset;
  c.num_nodes = s.num_nodes;
  c.num_events = s.num_events;
  c.num_features = s.num_features;
  for (std::int64_t t = 0; t < s.num_steps(); ++t) {
    const auto i = static_cast<std::size_t>(t);
    c.entries.push_back(s.exchange[i]->num_entries());
    c.targets.push_back(static_cast<std::int64_t>(s.targets[i].size()));
    c.active.push_back(static_cast<std::int64_t>(s.active[i].size()));
  }
  return c;
}

LinkCounts link_partition_counts(const runtime::TemporalShard& s,
                                 const std::vector<std::vector<std::int32_t>>& owner,
                                 std::int32_t parts) {
  LinkCounts c = link_counts(s);
  const auto steps = static_cast<std::size_t>(s.num_steps());
  HALO_EXPECTS(parts >= 1 && owner.size() == steps,
               "plan: one owner map per snapshot and at least one part");
  c.parts.assign(static_cast<std::size_t>(parts), {});
  for (auto& p : c.parts) {
    p.owned.assign(steps, 0), p.entries.assign(steps, 0), p.halo.assign(steps, 0);
  }
  // Per rank, the step at which a node was last counted in its halo.
  std::vector<std::vector<std::int64_t>> seen(
      static_cast<std::size_t>(parts),
      std::vector<std::int64_t>(static_cast<std::size_t>(s.num_nodes), -1));
  for (std::size_t t = 0; t < steps; ++t) {
    // The one part's owned block: every node's row, local ids = node ids.
    const kernels::CsrView<kernels::NodeId, float> a = s.exchange[t]->owned_block();
    const std::int64_t* indptr = a.indptr;
    const kernels::NodeId* indices = a.indices;
    HALO_EXPECTS(static_cast<std::int64_t>(owner[t].size()) == s.num_nodes,
                 "plan: an owner map must cover every node");
    for (std::int64_t v = 0; v < s.num_nodes; ++v) {
      const std::int32_t r = owner[t][static_cast<std::size_t>(v)];
      HALO_EXPECTS(r >= 0 && r < parts, "plan: an owner outside the parts");
      LinkPartCounts& p = c.parts[static_cast<std::size_t>(r)];
      auto& mark = seen[static_cast<std::size_t>(r)];
      ++p.owned[t];
      p.entries[t] += indptr[v + 1] - indptr[v];
      for (std::int64_t k = indptr[v]; k < indptr[v + 1]; ++k) {
        const auto u = static_cast<std::size_t>(indices[k]);
        if (owner[t][u] == r || mark[u] == static_cast<std::int64_t>(t)) continue;
        mark[u] = static_cast<std::int64_t>(t);
        ++p.halo[t];
      }
    }
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
  for (const LinkPartCounts& p : c.parts)
    HALO_EXPECTS(p.owned.size() == c.entries.size() && p.entries.size() == c.entries.size() &&
                     p.halo.size() == c.entries.size(),
                 "plan: every rank's counts need every step");
  const runtime::LinkPredictionConfig& lc = config.link;
  const runtime::LinkSplit split = runtime::link_split(steps, lc);
  const double n = static_cast<double>(c.num_nodes), f = static_cast<double>(c.num_features);
  const double h = static_cast<double>(lc.model.hidden), hs = static_cast<double>(lc.scorer_hidden);
  nn::TemporalModelConfig model = lc.model;
  model.in_features = c.num_features;
  const bool evolve = model.kind == nn::TemporalKind::EvolveGcnO;
  const bool parted = !c.parts.empty();
  const int ranks = parted ? static_cast<int>(c.parts.size()) : 1;
  HALO_EXPECTS(!parted || evolve,
               "plan: link prediction across ranks trains evolvegcn-o (GCRN's per-node state "
               "cannot follow migrating rows)");

  Plan plan;
  plan.dataset = c.dataset;
  plan.mode = "full-graph";
  plan.model = nn::to_string(model.kind);
  plan.device = device;
  plan.ranks = ranks;
  plan.threads = threads;
  plan.epochs = config.epochs;
  plan.calibrated = m.calibrated;
  plan.link_calibrated = m.link_calibrated;
  const double params = parameter_floats(lc, f);
  plan.parameters = as_bytes(params);
  plan.checkpoint_bytes = checkpoint_bytes(plan.parameters);
  plan.checkpoint_seconds = m.disk_s_per_byte * static_cast<double>(plan.checkpoint_bytes);
  plan.batches_per_epoch = split.train_end - split.train_begin;

  // The events (ids, times) the snapshots are cut from: every rank reads them all.
  const double events = static_cast<double>(c.num_events) * (kF + kF + kI);
  // Every rank holds every step's pairs to predict and active nodes (the pairs are drawn from
  // them), and while the snapshots are prepared every snapshot's pairs (8 bytes each; the
  // GCN matrix's entries less its self-loops bound them).
  double common = 0, inputs = 0;
  std::int64_t most_pairs = 0, most_scored = 0;
  for (std::int64_t t = 0; t < steps; ++t) {
    const auto i = static_cast<std::size_t>(t);
    common += kF * static_cast<double>(c.active[i]) + 2 * kF * static_cast<double>(c.targets[i]);
    inputs += 2 * kF * std::max(0.0, static_cast<double>(c.entries[i]) - n);
    if (t >= split.train_begin && t < split.train_end)
      most_pairs = std::max(most_pairs, c.targets[i]);
    if (t >= split.train_end) most_scored = std::max(most_scored, c.targets[i]);
  }
  const double pairs = static_cast<double>(most_pairs) * (1.0 + lc.negatives);
  const double param_bytes = kF * params;
  const double adam =
      m.elementwise_alpha_s * 20 + elementwise_s_per_byte(m, 4 * param_bytes) * 7 * param_bytes;
  // The latency of a message inside a step (fitted on distributed runs), else the link's.
  const CollectiveCosts collective = m.collective_at(ranks);
  const double msg_alpha =
      collective.full_graph_message_s > 0 ? collective.full_graph_message_s : m.link_alpha_s;
  const double train_steps = static_cast<double>(plan.batches_per_epoch);
  const double ordered = n * (n - 1);
  double eval_step_s = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    RankPlan rp;
    rp.rank = rank;
    auto& host = rp.host;
    const std::int64_t process = m.process_base_bytes + (parted ? m.mpi_rank_extra_bytes : 0);
    host.push_back({"process", process});
    // Per step: the GCN matrix of the rows this rank holds (offsets, columns, values), their
    // degree buckets, the owner of every node, the halo exchange's lists (its rows sent and
    // received, as many each way on a symmetric snapshot) and its receive buffer. One process
    // is the one part: every row, no halo.
    double snapshots = common, local_rows = 0, widest_step = 0, halo_rows = 0, moved = 0;
    for (std::int64_t t = 0; t < steps; ++t) {
      const auto i = static_cast<std::size_t>(t);
      const LinkPartCounts* p = parted ? &c.parts[static_cast<std::size_t>(rank)] : nullptr;
      const double owned = p ? static_cast<double>(p->owned[i]) : n;
      const double entries = static_cast<double>(p ? p->entries[i] : c.entries[i]);
      const double halo = p ? static_cast<double>(p->halo[i]) : 0;
      snapshots += kI * (owned + 1) + (kF + kF) * entries + kF * owned;
      snapshots += kF * n + 2 * kF * 2 * halo + kF * halo * h;
      // While preparing: the rows moved to it (per owned row a list of its neighbours: the
      // list's 24 bytes and 4 per neighbour).
      moved += 24 * owned + kF * entries;
      local_rows = std::max(local_rows, owned + halo);
      widest_step = std::max(widest_step, entries);
      halo_rows = std::max(halo_rows, halo);
    }
    host.push_back({"snapshots", as_bytes(snapshots)});
    // Parameters: values, gradients, Adam's moments, the kept epoch's copy.
    host.push_back({"model_optimizer", as_bytes(5 * kF * params)});
    const std::int64_t encoder =
        temporal_step_bytes(model, lc.window, static_cast<std::int64_t>(local_rows));
    host.push_back({"encoder", encoder});
    // The scorer's P, Q and their gradients (n x scorer hidden), the embeddings' gradient, the
    // evaluation's every row (gathered from the ranks, then placed: 2 n x hidden).
    host.push_back({"scorer", as_bytes(kF * (4 * n * hs + n * h + 2 * n * h))});
    // A training step's pairs (positives and sampled negatives: ids and labels as drawn, the
    // copy of those whose source the rank owns in its rows, logits and their gradients).
    host.push_back({"pairs", as_bytes(pairs * (2 * (kF + kF + 1) + kF + kF))});
    // The ranking evaluation of a step (every rank ranks every ordered pair, streamed): a row's
    // scores, its candidates and their sorted copy (MRR), two labels per node; per positive its
    // score and level with three counts (runtime::RankingCounts).
    host.push_back({"evaluation", as_bytes(3 * kF * n + 2 * n +
                                           (2 * kF + 3 * 8) * static_cast<double>(most_scored))});
    std::int64_t steady = 0;
    for (const MemoryItem& i : host) steady += i.bytes;
    // While the snapshots are prepared: the events, the snapshots, every snapshot's pairs and
    // the rows moved to this rank.
    rp.peak_host_bytes = std::max(steady, process + as_bytes(events + snapshots + inputs + moved));
    for (const MemoryItem& i : host)
      if (i.name != "process") rp.working_set_bytes += i.bytes;
    rp.dataset_bytes = as_bytes(events);

    // Time of a training step: the encoder over its window (the GCN over this rank's rows), the
    // scorer on the step's pairs, the loss, Adam.
    const double rows = local_rows;
    double gemm_s = 0, other_s = 0;
    auto gemm = [&](GemmPass pass, double r, double in, double out) {
      gemm_s += gemm_seconds(m, pass, r, in, out);
    };
    auto dense = [&](double r, double in, double out, int products) {
      for (int k = 0; k < products; ++k) gemm(GemmPass::Forward, r, in, out);
      for (int k = 0; k < products; ++k) {
        gemm(GemmPass::WeightGrad, r, in, out);
        gemm(GemmPass::InputGrad, r, in, out);
      }
    };
    auto gcn = [&]() {
      other_s += elementwise_seconds(m, 2 * kF * rows * h);  // the one-hot input's rows
      for (int k = 0; k < 2; ++k) other_s += 2 * spmm_seconds(m, widest_step, h, rows, nullptr);
      dense(rows, h, h, 1);
      other_s += elementwise_seconds(m, 8 * kF * rows * h, 8);  // ReLUs, copies, their adjoints
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
        dense(rows, h, h, 6);
        other_s += elementwise_seconds(m, 20 * kF * rows * h, 20);
      }
    }
    // The scorer's P and Q (on this rank's rows and the fetched ones across ranks).
    dense(parted ? std::min(n, rows + 2 * pairs / ranks) : n, h, hs, 2);
    const double cells = pairs * hs / ranks;
    other_s += 2 * elementwise_seconds(m, 3 * kF * cells);  // the pairs' scores and gradients
    other_s += m.loss_s_per_cell * pairs / ranks;
    const double scale = step_scale(m, false, static_cast<double>(rp.working_set_bytes), 0);
    rp.step_scale = scale;
    // More ranks and threads than the host's cores share them.
    const double share = core_share(m, ranks, threads);
    rp.dense_s = share * train_steps * (gemm_s + adam);
    rp.compute_s = share * train_steps * scale * other_s + rp.dense_s;
    if (parted) {
      // Per step: each GCN layer gathers its halo rows forward and returns their gradients
      // backward; the scored pairs' remote embeddings are fetched and their gradients returned;
      // the evolved weights' and the scorer's gradients are summed (two all-reduces).
      const double peers = ranks - 1;
      const double fetched = std::min(n, 2 * pairs / ranks);
      const double bytes = 2 * 2 * kF * halo_rows * h + 2 * kF * fetched * h + kF * fetched;
      rp.halo_exchange_bytes = as_bytes(train_steps * bytes);
      rp.exchange_s =
          train_steps * (4 + 3) * peers * msg_alpha +
          fetched_byte_s(m, ranks, threads) * static_cast<double>(rp.halo_exchange_bytes);
      rp.exposed_exchange_s = rp.exchange_s;
      rp.allreduce_bytes = as_bytes(train_steps * 2.0 * (ranks - 1) / ranks * param_bytes);
      rp.allreduce_s = train_steps * 2 * allreduce_s(m, msg_alpha, param_bytes / 2, ranks);
    }
    rp.epoch_s = rp.compute_s + rp.exposed_exchange_s + rp.allreduce_s;
    // The evaluation of a step: the encoder forward (a third of a step), across ranks the
    // all-gather of every row, and every ordered pair's score (scorer hidden cells each,
    // reading Q's row; every rank scores them all), then the rankings.
    const double score_s = elementwise_s_per_byte(m, kF * n * hs) * kF * ordered * hs * 2 +
                           elementwise_seconds(m, 2 * (kF + 1) * ordered);
    const double gather_s = parted ? peers_gather_s(m, ranks, threads, kF * n * h, msg_alpha) : 0.0;
    eval_step_s =
        std::max(eval_step_s, share * ((scale * other_s + gemm_s) / 3 + score_s) + gather_s);
    plan.peak_host_bytes_per_rank = std::max(plan.peak_host_bytes_per_rank, rp.peak_host_bytes);
    plan.comm_bytes_per_epoch += rp.halo_exchange_bytes + rp.allreduce_bytes;
    plan.epoch_seconds = std::max(plan.epoch_seconds, rp.epoch_s);
    plan.per_rank.push_back(std::move(rp));
  }
  const double val_steps = static_cast<double>(split.val_end - split.train_end);
  const double test_steps = static_cast<double>(split.test_end - split.val_end);
  plan.train_seconds =
      config.epochs * (plan.epoch_seconds + val_steps * eval_step_s) + test_steps * eval_step_s;
  return plan;
}

}  // namespace halo::cluster
