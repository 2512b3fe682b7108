#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <metis.h>
#include <string>
#include <vector>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/partition/detail/metis.hpp>
#include <halo/partition/partitioners/lp_multilevel.hpp>
#include <halo/partition/partitioners/partitioner.hpp>

namespace halo::partition {
namespace {

namespace rng = kernels::rng;

constexpr std::int32_t kMaxParts = 1024;

void check_config(const PartitionConfig& c) {
  HALO_EXPECTS(
      c.num_parts >= 1 && c.num_parts <= kMaxParts,
      "partition: the number of parts must be in [1, 1024], got " + std::to_string(c.num_parts));
  HALO_EXPECTS(std::isfinite(c.imbalance) && c.imbalance > 0.0 && c.imbalance <= 1.0,
               "partition: imbalance must be in (0, 1], got " + std::to_string(c.imbalance));
  HALO_EXPECTS(c.balance.nodes || c.balance.train || c.balance.edges,
               "partition: balance needs at least one of nodes, train, edges");
  HALO_EXPECTS(!(c.method == Method::MetisRecursive && c.objective == Objective::Volume),
               "partition: recursive bisection minimises the edge cut only (use --objective cut "
               "or --method metis)");
}

std::string limit_message(const char* what, std::int64_t value) {
  return "partition: the graph has " + std::to_string(value) + " " + what +
         ", more than METIS accepts: this METIS is built with " + std::to_string(IDXTYPEWIDTH) +
         "-bit indices (IDXTYPEWIDTH " + std::to_string(IDXTYPEWIDTH) + "), limit " +
         std::to_string(metis_index_limit());
}

Assignment random_parts(std::int64_t n, const PartitionConfig& c) {
  Assignment a;
  a.part.resize(static_cast<std::size_t>(n));
  const std::uint64_t stream = rng::stream_id(rng::kStreamShuffle, 0x9a47);
  for (std::int64_t v = 0; v < n; ++v)
    a.part[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(rng::below(
        c.seed, stream, static_cast<std::uint64_t>(v), static_cast<std::uint64_t>(c.num_parts)));
  return a;
}

}  // namespace

/// Moves nodes between parts until every part is within cap = floor((1 + imbalance) * total / P)
/// on every constraint, or no single move helps. METIS treats ubvec as a target, not a bound:
/// multi-constraint runs overshoot it by a few percent, often with one part over on one
/// constraint and another part over on a different one. A move is taken only when it lowers the
/// total excess sum_{part, constraint} max(0, load - cap) / cap, so moves that trade one
/// constraint against another (a hub out of the part with too many edges, leaves back into the
/// part with too many nodes) are found. Each round takes the most overloaded (part,
/// constraint), ranks that part's nodes by the excess they remove (then by cut gain), and moves
/// them to an adjacent or the least loaded part while that lowers the excess. Deterministic.
/// Returns the number of moves.
std::int64_t detail::rebalance(const std::int64_t* rows, const NodeId* cols, std::int64_t n,
                               const std::vector<idx_t>& vwgt, std::size_t ncon, double imbalance,
                               std::int32_t num_parts, std::vector<idx_t>& part) {
  const auto p = static_cast<std::size_t>(num_parts);
  std::vector<std::int64_t> load(p * ncon, 0), cap(ncon, 0);
  for (std::int64_t v = 0; v < n; ++v)
    for (std::size_t j = 0; j < ncon; ++j)
      load[static_cast<std::size_t>(part[static_cast<std::size_t>(v)]) * ncon + j] +=
          vwgt[static_cast<std::size_t>(v) * ncon + j];
  for (std::size_t j = 0; j < ncon; ++j) {
    std::int64_t total = 0;
    for (std::size_t k = 0; k < p; ++k) total += load[k * ncon + j];
    cap[j] = static_cast<std::int64_t>(
        std::floor((1.0 + imbalance) * static_cast<double>(total) / num_parts + 1e-9));
  }
  auto excess = [&](std::size_t /*part*/, std::size_t j, std::int64_t l) {
    return static_cast<double>(std::max<std::int64_t>(0, l - cap[j])) /
           static_cast<double>(std::max<std::int64_t>(cap[j], 1));
  };
  // Change of the total excess when v moves from part k to part t.
  auto delta = [&](std::int64_t v, std::size_t k, std::size_t t) {
    double d = 0;
    for (std::size_t j = 0; j < ncon; ++j) {
      const std::int64_t w = vwgt[static_cast<std::size_t>(v) * ncon + j];
      if (w == 0) continue;
      d += excess(k, j, load[k * ncon + j] - w) - excess(k, j, load[k * ncon + j]);
      d += excess(t, j, load[t * ncon + j] + w) - excess(t, j, load[t * ncon + j]);
    }
    return d;
  };
  struct Move {
    double delta;
    std::int64_t gain;
    std::int64_t v;
    std::size_t target;
  };
  std::int64_t moves = 0;
  std::vector<std::int64_t> conn(p, 0);
  std::vector<Move> candidates;
  for (int round = 0; round < 256; ++round) {
    std::size_t k = p, j = 0;
    double worst = 0;
    for (std::size_t kk = 0; kk < p; ++kk)
      for (std::size_t jj = 0; jj < ncon; ++jj)
        if (excess(kk, jj, load[kk * ncon + jj]) > worst) {
          worst = excess(kk, jj, load[kk * ncon + jj]);
          k = kk;
          j = jj;
        }
    if (k == p) break;  // every part within every cap
    std::size_t lightest = k == 0 && p > 1 ? 1 : 0;
    for (std::size_t t = 0; t < p; ++t)
      if (t != k && load[t * ncon + j] < load[lightest * ncon + j]) lightest = t;
    candidates.clear();
    for (std::int64_t v = 0; v < n; ++v) {
      if (static_cast<std::size_t>(part[static_cast<std::size_t>(v)]) != k ||
          vwgt[static_cast<std::size_t>(v) * ncon + j] == 0)
        continue;
      std::int64_t internal = 0;
      for (std::int64_t e = rows[v]; e < rows[v + 1]; ++e) {
        const auto t = static_cast<std::size_t>(part[static_cast<std::size_t>(cols[e])]);
        if (t == k)
          ++internal;
        else
          ++conn[t];
      }
      Move best{0, 0, v, p};
      auto consider = [&](std::size_t t) {
        const Move m{delta(v, k, t), conn[t] - internal, v, t};
        if (best.target == p || m.delta < best.delta ||
            (m.delta == best.delta && m.gain > best.gain))
          best = m;
      };
      for (std::int64_t e = rows[v]; e < rows[v + 1]; ++e) {
        const auto t = static_cast<std::size_t>(part[static_cast<std::size_t>(cols[e])]);
        if (t != k) consider(t);
      }
      if (lightest != k) consider(lightest);
      for (std::int64_t e = rows[v]; e < rows[v + 1]; ++e)
        conn[static_cast<std::size_t>(part[static_cast<std::size_t>(cols[e])])] = 0;
      if (best.target != p && best.delta < 0) candidates.push_back(best);
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const Move& a, const Move& b) {
      return a.delta < b.delta || (a.delta == b.delta && a.gain > b.gain);
    });
    std::int64_t moved = 0;
    for (const Move& m : candidates) {
      if (load[k * ncon + j] <= cap[j]) break;
      if (delta(m.v, k, m.target) >= 0) continue;  // loads moved on since it was ranked
      for (std::size_t i = 0; i < ncon; ++i) {
        load[k * ncon + i] -= vwgt[static_cast<std::size_t>(m.v) * ncon + i];
        load[m.target * ncon + i] += vwgt[static_cast<std::size_t>(m.v) * ncon + i];
      }
      part[static_cast<std::size_t>(m.v)] = static_cast<idx_t>(m.target);
      ++moved;
    }
    moves += moved;
    if (moved == 0) break;
  }
  return moves;
}

namespace {

/// The vertex weights of assign_parts: one column per chosen constraint with a non-zero total.
std::vector<std::vector<std::int32_t>> balance_columns(const Dataset& ds, const Balance& b) {
  const std::int64_t n = ds.num_nodes();
  const std::int64_t* rows = ds.graph.indptr.data();
  std::vector<std::vector<std::int32_t>> columns;
  if (b.nodes) columns.emplace_back(static_cast<std::size_t>(n), 1);
  if (b.train && ds.train_idx.numel() > 0) {
    std::vector<std::int32_t> w(static_cast<std::size_t>(n), 0);
    for (std::int64_t i = 0; i < ds.train_idx.numel(); ++i)
      w[static_cast<std::size_t>(ds.train_idx.data()[i])] = 1;
    columns.push_back(std::move(w));
  }
  if (b.edges && ds.graph.num_edges() > 0) {
    std::vector<std::int32_t> w(static_cast<std::size_t>(n));
    for (std::int64_t v = 0; v < n; ++v)
      w[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(rows[v + 1] - rows[v]);
    columns.push_back(std::move(w));
  }
  return columns;
}

}  // namespace

std::vector<idx_t> detail::interleave(std::vector<std::vector<std::int32_t>>& columns,
                                      std::int64_t n) {
  std::erase_if(columns, [](const std::vector<std::int32_t>& w) {
    return std::all_of(w.begin(), w.end(), [](std::int32_t x) { return x == 0; });
  });
  if (columns.empty()) columns.emplace_back(static_cast<std::size_t>(n), 1);
  std::vector<idx_t> vwgt(static_cast<std::size_t>(n) * columns.size());
  for (std::int64_t v = 0; v < n; ++v)
    for (std::size_t j = 0; j < columns.size(); ++j)
      vwgt[static_cast<std::size_t>(v) * columns.size() + j] =
          static_cast<idx_t>(columns[j][static_cast<std::size_t>(v)]);
  return vwgt;
}

Assignment detail::metis_call(std::int64_t n, const std::int64_t* indptr, const NodeId* adj,
                              idx_t* adjwgt, std::vector<idx_t>& vwgt, std::size_t ncon_columns,
                              const PartitionConfig& c, int ncuts, real_t* tpwgts) {
  idx_t ncon = static_cast<idx_t>(ncon_columns);
  std::vector<idx_t> xadj(static_cast<std::size_t>(n) + 1);
  for (std::int64_t v = 0; v <= n; ++v)
    xadj[static_cast<std::size_t>(v)] = static_cast<idx_t>(indptr[v]);
  static_assert(sizeof(idx_t) == sizeof(NodeId), "adjacency is passed to METIS without a copy");
  auto* adjncy = const_cast<idx_t*>(reinterpret_cast<const idx_t*>(adj));

  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_OBJTYPE] =
      c.objective == Objective::Volume ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
  // METIS takes a signed int seed; fold the 64-bit seed into its non-negative range.
  options[METIS_OPTION_SEED] = static_cast<idx_t>(rng::mix(c.seed) & 0x3fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_NCUTS] = ncuts;
  // METIS may round a part's load up by one unit of weight past ubvec * total / P; asking for
  // one unit less keeps the result within the requested imbalance (never below 1.001).
  std::vector<real_t> ubvec(static_cast<std::size_t>(ncon));
  for (std::size_t j = 0; j < ubvec.size(); ++j) {
    double total = 0;
    for (std::int64_t v = 0; v < n; ++v)
      total += static_cast<double>(vwgt[static_cast<std::size_t>(v) * ubvec.size() + j]);
    // The smallest target part's mean weight.
    double share = 1.0 / c.num_parts;
    if (tpwgts != nullptr)
      for (idx_t k = 0; k < c.num_parts; ++k)
        share = std::min(
            share, static_cast<double>(tpwgts[static_cast<std::size_t>(k) * ubvec.size() + j]));
    const double mean = total * share;
    ubvec[j] = static_cast<real_t>(std::max(1.001, 1.0 + c.imbalance - 1.0 / mean));
  }
  idx_t nvtxs = static_cast<idx_t>(n);
  idx_t nparts = c.num_parts;
  idx_t objval = 0;
  std::vector<idx_t> part(static_cast<std::size_t>(n));

  const auto start = std::chrono::steady_clock::now();
  const int status =
      c.method == Method::MetisRecursive
          ? METIS_PartGraphRecursive(&nvtxs, &ncon, xadj.data(), adjncy, vwgt.data(), nullptr,
                                     adjwgt, &nparts, tpwgts, ubvec.data(), options, &objval,
                                     part.data())
          : METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy, vwgt.data(), nullptr, adjwgt,
                                &nparts, tpwgts, ubvec.data(), options, &objval, part.data());
  Assignment a;
  a.metis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status != METIS_OK) {
    const char* what = status == METIS_ERROR_INPUT    ? "input error"
                       : status == METIS_ERROR_MEMORY ? "out of memory"
                                                      : "error";
    throw Error("partition: METIS failed (" + std::string(what) + ", status " +
                std::to_string(status) + ") on " + std::to_string(n) + " nodes, " +
                std::to_string(c.num_parts) + " parts, " + std::to_string(ncon) + " constraints");
  }
  a.metis_objective = objval;
  a.part.assign(part.begin(), part.end());
  return a;
}

namespace {

Assignment metis_parts(std::vector<std::vector<std::int32_t>> columns, const Graph& sym,
                       const PartitionConfig& c) {
  const std::int64_t n = sym.num_rows();
  std::vector<idx_t> vwgt = detail::interleave(columns, n);
  const std::size_t ncon = columns.size();
  columns = {};
  Assignment a =
      detail::metis_call(n, sym.indptr.data(), sym.indices.data(), nullptr, vwgt, ncon, c);
  std::vector<idx_t> part(a.part.begin(), a.part.end());
  a.rebalance_moves = detail::rebalance(sym.indptr.data(), sym.indices.data(), n, vwgt, ncon,
                                        c.imbalance, c.num_parts, part);
  a.part.assign(part.begin(), part.end());
  return a;
}

}  // namespace

std::string_view to_string(Method m) {
  switch (m) {
    case Method::Auto:
      return "auto";
    case Method::LpMultilevel:
      return "lp-multilevel";
    case Method::MetisKway:
      return "metis";
    case Method::MetisRecursive:
      return "metis-rb";
    case Method::Random:
      return "random";
  }
  return "?";
}

std::string_view to_string(Objective o) { return o == Objective::Cut ? "cut" : "vol"; }

std::string to_string(const Balance& b) {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ',';
    s += name;
  };
  add(b.nodes, "nodes");
  add(b.train, "train");
  add(b.edges, "edges");
  return s;
}

Method parse_method(std::string_view s) {
  for (Method m : {Method::Auto, Method::MetisKway, Method::MetisRecursive, Method::LpMultilevel,
                   Method::Random})
    if (s == to_string(m)) return m;
  HALO_FAIL("partition: unknown method '" + std::string(s) +
            "' (auto, metis, metis-rb, lp-multilevel, random)");
}

Objective parse_objective(std::string_view s) {
  for (Objective o : {Objective::Cut, Objective::Volume})
    if (s == to_string(o)) return o;
  HALO_FAIL("partition: unknown objective '" + std::string(s) + "' (cut, vol)");
}

Balance parse_balance(std::string_view s) {
  Balance b{false, false, false};
  std::size_t begin = 0;
  while (begin <= s.size()) {
    const std::size_t end = std::min(s.find(',', begin), s.size());
    const std::string_view item = s.substr(begin, end - begin);
    bool* flag = item == "nodes"   ? &b.nodes
                 : item == "train" ? &b.train
                 : item == "edges" ? &b.edges
                                   : nullptr;
    HALO_EXPECTS(flag != nullptr, "partition: unknown balance constraint '" + std::string(item) +
                                      "' (a comma-separated subset of nodes, train, edges)");
    HALO_EXPECTS(!*flag, "partition: balance constraint '" + std::string(item) + "' given twice");
    *flag = true;
    begin = end + 1;
  }
  return b;
}

Graph partitioning_graph(const kernels::Resources& res, const Graph& graph) {
  Graph structure{
      graph.indptr.clone(res), graph.indices.clone(res), {}, graph.num_cols, graph.symmetric};
  return datasets::remove_self_loops(res, datasets::symmetrize(res, structure));
}

std::int64_t metis_index_limit() { return std::numeric_limits<idx_t>::max(); }

void check_metis_size(std::int64_t adjacency_entries, std::int64_t directed_edges) {
  const std::int64_t limit = metis_index_limit();
  if (adjacency_entries > limit)
    throw Error(limit_message("symmetric adjacency entries", adjacency_entries));
  if (directed_edges > limit) throw Error(limit_message("edges", directed_edges));
}

Method resolve_method(Method m, std::int64_t adjacency_entries, std::int64_t largest_weight,
                      std::size_t memory_budget) {
  if (m != Method::Auto) return m;
  const std::int64_t limit = metis_index_limit();
  const bool fits_memory =
      memory_budget == 0 || static_cast<double>(adjacency_entries) * kMetisBytesPerEntry <=
                                static_cast<double>(memory_budget);
  return adjacency_entries <= limit && largest_weight <= limit && fits_memory
             ? Method::MetisKway
             : Method::LpMultilevel;
}

Assignment assign_parts(const kernels::Resources& res, const Dataset& ds, const Graph& symmetric,
                        const PartitionConfig& config) {
  (void)res;
  check_config(config);
  const std::int64_t n = ds.num_nodes();
  HALO_EXPECTS(symmetric.num_rows() == n && symmetric.num_cols == n,
               "partition: the symmetric graph does not match the dataset");
  return assign_parts(symmetric, balance_columns(ds, config.balance), config);
}

Assignment assign_parts(const Graph& symmetric, std::vector<std::vector<std::int32_t>> weights,
                        const PartitionConfig& config) {
  check_config(config);
  const std::int64_t n = symmetric.num_rows();
  for (const auto& w : weights)
    HALO_EXPECTS(static_cast<std::int64_t>(w.size()) == n &&
                     std::all_of(w.begin(), w.end(), [](std::int32_t x) { return x >= 0; }),
                 "partition: every balance weight column needs one weight >= 0 per node");
  if (config.method == Method::Random) return random_parts(n, config);
  if (config.num_parts == 1 || n == 0) {
    Assignment a;
    a.part.assign(static_cast<std::size_t>(n), 0);
    a.metis_objective = 0;
    return a;
  }
  std::int64_t largest = 0;
  for (const auto& w : weights) {
    std::int64_t total = 0;
    for (const std::int32_t x : w) total += x;
    largest = std::max(largest, total);
  }
  PartitionConfig c = config;
  c.method = resolve_method(config.method, symmetric.num_edges(), largest, config.memory_budget);
  if (c.method == Method::LpMultilevel)
    return lp_multilevel_parts(symmetric, std::move(weights), c);
  check_metis_size(symmetric.num_edges(), largest);
  return metis_parts(std::move(weights), symmetric, c);
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

PartitionResult partition_dataset(const kernels::Resources& res, const Dataset& ds,
                                  const PartitionConfig& config, const Progress& progress) {
  check_config(config);  // before the symmetrisation, which can take minutes
  const auto start = std::chrono::steady_clock::now();
  if (progress) progress("symmetrising the graph");
  Graph symmetric = partitioning_graph(res, ds.graph);
  const double symmetrize_s = seconds_since(start);
  PartitionResult r = partition_dataset(res, ds, std::move(symmetric), config, progress);
  r.timings.symmetrize_s = symmetrize_s;
  r.timings.total_s = seconds_since(start);
  return r;
}

PartitionResult partition_dataset(const kernels::Resources& res, const Dataset& ds, Graph s,
                                  const PartitionConfig& config, const Progress& progress) {
  check_config(config);
  auto say = [&](const std::string& phase) {
    if (progress) progress(phase);
  };
  const auto start = std::chrono::steady_clock::now();
  HALO_EXPECTS(s.num_rows() == ds.num_nodes() && s.num_cols == ds.num_nodes(),
               "partition: the symmetric graph does not match the dataset");
  PartitionResult r;
  r.config = config;
  r.symmetric = std::move(s);
  const Graph& symmetric = r.symmetric;
  r.config.method =
      resolve_method(config.method, symmetric.num_edges(),
                     config.balance.edges ? ds.graph.num_edges() : 0, config.memory_budget);
  say(std::string(r.config.method == Method::Random         ? "random assignment, "
                  : r.config.method == Method::MetisKway    ? "METIS k-way, "
                  : r.config.method == Method::LpMultilevel ? "LP multilevel, "
                                                            : "METIS recursive bisection, ") +
      std::to_string(config.num_parts) + " parts");
  auto t = std::chrono::steady_clock::now();
  r.assignment = assign_parts(res, ds, symmetric, r.config);
  r.timings.assign_s = seconds_since(t);
  r.timings.metis_s = r.assignment.metis_seconds;
  say("relabelling");
  t = std::chrono::steady_clock::now();
  r.relabelling = relabel(r.assignment.part, config.num_parts);
  r.timings.relabel_s = seconds_since(t);
  say("computing metrics");
  t = std::chrono::steady_clock::now();
  r.metrics = compute_metrics(ds, symmetric, r.assignment.part, config.num_parts);
  r.timings.metrics_s = seconds_since(t);
  r.timings.total_s = seconds_since(start);
  return r;
}

}  // namespace halo::partition
