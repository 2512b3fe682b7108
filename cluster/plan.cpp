// The resource plan: the memory and cost model of a run (docs/scheduler.md, "The model").
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <utility>

#include <halo/cluster/detail/units.hpp>
#include <halo/cluster/plan.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>
#include <halo/nn/aggregate_transform.hpp>
#include <halo/runtime/data/layerwise_inference.hpp>
#include <halo/sampler/envelope.hpp>

namespace halo::cluster {

using runtime::auto_prefetch;
using runtime::kAutoPrefetch;
using runtime::MiniBatchConfig;
using runtime::Shard;
using runtime::TrainConfig;

namespace {

using nlohmann::json;

/// 2: the working-set rule as a list of points (step.full_graph, step.mini_batch); 3: the
/// collectives' costs per rank count (a list at collective).
constexpr int kCalibrationVersion = 3;
using detail::as_bytes;
using detail::kF;
using detail::kI;

/// Bytes of sparse features with `rows` rows and `nnz` entries (CSR: int64 offsets, int32
/// columns, float values), or of dense ones.
std::int64_t feature_bytes(const GraphCounts& g, std::int64_t rows, std::int64_t nnz) {
  return g.sparse_features ? kI * (rows + 1) + (kF + kF) * nnz : kF * rows * g.num_features;
}

/// The widths of the layers: in_features, hidden..., classes.
std::vector<std::int64_t> layer_widths(const TrainConfig& c, std::int64_t in, std::int64_t out) {
  std::vector<std::int64_t> w = {in};
  for (int l = 0; l + 1 < c.model.num_layers; ++l) w.push_back(c.model.hidden);
  w.push_back(out);
  return w;
}

/// One block of a step: dst rows computed from src rows over `edges` entries.
struct Block {
  double dst = 0, src = 0, edges = 0;
};

/// Seconds and bytes of one forward + backward pass over `blocks` (input layer first).
struct StepCost {
  double compute_s = 0;
  double gemm_s = 0;         // the dense products within compute_s
  double aggregation_s = 0;  // the SpMMs (what overlaps the halo exchange)
  std::int64_t activation_bytes = 0;
  // Floats per halo row the exchanges of a step move, forward and backward.
  std::int64_t exchanged_floats = 0;
  int exchanges = 0;  // halo exchanges of a step (aggregations forward and backward)
};

double gemm_s(const CostModel& m, GemmPass pass, double rows, double in, double out) {
  return gemm_seconds(m, pass, rows, in, out);
}
double ew_s(const CostModel& m, double bytes, double calls = 1) {
  return elementwise_seconds(m, bytes, calls);
}

/// The layers' work as nn::AggregateTransform does it: its cost rule picks the order on sampled
/// blocks, the narrower side on the full graph (sparse inputs transform first); forward = dropout,
/// transform, aggregate, bias, ReLU; backward = ReLU', transposed aggregation, dW, dX (not for the
/// input layer).
StepCost step_cost(const CostModel& m, const TrainConfig& c, const GraphCounts& g,
                   const std::vector<Block>& blocks, double input_nnz, bool sampled,
                   bool sparse_input, double loss_rows) {
  StepCost s;
  const std::vector<std::int64_t> w = layer_widths(c, g.num_features, g.num_classes);
  const bool sage = c.model.kind == nn::ModelKind::Sage;
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    const Block& b = blocks[l];
    const double wi = static_cast<double>(w[l]), wo = static_cast<double>(w[l + 1]);
    const bool sparse_in = l == 0 && sparse_input;
    const double entries = b.edges + (sage ? 0 : b.dst);  // GCN adds a self-loop per row
    // Full graph: rows = columns or a halo exchange, either way the narrower side.
    const bool agg_first =
        !sparse_in &&
        (sampled ? nn::aggregate_first_is_cheaper(
                       static_cast<std::int64_t>(b.dst), static_cast<std::int64_t>(b.src),
                       static_cast<std::int64_t>(entries), w[l], w[l + 1])
                 : wi < wo);
    const double agg_cols = agg_first ? wi : wo;
    // SAGE also transforms the root rows (a second product over the dst rows).
    const double transforms = sage ? 2 : 1;
    double t = 0;
    // Dropout of the input (forward, and its mask applied backward; the input layer has no
    // backward). A batch's input rows are dropped as the producer gathers them (the gather
    // term), so a sampled step's input layer has no pass of its own.
    const double in_bytes = sparse_in ? input_nnz * kF : b.src * wi * kF;
    if (l > 0 || !sampled) t += ew_s(m, 2 * in_bytes) * (l > 0 ? 2 : 1);
    // Transform and its two backward products.
    const double rows_t = agg_first ? b.dst : b.src;
    if (sparse_in) {
      // X W and Xᵀ dY (rows of W, of dY: W's size).
      t += spmm_seconds(m, input_nnz, wo, wi, nullptr) * 2;
    } else {
      // Forward and dW, and dX but for the input layer, each at its shape's rate.
      double dense = gemm_s(m, GemmPass::Forward, rows_t, wi, wo) +
                     gemm_s(m, GemmPass::WeightGrad, rows_t, wi, wo);
      if (l > 0) dense += gemm_s(m, GemmPass::InputGrad, rows_t, wi, wo);
      dense *= transforms;
      s.gemm_s += dense;
      t += dense;
    }
    // Aggregation forward and transposed backward; the input layer aggregating first needs
    // no backward one (its dW reads the cached aggregate, and it has no dX).
    const int aggregations = l == 0 && agg_first ? 1 : 2;
    // Forward it gathers the sources' rows, backward (transposed) the destinations'. The rows
    // gathered most often are the graph's hubs: forward the sources, reached in proportion to
    // their degree; backward the destinations, the graph's own rows in a full-graph step (S is
    // symmetric), a block's with at most a fan-out of entries each.
    const double agg =
        spmm_seconds(m, entries, agg_cols, b.src, &g) +
        (aggregations > 1 ? spmm_seconds(m, entries, agg_cols, b.dst, sampled ? nullptr : &g) : 0);
    s.aggregation_s += agg;
    t += agg;
    // Bias, ReLU and their backward: a few passes over the output.
    t += ew_s(m, 6 * b.dst * wo * kF, 4);
    s.compute_s += t;
    s.exchanged_floats += aggregations * static_cast<std::int64_t>(agg_cols);
    s.exchanges += aggregations;
    // Cached activations: the dropout's copy of the layer input (its mask is a hash, never
    // stored; below the input layer the fused ReLU's output and its gradient; the input layer's
    // copy only in a full-graph step with p > 0: a batch's input rows are dropped in the
    // gather, into the batch's workspace), the cached product, the output, the backward
    // temporaries and dX. The input layer computes no dX: aggregating first its backward needs
    // no temporary (dW reads the cached aggregate), transforming first one over its sources
    // (the aggregation's adjoint of dY).
    const double in_copies = l > 0 ? 2 : (sampled || c.model.dropout <= 0 ? 0 : 1);
    const double outputs = l > 0 ? b.dst * wo * 3 : b.dst * wo + (agg_first ? 0 : b.src * wo);
    const double act = (sparse_in ? input_nnz * 2 : b.src * wi) * in_copies + rows_t * agg_cols +
                       outputs + (l > 0 ? b.src * wi : 0);
    s.activation_bytes += as_bytes(act * kF);
  }
  // The loss and its gradient: the scored rows' exponentials, and the gradient's zeroing of
  // every output row.
  const double out_rows = blocks.back().dst;
  const auto classes = static_cast<double>(g.num_classes);
  s.compute_s += m.loss_s_per_cell * loss_rows * classes + ew_s(m, out_rows * classes * kF, 2);
  s.activation_bytes += as_bytes(out_rows * static_cast<double>(g.num_classes) * kF);
  return s;
}

/// The expected distinct remote rows among a batch's input rows, hop by hop from the owned
/// seeds: a draw from an owned node is remote with probability `cut` (the part's cut entries
/// over its entries), one from a remote node stays remote with probability 1 - `back`; the
/// remote draws fall on the `pool` halo nodes (distinct: pool (1 - exp(-draws / pool))), a
/// skewed graph's hubs among them drawn again and again.
double remote_input_rows(const std::vector<Block>& blocks, double cut, double back, double pool) {
  double share = 0, draws = 0;  // remote share of a block's destinations; remote draws so far
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
    const double p = share * (1 - back) + (1 - share) * cut;  // a draw of this block is remote
    draws += b->edges * p;
    const double fresh = std::max(0.0, b->src - b->dst);
    share = b->src > 0 ? (share * std::min(b->dst, b->src) + p * fresh) / b->src : 0;
  }
  return pool > 0 ? std::min(blocks.front().src, -pool * std::expm1(-draws / pool)) : 0;
}

/// The graph's rows as the block sizes see them: per degree bucket its rows and mean degree
/// (without a histogram, every row has the mean degree).
struct DegreeRows {
  std::vector<double> rows, degree;
  double entries = 0;
  /// Expected distinct rows among `draws` neighbour draws (each row hit with probability
  /// degree / entries).
  double distinct(double draws) const {
    double sum = 0;
    for (std::size_t b = 0; b < rows.size(); ++b)
      if (degree[b] > 0 && entries > 0) sum += -rows[b] * std::expm1(-draws * degree[b] / entries);
    return sum;
  }
};

/// The share of the distinct rows `draws` neighbour draws reach (a row of degree d with
/// probability 1 - exp(-draws d / entries)) that are among the `cached` rows of highest degree;
/// or, with `in` (per degree bucket, the probability that a row is among a block's rows), the
/// share of that block's rows.
double cached_share(const DegreeRows& r, double draws, double cached,
                    const std::vector<double>* in = nullptr) {
  std::vector<std::size_t> order(r.rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return r.degree[a] > r.degree[b]; });
  double hit = 0, all = 0, left = cached;
  for (const std::size_t b : order) {
    const double p = in != nullptr   ? (*in)[b]
                     : r.entries > 0 ? -std::expm1(-draws * r.degree[b] / r.entries)
                                     : 0;
    const double take = std::min(r.rows[b], std::max(0.0, left));
    hit += take * p;
    all += r.rows[b] * p;
    left -= take;
  }
  return all > 0 ? hit / all : 0;
}

DegreeRows degree_rows(const GraphCounts& g) {
  DegreeRows r;
  r.entries = static_cast<double>(g.training_edges);
  if (g.degree_histogram.empty()) {
    const double n = static_cast<double>(g.num_nodes);
    r.rows = {n};
    r.degree = {n > 0 ? r.entries / n : 0};
    return r;
  }
  for (const auto& [count, sum] : g.degree_histogram) {
    r.rows.push_back(static_cast<double>(count));
    r.degree.push_back(count > 0 ? static_cast<double>(sum) / static_cast<double>(count) : 0);
  }
  return r;
}

json points_json(const std::vector<StepScalePoint>& pts, bool producer) {
  json a = json::array();
  for (const StepScalePoint& p : pts) {
    json o = {{"working_set_bytes", p.working_set_bytes}, {"scale", p.scale}};
    if (producer) o["producer_scale"] = p.producer;
    a.push_back(std::move(o));
  }
  return a;
}

/// step.<key>: the working-set rule's points, in growing working set.
std::vector<StepScalePoint> read_points(const json& j, const char* key, const std::string& where) {
  const std::string at = std::string("step.") + key;
  if (!j.contains("step") || !j["step"].contains(key) || !j["step"][key].is_array())
    throw IoError(where + ": expected an array at " + at);
  std::vector<StepScalePoint> pts;
  for (const json& p : j["step"][key]) {
    const std::string name = at + "[" + std::to_string(pts.size()) + "]";
    if (!p.is_object() || !p.contains("working_set_bytes") || !p.contains("scale") ||
        !p["working_set_bytes"].is_number_integer() || !p["scale"].is_number() ||
        p["working_set_bytes"].get<std::int64_t>() < 0 ||
        !(std::isfinite(p["scale"].get<double>()) && p["scale"].get<double>() >= 0))
      throw IoError(where +
                    ": expected {\"working_set_bytes\": integer >= 0, \"scale\": number >= 0} at " +
                    name);
    double producer = 1;  // optional: files written before it have the terms as measured
    if (p.contains("producer_scale")) {
      if (!p["producer_scale"].is_number() || !std::isfinite(p["producer_scale"].get<double>()) ||
          p["producer_scale"].get<double>() < 0)
        throw IoError(where + ": expected \"producer_scale\": number >= 0 at " + name);
      producer = p["producer_scale"].get<double>();
    }
    pts.push_back({p["working_set_bytes"].get<std::int64_t>(), p["scale"].get<double>(), producer});
    if (pts.size() > 1 && pts.back().working_set_bytes <= pts[pts.size() - 2].working_set_bytes)
      throw IoError(where + ": " + at + " must be in growing working_set_bytes");
  }
  return pts;
}

/// A collective entry's costs, by their key in the calibration file.
constexpr std::array<std::pair<const char*, double CollectiveCosts::*>, 3> kCollectiveCosts = {{
    {"full_graph_message_s", &CollectiveCosts::full_graph_message_s},
    {"mini_batch_message_s", &CollectiveCosts::mini_batch_message_s},
    {"mini_batch_fetch_row_s", &CollectiveCosts::mini_batch_fetch_row_s},
}};

json collectives_json(const std::vector<CollectiveCosts>& cs) {
  json a = json::array();
  for (const CollectiveCosts& c : cs) {
    json e = {{"ranks", c.ranks}};
    for (const auto& [key, field] : kCollectiveCosts) e[key] = c.*field;
    a.push_back(std::move(e));
  }
  return a;
}

/// collective: one entry per rank count calibrated, in growing ranks (none: a one-process
/// calibration).
std::vector<CollectiveCosts> read_collectives(const json& j, const std::string& where) {
  std::vector<CollectiveCosts> cs;
  if (!j.contains("collective")) return cs;
  if (!j["collective"].is_array()) throw IoError(where + ": expected an array at collective");
  for (const json& e : j["collective"]) {
    const std::string name = "collective[" + std::to_string(cs.size()) + "]";
    if (!e.is_object() || !e.contains("ranks") || !e["ranks"].is_number_integer() ||
        e["ranks"].get<int>() < 2 || (!cs.empty() && e["ranks"].get<int>() <= cs.back().ranks))
      throw IoError(where + ": expected \"ranks\": integer >= 2, growing, at " + name);
    CollectiveCosts c;
    c.ranks = e["ranks"].get<int>();
    for (const auto& [key, field] : kCollectiveCosts) {
      if (!e.contains(key) || !e[key].is_number() || !std::isfinite(e[key].get<double>()) ||
          e[key].get<double>() < 0)
        throw IoError(where + ": expected \"" + key + "\": number >= 0 at " + name);
      c.*field = e[key].get<double>();
    }
    cs.push_back(c);
  }
  return cs;
}

}  // namespace

/// The gradient all-reduce of `bytes` over `ranks` as MPICH schedules it
/// (MPIR_Iallreduce_intra_sched_auto), every message costing `alpha` (the in-step message
/// latency) plus its bytes over the link: up to kShortAllreduceBytes, recursive doubling
/// (log2 p' rounds of the whole message, p' the largest power of two <= ranks); above,
/// Rabenseifner's reduce-scatter by recursive halving and all-gather by recursive doubling
/// (2 log2 p' rounds moving 2 (p' - 1) / p' of the bytes). When ranks is not a power of two,
/// the ranks - p' extra ones first hand their data to a partner and get the result back after: two
/// more whole-message rounds.
double gemm_seconds(const CostModel& m, GemmPass pass, double rows, double in, double out) {
  return m.gemm_alpha_s + gemm_s_per_flop_of(m, pass, in, out) * 2 * rows * in * out;
}

double elementwise_seconds(const CostModel& m, double bytes, double calls) {
  return m.elementwise_alpha_s * calls + m.elementwise_s_per_byte * bytes;
}

double allreduce_s(const CostModel& m, double alpha, double bytes, int ranks) {
  if (ranks <= 1) return 0;
  int pof2 = 1, rounds = 0;
  while (2 * pof2 <= ranks) {
    pof2 *= 2;
    ++rounds;
  }
  const double whole = alpha + m.link_s_per_byte * bytes;
  const double fold = pof2 < ranks ? 2 * whole : 0;
  if (bytes <= kShortAllreduceBytes) return rounds * whole + fold;
  return 2.0 * rounds * alpha + 2.0 * (pof2 - 1) / pof2 * m.link_s_per_byte * bytes + fold;
}

double core_share(const CostModel& m, int ranks, int threads) {
  if (m.host_cores <= 0) return 1.0;
  return std::max(1.0, static_cast<double>(ranks) * std::max(1, threads) / m.host_cores);
}

double transport_cpu_s_per_byte(const CostModel& m, int ranks, int threads) {
  const bool cores_full =
      m.host_cores > 0 && static_cast<double>(ranks) * std::max(1, threads) >= m.host_cores;
  return ranks > 1 && cores_full ? core_share(m, ranks, threads) * m.transport_s_per_byte : 0;
}

double fetched_byte_s(const CostModel& m, int ranks, int threads) {
  return m.link_s_per_byte + 2 * transport_cpu_s_per_byte(m, ranks, threads);
}

namespace {
/// y0 at x <= x0, y1 at x >= x1, linear in log(x) between (0 < x0 < x1).
double log_lerp(double x, double x0, double y0, double x1, double y1) {
  if (x <= x0) return y0;
  if (x >= x1) return y1;
  return y0 + std::log(x / x0) / std::log(x1 / x0) * (y1 - y0);
}

const char* gemm_pass_name(GemmPass p) {
  switch (p) {
    case GemmPass::Forward:
      return "forward";
    case GemmPass::WeightGrad:
      return "weight_grad";
    case GemmPass::InputGrad:
      return "input_grad";
  }
  return "";
}

/// The distinct widths of `pass`'s points (ins or outs), sorted.
std::vector<double> gemm_widths(const std::vector<GemmPoint>& pts, GemmPass pass, bool ins) {
  std::vector<double> v;
  for (const GemmPoint& p : pts)
    if (p.pass == pass) v.push_back(static_cast<double>(ins ? p.in : p.out));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

/// The grid's widths around x: (x's own, the same) at or outside the edges, else the two
/// neighbours.
std::pair<double, double> around(const std::vector<double>& v, double x) {
  if (x <= v.front()) return {v.front(), v.front()};
  if (x >= v.back()) return {v.back(), v.back()};
  const auto hi = std::lower_bound(v.begin(), v.end(), x);
  return *hi == x ? std::pair{x, x} : std::pair{*(hi - 1), *hi};
}

/// The working-set rule over `field` of the points: log-linear in the working set between two.
double interpolate(const std::vector<StepScalePoint>& pts, double working_set,
                   double StepScalePoint::*field) {
  if (pts.empty()) return 1;
  if (working_set <= static_cast<double>(pts.front().working_set_bytes)) return pts.front().*field;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    const auto w0 = static_cast<double>(pts[i - 1].working_set_bytes);
    const auto w1 = static_cast<double>(pts[i].working_set_bytes);
    if (working_set >= w1) continue;
    if (w0 <= 0) return pts[i].*field;
    return log_lerp(working_set, w0, pts[i - 1].*field, w1, pts[i].*field);
  }
  return pts.back().*field;
}
}  // namespace

CollectiveCosts CostModel::collective_at(int ranks) const {
  CollectiveCosts c;
  c.ranks = ranks;
  if (collectives.empty()) return c;
  // The first entry at or above `ranks` and the one before it; the first or the last alone
  // outside them.
  std::size_t h = 0;
  while (h + 1 < collectives.size() && collectives[h].ranks < ranks) ++h;
  const CollectiveCosts& hi = collectives[h];
  const CollectiveCosts& lo = h > 0 && hi.ranks >= ranks ? collectives[h - 1] : hi;
  const auto r = static_cast<double>(ranks);
  for (const auto& [key, f] : kCollectiveCosts)
    c.*f = lo.ranks == hi.ranks ? lo.*f : log_lerp(r, lo.ranks, lo.*f, hi.ranks, hi.*f);
  return c;
}

double step_scale(const CostModel& m, bool mini, double working_set, double hub_share) {
  if (mini) return interpolate(m.mini_batch_steps, working_set, &StepScalePoint::scale);
  const double plain = interpolate(m.full_graph_steps, working_set, &StepScalePoint::scale);
  const double span = m.full_graph_skewed_hub_share - m.full_graph_hub_share;
  if (m.full_graph_skewed_steps.empty() || span <= 0) return plain;
  const double t = std::clamp((hub_share - m.full_graph_hub_share) / span, 0.0, 1.0);
  return plain +
         t * (interpolate(m.full_graph_skewed_steps, working_set, &StepScalePoint::scale) - plain);
}

double hub_share(const GraphCounts& g) { return hot_entry_share(g, 0.01); }

double producer_scale(const CostModel& m, double working_set) {
  return interpolate(m.mini_batch_steps, working_set, &StepScalePoint::producer);
}

std::filesystem::path default_calibration_path() {
  if (const char* env = std::getenv("HALO_CALIBRATION"); env != nullptr && *env != '\0') return env;
  return datasets::default_data_dir() / "calibration.json";
}

double hot_entry_share(const GraphCounts& g, double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const DegreeRows r = degree_rows(g);
  // Buckets from the highest degree down, the last one taken in part.
  std::vector<std::size_t> order(r.rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return r.degree[a] > r.degree[b]; });
  double rows = 0, entries = 0;
  for (const std::size_t b : order) {
    rows += r.rows[b];
    entries += r.rows[b] * r.degree[b];
  }
  if (rows <= 0 || entries <= 0) return fraction;
  double left = fraction * rows, hot = 0;
  for (const std::size_t b : order) {
    const double take = std::min(left, r.rows[b]);
    hot += take * r.degree[b];
    left -= take;
    if (left <= 0) break;
  }
  return hot / entries;
}

double spmm_miss_share(const CostModel& m, double entries, double cols, double rows,
                       const GraphCounts* skew) {
  if (entries <= 0) return 0;
  const double footprint = rows * cols * kF;
  // The rows that stay in the caches (as many as the in-cache rates were measured with), and
  // the share of the entries they take.
  const double cached = footprint > 0 ? std::min(1.0, m.spmm_footprint_bytes / footprint) : 1.0;
  // An input that fits stays there from the op that wrote it; of a larger one, the rows
  // gathered most often stay after their first gather, the others miss.
  return 1 - (skew != nullptr ? hot_entry_share(*skew, cached) : cached);
}

double spmm_seconds(const CostModel& m, double entries, double cols, double rows,
                    const GraphCounts* skew) {
  const double row_bytes = cols * kF;
  const double hit = m.spmm_s_per_edge + row_bytes * m.spmm_s_per_byte;
  if (m.spmm_streaming_s_per_byte <= 0) return m.spmm_alpha_s + entries * hit;
  const double miss =
      (m.spmm_streaming_s_per_edge > 0 ? m.spmm_streaming_s_per_edge : m.spmm_s_per_edge) +
      row_bytes * m.spmm_streaming_s_per_byte;
  const double share = spmm_miss_share(m, entries, cols, rows, skew);
  return m.spmm_alpha_s + entries * ((1 - share) * hit + share * miss);
}

double gemm_s_per_flop_of(const CostModel& m, GemmPass pass, double in, double out) {
  const std::vector<double> ins = gemm_widths(m.gemm_shapes, pass, true),
                            outs = gemm_widths(m.gemm_shapes, pass, false);
  if (ins.empty()) return m.gemm_s_per_flop;
  auto at = [&](double i, double o) {
    for (const GemmPoint& p : m.gemm_shapes)
      if (p.pass == pass && static_cast<double>(p.in) == i && static_cast<double>(p.out) == o)
        return p.s_per_flop;
    HALO_EXPECTS(false, "plan: the GEMM rate table is not a full grid of widths");
    return 0.0;
  };
  const auto [i0, i1] = around(ins, in);
  const auto [o0, o1] = around(outs, out);
  auto along_out = [&](double i) {
    return o0 == o1 ? at(i, o0) : log_lerp(out, o0, at(i, o0), o1, at(i, o1));
  };
  return i0 == i1 ? along_out(i0) : log_lerp(in, i0, along_out(i0), i1, along_out(i1));
}

double elementwise_s_per_byte(const CostModel& m, double footprint) {
  const double cached = m.elementwise_cached_s_per_byte > 0 ? m.elementwise_cached_s_per_byte
                                                            : m.elementwise_s_per_byte;
  return log_lerp(footprint, kCachedPassBytes, cached, kStreamingPassBytes,
                  m.elementwise_s_per_byte);
}

namespace {

json gemm_json(const CostModel& m) {
  json g = {{"alpha_s", m.gemm_alpha_s}, {"s_per_flop", m.gemm_s_per_flop}};
  if (!m.gemm_shapes.empty()) {
    json shapes = json::array();
    for (const GemmPoint& p : m.gemm_shapes)
      shapes.push_back({{"pass", gemm_pass_name(p.pass)},
                        {"in", p.in},
                        {"out", p.out},
                        {"s_per_flop", p.s_per_flop}});
    g["shapes"] = shapes;
  }
  return g;
}

/// gemm.shapes (optional: files written before it have one rate): every entry a pass, two
/// widths >= 1 and a rate, every pass's entries a full grid of its widths.
std::vector<GemmPoint> read_gemm_shapes(const json& j, const std::string& where) {
  std::vector<GemmPoint> pts;
  if (!j.contains("gemm") || !j["gemm"].contains("shapes")) return pts;
  const json& a = j["gemm"]["shapes"];
  const std::string at = where + ": gemm.shapes";
  if (!a.is_array()) throw IoError(at + " must be a list");
  for (std::size_t i = 0; i < a.size(); ++i) {
    const json& e = a[i];
    const std::string here = at + "[" + std::to_string(i) + "]";
    GemmPoint p;
    const std::string pass = e.is_object() && e.contains("pass") && e["pass"].is_string()
                                 ? e["pass"].get<std::string>()
                                 : "";
    bool known = false;
    for (const GemmPass g : kGemmPasses)
      if (pass == gemm_pass_name(g)) {
        p.pass = g;
        known = true;
      }
    if (!known) throw IoError(here + ": expected \"pass\": forward, weight_grad or input_grad");
    for (const auto& [key, field] : {std::pair{"in", &GemmPoint::in}, {"out", &GemmPoint::out}}) {
      if (!e.contains(key) || !e[key].is_number_integer() || e[key].get<std::int64_t>() < 1)
        throw IoError(here + ": expected an integer >= 1 at " + key);
      p.*field = e[key].get<std::int64_t>();
    }
    if (!e.contains("s_per_flop") || !e["s_per_flop"].is_number() ||
        !std::isfinite(e["s_per_flop"].get<double>()) || e["s_per_flop"].get<double>() <= 0)
      throw IoError(here + ": expected a finite number > 0 at s_per_flop");
    p.s_per_flop = e["s_per_flop"].get<double>();
    pts.push_back(p);
  }
  // Every pass's entries: each pair of its in and out widths exactly once.
  for (const GemmPass g : kGemmPasses)
    for (const double i : gemm_widths(pts, g, true))
      for (const double o : gemm_widths(pts, g, false)) {
        const auto n = std::count_if(pts.begin(), pts.end(), [&](const GemmPoint& p) {
          return p.pass == g && static_cast<double>(p.in) == i && static_cast<double>(p.out) == o;
        });
        if (n != 1)
          throw IoError(at + ": " + std::to_string(n) + " " + gemm_pass_name(g) +
                        " entries for in " + std::to_string(static_cast<std::int64_t>(i)) +
                        ", out " + std::to_string(static_cast<std::int64_t>(o)) +
                        " (one per pair of widths expected: a grid)");
      }
  return pts;
}

}  // namespace

void write_cost_model(const CostModel& m, const std::filesystem::path& path) {
  const json j = {
      {"format", "halo-calibration"},
      {"version", kCalibrationVersion},
      {"host", m.host},
      {"threads", m.threads},
      {"gemm", gemm_json(m)},
      {"spmm",
       {{"alpha_s", m.spmm_alpha_s},
        {"s_per_edge", m.spmm_s_per_edge},
        {"s_per_byte", m.spmm_s_per_byte},
        {"footprint_bytes", m.spmm_footprint_bytes},
        {"streaming_s_per_byte", m.spmm_streaming_s_per_byte},
        {"streaming_s_per_edge", m.spmm_streaming_s_per_edge}}},
      {"elementwise",
       {{"alpha_s", m.elementwise_alpha_s},
        {"s_per_byte", m.elementwise_s_per_byte},
        {"cached_s_per_byte", m.elementwise_cached_s_per_byte}}},
      {"loss", {{"s_per_cell", m.loss_s_per_cell}}},
      {"gather", {{"s_per_row", m.gather_s_per_row}, {"s_per_byte", m.gather_s_per_byte}}},
      {"sampler", {{"alpha_s", m.sampler_alpha_s}, {"s_per_edge", m.sampler_s_per_edge}}},
      {"link",
       {{"alpha_s", m.link_alpha_s},
        {"s_per_byte", m.link_s_per_byte},
        {"transport_s_per_byte", m.transport_s_per_byte},
        {"measured", m.link_calibrated}}},
      {"disk", {{"s_per_byte", m.disk_s_per_byte}}},
      {"step",
       {{"full_graph", points_json(m.full_graph_steps, false)},
        {"full_graph_skewed", points_json(m.full_graph_skewed_steps, false)},
        {"hub_share", m.full_graph_hub_share},
        {"skewed_hub_share", m.full_graph_skewed_hub_share},
        {"mini_batch", points_json(m.mini_batch_steps, true)},
        {"batch_alpha_s", m.batch_alpha_s},
        {"epoch_alpha_s", m.epoch_alpha_s}}},
      {"collective", collectives_json(m.collectives)},
      {"memory",
       {{"process_base_bytes", m.process_base_bytes},
        {"mpi_rank_extra_bytes", m.mpi_rank_extra_bytes}}}};
  kernels::write_file_atomically(path, j.dump(2) + "\n");
}

CostModel read_cost_model(const std::filesystem::path& path) {
  const std::string where = path.string();
  json j;
  try {
    j = json::parse(kernels::read_file_bytes(path));
  } catch (const json::exception& e) {
    throw IoError(where + ": not a calibration file (invalid JSON: " + e.what() + ")");
  }
  auto num = [&](const char* group, const char* key) -> double {
    if (!j.contains(group) || !j[group].contains(key) || !j[group][key].is_number())
      throw IoError(where + ": expected a number at " + group + "." + key);
    const double v = j[group][key].get<double>();
    if (!std::isfinite(v) || v < 0)
      throw IoError(where + ": " + group + "." + key + " must be a finite number >= 0");
    return v;
  };
  // A key files written before it lack (they read as `fallback`).
  auto opt = [&](const char* group, const char* key, double fallback) {
    return j.contains(group) && j[group].contains(key) ? num(group, key) : fallback;
  };
  if (j.value("format", std::string()) != "halo-calibration")
    throw IoError(where + ": expected \"format\": \"halo-calibration\"");
  const int version =
      j.contains("version") && j["version"].is_number_integer() ? j["version"].get<int>() : 0;
  if (version != kCalibrationVersion)
    throw IoError(where + ": calibration format version " + std::to_string(version) +
                  ", this halo reads version " + std::to_string(kCalibrationVersion) +
                  ": rerun halo calibrate");
  CostModel m;
  m.gemm_alpha_s = num("gemm", "alpha_s");
  m.gemm_s_per_flop = num("gemm", "s_per_flop");
  m.gemm_shapes = read_gemm_shapes(j, where);
  m.spmm_alpha_s = num("spmm", "alpha_s");
  m.spmm_s_per_edge = num("spmm", "s_per_edge");
  m.spmm_s_per_byte = num("spmm", "s_per_byte");
  // Optional: files written before them have one per-byte rate.
  m.spmm_footprint_bytes = opt("spmm", "footprint_bytes", 0);
  m.spmm_streaming_s_per_byte = opt("spmm", "streaming_s_per_byte", 0);
  m.spmm_streaming_s_per_edge = opt("spmm", "streaming_s_per_edge", 0);
  m.elementwise_alpha_s = num("elementwise", "alpha_s");
  m.elementwise_s_per_byte = num("elementwise", "s_per_byte");
  // Optional: files written before it have the streaming rate everywhere.
  m.elementwise_cached_s_per_byte = opt("elementwise", "cached_s_per_byte", 0);
  // Optional: files written before it read as the default guess.
  m.loss_s_per_cell = opt("loss", "s_per_cell", CostModel{}.loss_s_per_cell);
  // gather: optional (files written before it: two element-wise passes over the rows' bytes).
  m.gather_s_per_row = j.contains("gather") ? num("gather", "s_per_row") : 0;
  m.gather_s_per_byte =
      j.contains("gather") ? num("gather", "s_per_byte") : 2 * m.elementwise_s_per_byte;
  m.sampler_alpha_s = num("sampler", "alpha_s");
  m.sampler_s_per_edge = num("sampler", "s_per_edge");
  m.link_alpha_s = num("link", "alpha_s");
  m.link_s_per_byte = num("link", "s_per_byte");
  // Optional: files written before it assumed none.
  m.transport_s_per_byte = opt("link", "transport_s_per_byte", 0);
  m.disk_s_per_byte = num("disk", "s_per_byte");
  // The per-batch terms and the in-step message latency: optional (files written before them
  // read as none and the ping-pong's latency).
  m.full_graph_steps = read_points(j, "full_graph", where);
  m.mini_batch_steps = read_points(j, "mini_batch", where);
  // The skewed graphs' rule: optional (files written before it have one rule).
  if (j["step"].contains("full_graph_skewed")) {
    m.full_graph_skewed_steps = read_points(j, "full_graph_skewed", where);
    m.full_graph_hub_share = num("step", "hub_share");
    m.full_graph_skewed_hub_share = num("step", "skewed_hub_share");
    if (m.full_graph_hub_share > 1 || m.full_graph_skewed_hub_share > 1)
      throw IoError(where + ": step.hub_share and step.skewed_hub_share must be in [0, 1]");
  }
  m.batch_alpha_s = opt("step", "batch_alpha_s", 0);
  m.epoch_alpha_s = opt("step", "epoch_alpha_s", 0);
  m.collectives = read_collectives(j, where);
  m.process_base_bytes = static_cast<std::int64_t>(num("memory", "process_base_bytes"));
  m.mpi_rank_extra_bytes = static_cast<std::int64_t>(num("memory", "mpi_rank_extra_bytes"));
  m.threads = j.value("threads", 0);
  m.host = j.value("host", std::string());
  m.link_calibrated = j["link"].value("measured", false);
  m.calibrated = true;
  return m;
}

std::vector<PartCounts> estimate_parts(const GraphCounts& g, int parts) {
  HALO_EXPECTS(parts >= 1, "plan: the number of parts must be >= 1");
  const std::int64_t n = g.num_nodes;
  std::vector<PartCounts> out(static_cast<std::size_t>(parts));
  const double d = n > 0 ? static_cast<double>(g.training_edges) / static_cast<double>(n) : 0;
  std::int64_t left = n;
  for (int k = 0; k < parts; ++k) {
    PartCounts& p = out[static_cast<std::size_t>(k)];
    p.num_owned = std::min(left, (n + parts - 1) / parts);
    left -= p.num_owned;
    const double share = n > 0 ? static_cast<double>(p.num_owned) / static_cast<double>(n) : 0;
    p.num_edges = as_bytes(share * static_cast<double>(g.training_edges));
    p.num_train = as_bytes(share * static_cast<double>(g.num_train));
    p.feature_nnz = as_bytes(share * static_cast<double>(g.feature_nnz));
    if (parts > 1) {
      // A remote node is in this part's halo when one of its d neighbours is owned here.
      const double reach = -std::expm1(d * std::log1p(-1.0 / parts));
      p.num_halo = as_bytes(static_cast<double>(n - p.num_owned) * reach);
      // An owned node is sent to a peer when one of its neighbours lives there; summed over
      // the peers this is the halo the other parts see of this one.
      p.num_send = as_bytes(static_cast<double>(p.num_owned) * (parts - 1) * reach);
    }
  }
  return out;
}

bool reads_rows_from_store(const GraphCounts& g, const runtime::TrainConfig& config,
                           const std::string& device) {
  return config.mini_batch.has_value() && device != "cuda" && !g.sparse_features &&
         config.memory_budget > 0 && g.disk_bytes > 0 &&
         static_cast<std::size_t>(g.disk_bytes) > config.memory_budget;
}

PlanInput shard_plan_input(const Shard& shard) {
  const partition::Part& part = shard.part;
  const int ranks = shard.comm != nullptr ? shard.comm->size() : 1;
  PlanInput in;
  in.from_partition = ranks > 1 || !part.ids.identity();
  GraphCounts& g = in.graph;
  g.dataset = shard.dataset;
  g.num_nodes = part.book().num_nodes();
  g.training_edges = part.training_edges;
  g.max_degree = part.max_degree;
  // S's rows by degree, from the owned rows (every part's alike: times the ranks).
  g.degree_histogram = datasets::degree_histogram(part.graph.indptr.data(), part.graph.num_rows());
  for (auto& [count, sum] : g.degree_histogram) {
    count *= ranks;
    sum *= ranks;
  }
  g.input_edges = shard.num_edges;
  g.num_features = shard.num_features;
  g.num_classes = part.num_classes;
  g.num_train = part.all_train.numel();
  PartCounts p;
  p.num_owned = part.num_owned();
  p.num_halo = part.num_halo();
  p.num_edges = part.graph.num_edges();
  p.num_halo_entries = part.num_halo_entries();
  p.num_train = part.train_idx.numel();
  p.num_send = part.send_rows.numel();
  if (const auto* sparse = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&part.features)) {
    g.sparse_features = true;
    p.feature_nnz = sparse->num_edges();
  }
  g.feature_nnz = p.feature_nnz * ranks;
  g.num_val = part.val_idx.numel() * ranks;
  g.num_test = part.test_idx.numel() * ranks;
  in.parts.assign(static_cast<std::size_t>(ranks), p);
  return in;
}

std::int64_t checkpoint_bytes(std::int64_t parameters) { return 16 * parameters + 4096; }

std::int64_t count_parameters(const TrainConfig& config, std::int64_t in_features,
                              std::int32_t classes) {
  const std::vector<std::int64_t> w = layer_widths(config, in_features, classes);
  const std::int64_t mats = config.model.kind == nn::ModelKind::Sage ? 2 : 1;
  std::int64_t total = 0;
  for (std::size_t l = 0; l + 1 < w.size(); ++l) total += mats * w[l] * w[l + 1] + w[l + 1];
  return total;
}

Plan make_plan(const PlanInput& in, const TrainConfig& config, const CostModel& m,
               const std::string& device, int threads) {
  const GraphCounts& g = in.graph;
  const int ranks = static_cast<int>(in.parts.size());
  HALO_EXPECTS(ranks >= 1, "plan: no parts");
  check_config(config);
  HALO_EXPECTS(
      g.num_nodes >= 0 && g.training_edges >= 0 && g.num_features >= 1 && g.num_classes >= 1,
      "plan: the counts need nodes, features and classes");
  HALO_EXPECTS(device == "cpu" || device == "cuda", "plan: device must be cpu or cuda");
  const bool cuda = device == "cuda";
  const bool mini = config.mini_batch.has_value();
  const bool sage = config.model.kind == nn::ModelKind::Sage;

  Plan plan;
  plan.dataset = g.dataset;
  plan.disk_bytes = g.disk_bytes;
  plan.mode = mini ? "mini-batch" : "full-graph";
  plan.device = device;
  plan.ranks = ranks;
  plan.threads = threads;
  plan.epochs = config.epochs;
  plan.parameters = count_parameters(config, g.num_features, g.num_classes);
  plan.parts_estimated = in.parts_estimated;
  plan.calibrated = m.calibrated;
  plan.link_calibrated = m.link_calibrated;
  plan.checkpoint_bytes = checkpoint_bytes(plan.parameters);
  plan.checkpoint_seconds = m.disk_s_per_byte * static_cast<double>(plan.checkpoint_bytes);
  const double param_bytes = static_cast<double>(plan.parameters) * kF;
  // The producer thread (CPU mini-batch) has cores of its own where the ranks' threads and
  // their producers fit in the host's cores (the Trainer's rule, auto_prefetch, with the host's
  // cores shared by the ranks; 0: a core per thread); --prefetch auto runs one only then.
  const bool producer_core =
      m.host_cores == 0 || auto_prefetch(threads, m.host_cores, m.host_cores, ranks) == 1;
  const int prefetch = cuda || !mini                                  ? 0
                       : config.mini_batch->prefetch == kAutoPrefetch ? (producer_core ? 1 : 0)
                                                                      : config.mini_batch->prefetch;
  plan.prefetch = prefetch;

  // Mini-batch: batches, expected block sizes and the sampler's envelope (what the run
  // measures: the largest blocks of its first batches with MiniBatchConfig::envelope_margin,
  // within the sampler's bound from the whole graph's degree statistics; here the expected
  // blocks with that margin on a device's CPU-sampled runs, the bound on a device).
  // The batch probe's measures: one process on a store (PlanInput::probe), none for ranks.
  const StoreProbe no_probe;
  const StoreProbe& probe = ranks == 1 && !in.from_partition ? in.probe : no_probe;
  std::vector<Block> batch_blocks;  // a rank's
  double sampled_edges = 0;         // a rank's, a batch
  // Per degree bucket (DegreeRows), the probability that a row is among a batch's input rows.
  std::vector<double> batch_input, eval_input;
  // --eval-fanouts: the evaluation's batches (training, validation and test nodes) and blocks.
  const bool sampled_eval = mini && !config.mini_batch->eval_fanouts.empty();
  std::int64_t eval_batches = 0;
  std::vector<Block> eval_blocks;
  double eval_edges = 0;
  if (mini) {
    const MiniBatchConfig& mb = *config.mini_batch;
    const std::int64_t all_batches =
        std::max<std::int64_t>(1, (g.num_train + mb.batch_size - 1) / mb.batch_size);
    plan.batches_per_epoch = std::max<std::int64_t>(1, runtime::epoch_batches(mb, g.num_train));
    const std::int64_t slots = 1 + prefetch;
    // The envelope of blocks `blocks` under `fanouts`: measured on the host (the bound's on a
    // device sampling one part).
    const bool measured = !(cuda && ranks == 1);
    // (SampledBatches' batches hold at most its seeds.)
    // (A probe's largest blocks are what the run measures: provisioned as the run does.)
    const auto envelope_bytes = [&](const std::vector<int>& fanouts,
                                    const std::vector<Block>& blocks, std::int64_t seeds,
                                    const BatchProbe& measured_blocks) {
      const sampler::SamplerEnvelope bound = sampler::plan_envelope(
          {g.num_nodes, g.training_edges, g.max_degree},
          std::max<std::int64_t>(1, std::min(mb.batch_size, seeds)), fanouts, mb.replace);
      if (!measured) return static_cast<std::int64_t>(bound.bytes()) * slots;
      if (measured_blocks.batches > 0)
        return static_cast<std::int64_t>(
                   sampler::provision_envelope(measured_blocks.largest, bound, mb.envelope_margin)
                       .bytes()) *
               slots;
      sampler::SamplerEnvelope expected = bound;
      std::int64_t keys = 0;
      const auto up = [](double x) { return static_cast<std::int64_t>(std::ceil(x)); };
      for (std::size_t l = 0; l < blocks.size(); ++l) {
        expected.layers[l] = {up(blocks[l].dst), up(blocks[l].edges), up(blocks[l].src)};
        keys = std::max(keys, expected.layers[l].num_dst + expected.layers[l].num_edges);
      }
      expected.table_slots = sampler::detail::table_slots_for(std::min(keys, g.num_nodes));
      return static_cast<std::int64_t>(
                 sampler::provision_envelope(expected, bound, mb.envelope_margin).bytes()) *
             slots;
    };
    // Expected sizes of a rank's blocks (every rank samples its 1/P of a batch's seeds), per
    // degree bucket: the probability that a row of the bucket is among a block's
    // destinations. The seeds are rows at random; a destination draws min(fanout, its degree)
    // neighbours; a row is drawn with probability 1 - exp(-draws x its degree / entries) (a
    // neighbour is a row in proportion to its degree), and the block's sources are its
    // destinations and every row drawn (fewer seeds draw fewer repeats: a rank's sources are
    // more than 1/P of the whole batch's). Hubs drawn in one hop are destinations of the next:
    // tracking them per bucket keeps a row drawn twice from counting twice.
    const double n = static_cast<double>(g.num_nodes);
    const DegreeRows rows = degree_rows(g);
    // The blocks of a batch of `seeds` seeds (a rank's) under `fanouts`, its sampled edges and
    // its input rows' bucket probabilities.
    const auto expected_blocks = [&](const std::vector<int>& fanouts, double seeds,
                                     std::vector<Block>& blocks, double& edges,
                                     std::vector<double>& in) {
      blocks.resize(fanouts.size());
      in.assign(rows.rows.size(), n > 0 ? std::min(1.0, seeds / n) : 0);
      double dst = seeds;
      for (std::size_t h = 0; h < fanouts.size(); ++h) {
        const std::size_t l = fanouts.size() - 1 - h;
        const int k = fanouts[l];
        Block b;
        b.dst = dst;
        for (std::size_t q = 0; q < in.size(); ++q)
          b.edges += rows.rows[q] * in[q] *
                     (k < 0 ? rows.degree[q] : std::min(static_cast<double>(k), rows.degree[q]));
        double src = 0;
        for (std::size_t q = 0; q < in.size(); ++q) {
          const double drawn =
              rows.entries > 0 ? -std::expm1(-b.edges * rows.degree[q] / rows.entries) : 0;
          in[q] = 1 - (1 - in[q]) * (1 - drawn);
          src += rows.rows[q] * in[q];
        }
        b.src = std::min(n, std::max(dst, src));
        blocks[l] = b;
        edges += b.edges;
        dst = b.src;
      }
    };
    // A probe's batches (one process) replace the modelled blocks by their means.
    const auto probed_blocks = [&](const BatchProbe& sampled, std::vector<Block>& blocks,
                                   double& edges) {
      if (sampled.batches == 0) return;
      plan.probed_batches += sampled.batches;
      edges = 0;
      for (std::size_t l = 0; l < blocks.size() && l < sampled.mean.size(); ++l) {
        blocks[l] = {sampled.mean[l].dst, sampled.mean[l].src, sampled.mean[l].edges};
        edges += sampled.mean[l].edges;
      }
    };
    expected_blocks(mb.fanouts,
                    std::min(static_cast<double>(mb.batch_size),
                             static_cast<double>(g.num_train) / all_batches) /
                        ranks,
                    batch_blocks, sampled_edges, batch_input);
    probed_blocks(probe.train, batch_blocks, sampled_edges);
    plan.sampler_envelope_bytes =
        envelope_bytes(mb.fanouts, batch_blocks, g.num_train, probe.train);
    if (sampled_eval) {
      // Its own sampler and slots (SampledBatches over the scored nodes), at most max_batches.
      const std::int64_t scored = g.num_train + g.num_val + g.num_test;
      const std::int64_t all_eval =
          std::max<std::int64_t>(1, (scored + mb.batch_size - 1) / mb.batch_size);
      eval_batches = std::max<std::int64_t>(1, runtime::epoch_batches(mb, scored));
      expected_blocks(mb.eval_fanouts,
                      std::min(static_cast<double>(mb.batch_size),
                               static_cast<double>(scored) / static_cast<double>(all_eval)) /
                          ranks,
                      eval_blocks, eval_edges, eval_input);
      probed_blocks(probe.eval, eval_blocks, eval_edges);
      plan.sampler_envelope_bytes +=
          envelope_bytes(mb.eval_fanouts, eval_blocks, scored, probe.eval);
    }
  }

  double input_nnz_total =
      g.sparse_features ? static_cast<double>(g.feature_nnz) : 0;  // whole graph
  const double hubs = hub_share(g);  // the full-graph step scale's rule
  for (int r = 0; r < ranks; ++r) {
    const PartCounts& p = in.parts[static_cast<std::size_t>(r)];
    RankPlan rp;
    rp.rank = r;
    const std::int64_t n_o = p.num_owned, n_l = p.num_owned + p.num_halo;
    auto& host = rp.host;
    auto& gpu = rp.gpu;
    auto& data = cuda ? gpu : host;  // where the training data live
    host.push_back({"process", m.process_base_bytes + (ranks > 1 ? m.mpi_rank_extra_bytes : 0)});
    // A store larger than the budget (one process, mini-batch, CPU, dense rows), or a part of
    // a store's partition whose file and owned rows are (each rank), is read from the store's
    // file (runtime::FeatureStore::from_file): only the row cache of the highest-degree owned
    // nodes, a quarter of the budget, is held.
    const double row_bytes = kF * static_cast<double>(g.num_features);
    const bool from_file =
        in.from_partition
            ? mini && !cuda && !g.sparse_features && config.memory_budget > 0 && g.store_features &&
                  static_cast<double>(p.file_bytes) + static_cast<double>(n_o) * row_bytes >
                      static_cast<double>(config.memory_budget)
            : ranks == 1 && reads_rows_from_store(g, config, device);
    // The part: S's owned rows, degrees and ids of the local nodes (one process too: the
    // identity's ids), labels, splits (and with --eval-fanouts a byte per owned node: its
    // split), and the list of every training node (repeated on every part). A store read from
    // its file in one process keeps S's column ids in the file: the sampler reads its rows with
    // pread (sampler::FileNeighbors), so they take page cache, not the process's memory.
    const bool graph_in_file = from_file && !in.from_partition;
    const std::int64_t part_bytes = kI * (n_o + 1) + (graph_in_file ? 0 : kF * p.num_edges) +
                                    kI * n_l + kF * n_l + kF * n_o + (sampled_eval ? n_o : 0) +
                                    kF * (p.num_train + (g.num_val + g.num_test) / ranks) +
                                    2 * kF * g.num_train;
    host.push_back({"part", part_bytes});
    const std::int64_t nnz_o = g.sparse_features ? p.feature_nnz : 0;
    const std::int64_t features = feature_bytes(g, n_o, nnz_o);
    const double cached_rows =
        from_file ? std::min(static_cast<double>(n_o),
                             std::floor(static_cast<double>(config.memory_budget / 4) / row_bytes))
                  : 0;
    // (Read from the file: the row cache and a slot index per owned node.)
    host.push_back(
        {"features", from_file ? as_bytes(cached_rows * row_bytes) + kF * n_o : features});
    if (cuda) gpu.push_back({"features", features});
    // The propagation matrix the layers read (GCN: normalised, with self-loops; SAGE: S's
    // rows), local columns.
    // HaloExchange keeps the owned block, the halo block and the halo block's transpose (the
    // backward product), and for SAGE the owned block's transpose too (GCN's is symmetric).
    const std::int64_t halo_entries =
        p.num_halo_entries >= 0
            ? p.num_halo_entries
            : (n_l > 0 ? as_bytes(static_cast<double>(p.num_edges) *
                                  static_cast<double>(p.num_halo) / static_cast<double>(n_l))
                       : 0);
    const std::int64_t own_entries = p.num_edges - halo_entries + (sage ? 0 : n_o);
    // (None in a mini-batch run of one process on the CPU: it evaluates layer by layer on the
    // sampler's graph, runtime::LayerwiseInference.)
    // (Nor with --eval-fanouts: the evaluation samples its blocks too.)
    const bool layerwise = mini && ranks == 1 && !cuda && !sampled_eval;
    const std::int64_t adjacency =
        layerwise || sampled_eval
            ? 0
            : kI * (n_o + 1) * (sage ? 2 : 1) + (kF + kF) * own_entries * (sage ? 2 : 1) +
                  (p.num_halo > 0
                       ? kI * (n_o + 1) + kI * (p.num_halo + 1) + 2 * (kF + kF) * halo_entries
                       : 0);
    data.push_back({"adjacency", adjacency});
    // Halo exchange buffers, and (mini-batch) the feature cache.
    const std::vector<std::int64_t> w = layer_widths(config, g.num_features, g.num_classes);
    // The widest rows a layer exchanges: its input's where it aggregates first (dense and
    // narrower than its output), else its output's (the full-graph order, step_cost's).
    std::int64_t exchanged = 0;
    for (std::size_t l = 0; l + 1 < w.size(); ++l)
      exchanged =
          std::max(exchanged, !(l == 0 && g.sparse_features) && w[l] < w[l + 1] ? w[l] : w[l + 1]);
    // The widest hidden layer (0 with one layer): the layer-wise evaluation's representations.
    const std::int64_t hidden = w.size() > 2 ? *std::max_element(w.begin() + 1, w.end() - 1) : 0;
    std::int64_t halo_bytes = 0;
    // (Mini-batch: the end-of-epoch evaluation's full-graph pass exchanges through them too.)
    if (ranks > 1 && !sampled_eval)
      halo_bytes = kF * (p.num_send + p.num_halo) * exchanged + kF * p.num_send;
    data.push_back({"halo", halo_bytes});
    std::int64_t cache_bytes = 0;
    if (mini && ranks > 1) {
      const double row = kF * (2.0 + static_cast<double>(g.num_features));
      cache_bytes = std::min(as_bytes(config.mini_batch->cache_mb * 1048576.0),
                             as_bytes(static_cast<double>(p.num_halo) * row));
    }
    data.push_back({"feature_cache", cache_bytes});
    data.push_back({"sampler_envelope", mini ? plan.sampler_envelope_bytes : 0});
    // Parameters, gradients, Adam's two moments, and the all-reduce's flat buffer.
    data.push_back({"model_optimizer", as_bytes(param_bytes * (4 + (ranks > 1 ? 1 : 0)))});

    // Activations and the step's time.
    std::vector<Block> blocks;
    double input_nnz = 0;
    if (mini) {
      blocks = batch_blocks;
      input_nnz = g.num_nodes > 0
                      ? input_nnz_total * blocks.front().src / static_cast<double>(g.num_nodes)
                      : 0;
    } else {
      // A layer reads and writes the owned rows only: its halo rows come through HaloExchange's
      // buffers (the "halo" item), after the transform when it transforms first.
      for (int l = 0; l < config.model.num_layers; ++l)
        blocks.push_back(
            {static_cast<double>(n_o), static_cast<double>(n_o), static_cast<double>(p.num_edges)});
      input_nnz = static_cast<double>(nnz_o);
    }
    // A batch's input rows stay sparse in one process only: with several parts, owned and
    // fetched rows are gathered into one dense block (FeatureStore::make_inputs), so the input
    // layer's products are dense.
    const bool sparse_input = g.sparse_features && !(mini && ranks > 1);
    // The loss scores a batch's seeds, or the part's training rows.
    const double loss_rows = mini ? blocks.back().dst : static_cast<double>(p.num_train);
    const StepCost step = step_cost(m, config, g, blocks, input_nnz, mini, sparse_input, loss_rows);
    std::int64_t activations = step.activation_bytes;
    bool evaluation_spilled = false;
    if (sampled_eval) {
      // The model's buffers are reserved for the larger of the two envelopes' blocks.
      activations = std::max(activations, step_cost(m, config, g, eval_blocks, input_nnz, mini,
                                                    sparse_input, eval_blocks.back().dst)
                                              .activation_bytes);
    } else if (mini && !layerwise) {
      // Every epoch ends with a full-graph forward pass (Trainer::evaluate), which grows the
      // layers' forward buffers (cached product, output) to the part's rows.
      for (std::size_t l = 0; l + 1 < w.size(); ++l) {
        const bool sparse_in = l == 0 && g.sparse_features;
        const bool agg_first = !sparse_in && w[l] < w[l + 1];
        const std::int64_t agg_cols = agg_first ? w[l] : w[l + 1];
        activations += kF * (n_o * agg_cols + 2 * n_o * w[l + 1]);
      }
      activations += kF * n_o * g.num_classes;
    } else if (layerwise) {
      // One process evaluates layer by layer (runtime::LayerwiseInference): the logits, the
      // hidden representations unless they go to a file under the budget, and one chunk
      // (its rows' neighbours gathered, the layer's buffers over its rows).
      const std::int64_t reps = 2 * kF * n_o * hidden;
      const std::int64_t data = features + kI * (n_o + 1) + kF * p.num_edges;
      const bool spilled = !runtime::LayerwiseInference::keeps_in_memory(
          static_cast<std::size_t>(data), static_cast<std::size_t>(reps), config.memory_budget);
      evaluation_spilled = spilled;
      const std::int64_t chunk =
          std::min<std::int64_t>(n_o, runtime::LayerwiseInference::kChunkEntries +
                                          runtime::LayerwiseInference::kChunkRows);
      // A chunk: its sources' rows gathered, and the layer's few buffers over its rows (as
      // wide as the widest layer, the input's included).
      const std::int64_t any = *std::max_element(w.begin(), w.end());
      // Two layers: the hidden representation and the logits; more: two hidden ones in turn,
      // the logits in one of them (spilled: only the logits stay in memory).
      const std::int64_t logits = kF * n_o * g.num_classes;
      const std::int64_t held = spilled                        ? logits
                                : config.model.num_layers >= 3 ? std::max(reps, logits)
                                                               : reps / 2 + logits;
      activations +=
          held + kF * chunk * any + 3 * kF * runtime::LayerwiseInference::kChunkRows * any;
    }
    data.push_back({"activations", activations});
    // Workspace: the gathered input rows of a batch (mini-batch) or the prepared copy of a
    // feature matrix a device run keeps on the host; BLAS/OpenMP scratch is in `process`.
    // Sparse rows stay sparse in one part only: with several, owned and fetched rows are
    // gathered into one dense block (FeatureStore::make_inputs), with the rows' ids.
    // One such block per batch slot (the producer's prefetched batches each have theirs).
    std::int64_t workspace = 0;
    const auto input_block = [&](const Block& input) {
      return (1 + prefetch) *
             (g.sparse_features && ranks == 1
                  ? as_bytes(kI * input.src + 8.0 * input_nnz)
                  : as_bytes(input.src * (static_cast<double>(g.num_features) * kF +
                                          (ranks > 1 ? 2 * kI : 0))));
    };
    if (mini) workspace = input_block(blocks.front());
    if (sampled_eval) workspace += input_block(eval_blocks.front());
    data.push_back({"workspace", workspace});

    // Loading: the dataset's arrays (one process) or the part file (a rank), plus the graph S
    // that one process builds from the dataset (symmetrisation: S and its transpose at once).
    if (in.from_partition) {
      rp.dataset_bytes = p.file_bytes > 0 ? p.file_bytes : part_bytes + features + kF * p.num_send;
      rp.scratch_bytes = 0;
    } else {
      rp.dataset_bytes = kI * (g.num_nodes + 1) + kF * g.input_edges * (g.weighted ? 2 : 1) +
                         feature_bytes(g, g.num_nodes, g.feature_nnz) + kF * g.num_nodes +
                         kF * (g.num_train + g.num_val + g.num_test);
      // A graph that is S already (a store of S: as many entries) is taken as it is.
      rp.scratch_bytes = g.input_edges == g.training_edges
                             ? 0
                             : kI * (g.num_nodes + 1) + 2 * kF * (g.input_edges + g.training_edges);
      // Read from the files, the graph and the features are mappings: their pages are the page
      // cache's, not the process's.
      if (from_file)
        rp.dataset_bytes -= kI * (g.num_nodes + 1) + kF * g.input_edges * (g.weighted ? 2 : 1) +
                            feature_bytes(g, g.num_nodes, g.feature_nnz);
    }
    if (from_file) {
      // Rows read from the file: a batch's input rows not in the cache, and an evaluation's
      // first-layer rows (its chunks' sources) and, spilled, its hidden layers read back.
      // Several ranks: each input row of a batch is read from a file, its own or its owner's
      // (which serves it), unless a row cache holds it: the ranks' caches together hold about
      // `ranks` times as many of the highest-degree rows (the remote-row cache is not counted).
      const DegreeRows rows = degree_rows(g);
      const Block& input = batch_blocks.front();
      const double cached_all = cached_rows * static_cast<double>(ranks);
      // (A probe counted each batch's rows outside the cache itself.)
      const double batch_uncached =
          probe.train.batches > 0
              ? probe.train.uncached_rows
              : input.src * (1 - cached_share(rows, 0, cached_all, &batch_input));
      rp.disk_read_bytes_per_epoch =
          as_bytes(static_cast<double>(plan.batches_per_epoch) * batch_uncached * row_bytes);
      if (sampled_eval) {
        // The evaluation's batches: their input rows not in the cache.
        const double eval_uncached =
            probe.eval.batches > 0
                ? probe.eval.uncached_rows
                : eval_blocks.front().src * (1 - cached_share(rows, 0, cached_all, &eval_input));
        rp.evaluation_read_bytes =
            as_bytes(static_cast<double>(eval_batches) * eval_uncached * row_bytes);
      } else {
        const double chunk = static_cast<double>(runtime::LayerwiseInference::kChunkEntries);
        const double entries = static_cast<double>(p.num_edges);
        const double chunks = std::max(1.0, std::ceil(entries / chunk));
        const double sources =
            chunks * (static_cast<double>(n_o) / chunks + rows.distinct(std::min(entries, chunk)));
        const double eval_miss = 1 - cached_share(rows, std::min(entries, chunk), cached_rows);
        rp.evaluation_read_bytes = as_bytes(sources * row_bytes * eval_miss);
        if (evaluation_spilled)
          rp.evaluation_read_bytes += as_bytes(sources * kF * static_cast<double>(hidden) *
                                               static_cast<double>(w.size() - 2));
      }
    }
    std::int64_t steady = 0;
    for (const MemoryItem& i : host) steady += i.bytes;
    // Setting up: the adjacency is built in growing vectors and copied into tensors (a second
    // copy for a moment), before any activation exists.
    std::int64_t activation_host = 0;
    for (const MemoryItem& i : host)
      if (i.name == "activations") activation_host = i.bytes;
    const std::int64_t setup = steady - activation_host + (cuda ? 0 : adjacency);
    const std::int64_t loading = m.process_base_bytes + (ranks > 1 ? m.mpi_rank_extra_bytes : 0) +
                                 rp.dataset_bytes + rp.scratch_bytes;
    rp.peak_host_bytes = std::max({steady, loading, setup});
    for (const MemoryItem& i : gpu) rp.peak_gpu_bytes += i.bytes;

    // Time of one epoch.
    const double steps = static_cast<double>(plan.batches_per_epoch);
    // Adam: read grad, m, v, w; write m, v, w; one call per parameter tensor (weights, bias),
    // at the rate of its footprint (the four arrays): small models' stay in the caches.
    const double tensors = config.model.num_layers * (sage ? 3.0 : 2.0);
    const double adam = m.elementwise_alpha_s * tensors +
                        elementwise_s_per_byte(m, 4.0 * param_bytes) * 7.0 * param_bytes;
    for (const MemoryItem& i : data)
      if (i.name != "process") rp.working_set_bytes += i.bytes;
    // Ranks sharing one host (--host-cores) share its caches: the scale of the host's working
    // set, this rank's times the ranks.
    const double host_working_set =
        static_cast<double>(rp.working_set_bytes) * (m.host_cores > 0 ? ranks : 1);
    const double scale = step_scale(m, mini, host_working_set, hubs);
    rp.step_scale = scale;
    // The latency of a message inside a step (fitted on distributed runs), else the link's.
    const CollectiveCosts collective = m.collective_at(ranks);
    const double fitted_alpha =
        mini ? collective.mini_batch_message_s : collective.full_graph_message_s;
    const double msg_alpha = fitted_alpha > 0 ? fitted_alpha : m.link_alpha_s;
    // Where the ranks fill the host's cores, the transport's CPU work: every byte this rank
    // sends and every byte it receives crosses its cores once. It runs on cores that compute, so
    // it adds to the exchange and never hides (measured: the emulated cluster's fetches took the
    // wire's time plus 0.11-0.17 s at every link; our reading, UCX's TCP moves bytes only while
    // its rank polls, docs/performance.md).
    const double cpu_per_byte = transport_cpu_s_per_byte(m, ranks, threads);
    // Ranks sharing fewer cores than they have threads run their compute that much slower.
    const double share = core_share(m, ranks, threads);
    // The step scale stands for what the graph's kernel terms miss in the layers (caches missed
    // by irregular gathers, dropout's hashing, OpenMP regions). The dense products (their cost
    // is their shape's, measured as such) and Adam (plain streaming over the parameters) are
    // costed as measured.
    rp.dense_s = share * steps * (step.gemm_s + adam);
    rp.compute_s = share * steps * scale * (step.compute_s - step.gemm_s) + rp.dense_s;
    // Fixed costs of a batch the kernel terms leave out.
    if (mini) rp.compute_s += steps * m.batch_alpha_s + m.epoch_alpha_s;
    if (mini) {
      rp.sampling_s = steps * (m.sampler_alpha_s + m.sampler_s_per_edge * sampled_edges);
      // Gathering the input rows of every batch.
      const double row_bytes = sparse_input ? 8.0 * input_nnz / std::max(1.0, blocks.front().src)
                                            : kF * static_cast<double>(g.num_features);
      rp.sampling_s +=
          steps * blocks.front().src * (m.gather_s_per_row + m.gather_s_per_byte * row_bytes);
      // With several parts a batch's rows come from the part, the cache and the owners
      // (FeatureStore::gather), and the input dropout is a pass of its own over the assembled
      // block (one process fuses it into the gather), costed as the step's dropout passes are;
      // on a GPU it runs on the device, after the copy.
      if (ranks > 1 && config.model.dropout > 0 && !cuda)
        rp.sampling_s += steps * ew_s(m, 2 * blocks.front().src * row_bytes);
      // The producer's own scale, fitted on its measured sampling and gathering (a one-process
      // calibration run hides them behind the training thread: the step scale cannot see them).
      rp.sampling_s *= share * producer_scale(m, host_working_set);
      if (ranks > 1) {
        // Remote input rows, hop by hop from the seeds (a remote node's cut entries spread
        // over the other P - 1 parts), less what the cache holds.
        const double cut =
            p.num_edges > 0 ? static_cast<double>(halo_entries) / static_cast<double>(p.num_edges)
                            : 0;
        const double remote =
            remote_input_rows(blocks, cut, cut / (ranks - 1), static_cast<double>(p.num_halo));
        const double cached = p.num_halo > 0 ? std::min(1.0, static_cast<double>(cache_bytes) /
                                                                 (static_cast<double>(p.num_halo) *
                                                                  (kF * (2.0 + g.num_features))))
                                             : 0;
        const double rows = remote * (1 - cached);
        rp.feature_fetch_bytes = as_bytes(steps * rows * kF * (2.0 + g.num_features));
        // One all-to-all of requests and one of rows per batch, plus the sampler's per hop.
        const double msgs = steps * (2.0 + 2.0 * config.model.num_layers) * (ranks - 1);
        rp.exchange_s =
            msgs * msg_alpha + steps * rows * collective.mini_batch_fetch_row_s +
            fetched_byte_s(m, ranks, threads) * static_cast<double>(rp.feature_fetch_bytes);
      }
      // The producer thread (--prefetch >= 1, CPU) samples, gathers and fetches batch b + 1
      // while the training thread computes batch b: a two-stage pipeline, when the producers
      // have cores of their own (ranks x (threads + 1) <= host_cores; 0: a core per thread).
      // Its epoch is one batch produced, then steps - 1 of the slower stage, then one batch
      // computed. Otherwise both run on the same cores, one after the other.
      const double produce = rp.sampling_s + rp.exchange_s;
      double hidden = 0;  // (steps - 1) x the faster stage's time per batch
      if (prefetch > 0 && producer_core && steps > 1)
        hidden = (steps - 1) * std::min((rp.compute_s - m.epoch_alpha_s) / steps, produce / steps);
      // What the overlap hides comes off the exchange first, then off the sampling. (A
      // producer with cores of its own and a transport with CPU work to charge exclude each
      // other: the latter needs the ranks to fill the cores.)
      rp.exposed_exchange_s = std::max(0.0, rp.exchange_s - hidden);
      rp.exposed_sampling_s = rp.sampling_s - std::max(0.0, hidden - rp.exchange_s);
    } else if (ranks > 1) {
      // Every aggregation sends its matrix's halo rows forward, and their gradients back (but
      // the input layer's when it aggregates first: it has no backward aggregation).
      const double peers = std::min<double>(ranks - 1, static_cast<double>(p.num_send));
      rp.halo_exchange_bytes = kF * p.num_send * step.exchanged_floats;
      const double wait = step.exchanges * peers * msg_alpha +
                          m.link_s_per_byte * static_cast<double>(rp.halo_exchange_bytes);
      // Each exchange sends the part's send rows and receives its halo rows forward, and the
      // other way backward: (send + halo) rows through the transport per exchanged column.
      const double transport = cpu_per_byte * kF * static_cast<double>(p.num_send + p.num_halo) *
                               static_cast<double>(step.exchanged_floats);
      rp.exchange_s = wait + transport;
      // Overlap: the owned rows' aggregation (as the step runs it: scaled, shared) runs while
      // the rows travel; it hides the wait, not the transport's CPU work.
      const double inner = config.overlap ? share * scale * step.aggregation_s : 0;
      rp.exposed_exchange_s = std::max(0.0, wait - inner) + transport;
    }
    if (ranks > 1) {
      // Every rank sends and receives the all-reduce's bytes.
      rp.allreduce_bytes = as_bytes(steps * 2.0 * (ranks - 1) / ranks * (param_bytes + 8));
      rp.allreduce_s = steps * allreduce_s(m, msg_alpha, param_bytes + 8, ranks) +
                       cpu_per_byte * 2 * static_cast<double>(rp.allreduce_bytes);
    }
    // AdaptDL's form: compute and network terms added, of the overlapped ones (the halo
    // exchange, the producer's sampling and fetches) their exposed parts only.
    rp.epoch_s = rp.compute_s + rp.exposed_sampling_s + rp.exposed_exchange_s + rp.allreduce_s;
    plan.per_rank.push_back(std::move(rp));
  }
  double eval_s = 0;
  for (const RankPlan& rp : plan.per_rank) {
    plan.peak_host_bytes_per_rank = std::max(plan.peak_host_bytes_per_rank, rp.peak_host_bytes);
    plan.peak_gpu_bytes_per_rank = std::max(plan.peak_gpu_bytes_per_rank, rp.peak_gpu_bytes);
    plan.comm_bytes_per_epoch +=
        rp.halo_exchange_bytes + rp.feature_fetch_bytes + rp.allreduce_bytes;
    plan.epoch_seconds = std::max(plan.epoch_seconds, rp.epoch_s);
    eval_s = std::max(eval_s, rp.compute_s / (3.0 * static_cast<double>(plan.batches_per_epoch)));
  }
  // Each epoch is followed by a full-graph forward pass (about a third of a step).
  plan.train_seconds = config.epochs * (plan.epoch_seconds + eval_s);
  return plan;
}

}  // namespace halo::cluster
