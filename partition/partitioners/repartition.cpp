#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

// scotch.h uses FILE and the fixed-width integer types without including their headers.
#include <scotch.h>

#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/partition/partitioners/repartition.hpp>

namespace halo::partition {
namespace {

static_assert(sizeof(SCOTCH_Num) == sizeof(NodeId), "adjacency is passed to Scotch without a copy");

std::vector<std::int32_t> metis_from_scratch(const kernels::Resources& res,
                                             const datasets::Dataset& ds,
                                             const datasets::Graph& symmetric,
                                             const RepartitionConfig& c) {
  const std::int64_t n = ds.num_nodes();
  // METIS cannot make more parts than nodes: then node v gets part v.
  if (n <= c.num_parts) {
    std::vector<std::int32_t> part(static_cast<std::size_t>(n));
    for (std::int64_t v = 0; v < n; ++v) part[static_cast<std::size_t>(v)] = static_cast<int>(v);
    return part;
  }
  PartitionConfig pc;
  pc.num_parts = c.num_parts;
  pc.method = Method::MetisKway;
  pc.objective = c.objective;
  pc.balance = {true, false, false};
  pc.imbalance = c.imbalance;
  pc.seed = c.seed;
  return assign_parts(res, ds, symmetric, pc).part;
}

/// Wraps a SCOTCH_Graph / SCOTCH_Strat so that every path frees it.
struct ScotchGraph {
  SCOTCH_Graph g;
  ScotchGraph() { HALO_EXPECTS(SCOTCH_graphInit(&g) == 0, "Scotch: graphInit failed"); }
  ~ScotchGraph() { SCOTCH_graphExit(&g); }
  ScotchGraph(const ScotchGraph&) = delete;
  ScotchGraph& operator=(const ScotchGraph&) = delete;
};
struct ScotchContext {
  SCOTCH_Context c;
  ScotchContext() { HALO_EXPECTS(SCOTCH_contextInit(&c) == 0, "Scotch: contextInit failed"); }
  ~ScotchContext() { SCOTCH_contextExit(&c); }
  ScotchContext(const ScotchContext&) = delete;
  ScotchContext& operator=(const ScotchContext&) = delete;
};
struct ScotchStrat {
  SCOTCH_Strat s;
  ScotchStrat() { HALO_EXPECTS(SCOTCH_stratInit(&s) == 0, "Scotch: stratInit failed"); }
  ~ScotchStrat() { SCOTCH_stratExit(&s); }
  ScotchStrat(const ScotchStrat&) = delete;
  ScotchStrat& operator=(const ScotchStrat&) = delete;
};

/// SCOTCH_graphRepart from `old` (one part per node; new nodes carry their streaming
/// placement with migration cost 0, so only old nodes' moves are charged).
std::vector<std::int32_t> scotch_repart(const datasets::Graph& symmetric,
                                        std::vector<std::int32_t> old, std::int64_t num_old,
                                        const RepartitionConfig& c) {
  const std::int64_t n = symmetric.num_rows();
  check_metis_size(symmetric.num_edges(), 0);  // the same 32-bit bound as METIS
  std::vector<SCOTCH_Num> verttab(static_cast<std::size_t>(n) + 1);
  for (std::int64_t v = 0; v <= n; ++v)
    verttab[static_cast<std::size_t>(v)] = static_cast<SCOTCH_Num>(symmetric.indptr.data()[v]);
  auto* edgetab =
      const_cast<SCOTCH_Num*>(reinterpret_cast<const SCOTCH_Num*>(symmetric.indices.data()));
  ScotchGraph graph;
  if (SCOTCH_graphBuild(&graph.g, 0, static_cast<SCOTCH_Num>(n), verttab.data(), nullptr, nullptr,
                        nullptr, static_cast<SCOTCH_Num>(symmetric.num_edges()), edgetab,
                        nullptr) != 0)
    throw Error("partition: SCOTCH_graphBuild failed on " + std::to_string(n) + " nodes");
  ScotchStrat strat;
  if (SCOTCH_stratGraphMapBuild(&strat.s, SCOTCH_STRATQUALITY | SCOTCH_STRATREMAP,
                                static_cast<SCOTCH_Num>(c.num_parts), c.imbalance) != 0)
    throw Error("partition: SCOTCH_stratGraphMapBuild failed");
  std::vector<SCOTCH_Num> migration_cost(static_cast<std::size_t>(n), 0);
  std::fill(migration_cost.begin(), migration_cost.begin() + num_old, SCOTCH_Num{1});
  std::vector<SCOTCH_Num> parotab(old.begin(), old.end());
  std::vector<SCOTCH_Num> parttab(static_cast<std::size_t>(n), 0);
  // Reproducible runs: a context with one thread, deterministic algorithms and its own
  // generator seeded from the config (Scotch's default context is multi-threaded and gave
  // different assignments from run to run).
  ScotchContext context;
  SCOTCH_contextRandomSeed(&context.c,
                           static_cast<SCOTCH_Num>(kernels::rng::mix(c.seed) & 0x3fffffff));
  if (SCOTCH_contextOptionSetNum(&context.c, SCOTCH_OPTIONNUMDETERMINISTIC, 1) != 0 ||
      SCOTCH_contextOptionSetNum(&context.c, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1) != 0 ||
      SCOTCH_contextThreadSpawn(&context.c, 1, nullptr) != 0)
    throw Error("partition: cannot set up a deterministic one-thread Scotch context");
  ScotchGraph bound;
  if (SCOTCH_contextBindGraph(&context.c, &graph.g, &bound.g) != 0)
    throw Error("partition: SCOTCH_contextBindGraph failed");
  if (SCOTCH_graphRepart(&bound.g, static_cast<SCOTCH_Num>(c.num_parts), parotab.data(),
                         c.migration_weight, migration_cost.data(), &strat.s, parttab.data()) != 0)
    throw Error("partition: SCOTCH_graphRepart failed on " + std::to_string(n) + " nodes, " +
                std::to_string(c.num_parts) + " parts");
  for (std::size_t v = 0; v < old.size(); ++v) {
    HALO_EXPECTS(parttab[v] >= 0 && parttab[v] < c.num_parts,
                 "partition: Scotch returned part " + std::to_string(parttab[v]));
    old[v] = static_cast<std::int32_t>(parttab[v]);
  }
  return old;
}

void check_config(const RepartitionConfig& c) {
  HALO_EXPECTS(
      c.num_parts >= 1 && c.num_parts <= 1024,
      "repartition: the number of parts must be in [1, 1024], got " + std::to_string(c.num_parts));
  HALO_EXPECTS(std::isfinite(c.imbalance) && c.imbalance > 0.0 && c.imbalance <= 1.0,
               "repartition: imbalance must be in (0, 1], got " + std::to_string(c.imbalance));
  HALO_EXPECTS(std::isfinite(c.migration_weight) && c.migration_weight >= 0.0,
               "repartition: the migration weight must be finite and >= 0, got " +
                   std::to_string(c.migration_weight));
  HALO_EXPECTS(c.repartition_every >= 0, "repartition: repartition_every must be >= 0");
}

}  // namespace

std::string_view to_string(RepartitionMethod m) {
  switch (m) {
    case RepartitionMethod::Scratch:
      return "scratch";
    case RepartitionMethod::Streaming:
      return "streaming";
    case RepartitionMethod::Migration:
      return "migration";
  }
  return "?";
}

RepartitionMethod parse_repartition_method(std::string_view s) {
  for (RepartitionMethod m :
       {RepartitionMethod::Scratch, RepartitionMethod::Streaming, RepartitionMethod::Migration})
    if (s == to_string(m)) return m;
  HALO_FAIL("repartition: unknown method '" + std::string(s) + "' (scratch, streaming, migration)");
}

MigrationPlan migration_plan(std::span<const std::int32_t> before,
                             std::span<const std::int32_t> after) {
  HALO_EXPECTS(after.size() >= before.size(), "migration_plan: nodes never leave (" +
                                                  std::to_string(before.size()) + " -> " +
                                                  std::to_string(after.size()) + ")");
  MigrationPlan p;
  p.num_nodes_before = static_cast<std::int64_t>(before.size());
  p.num_nodes_after = static_cast<std::int64_t>(after.size());
  for (std::size_t v = 0; v < before.size(); ++v)
    if (before[v] != after[v]) {
      p.moved.push_back(static_cast<NodeId>(v));
      p.from.push_back(before[v]);
      p.to.push_back(after[v]);
    }
  p.placed.assign(after.begin() + static_cast<std::ptrdiff_t>(before.size()), after.end());
  return p;
}

std::vector<std::int32_t> apply_migration(std::span<const std::int32_t> before,
                                          const MigrationPlan& plan) {
  HALO_EXPECTS(plan.num_nodes_before == static_cast<std::int64_t>(before.size()) &&
                   plan.num_nodes_after - plan.num_nodes_before ==
                       static_cast<std::int64_t>(plan.placed.size()) &&
                   plan.moved.size() == plan.from.size() && plan.moved.size() == plan.to.size(),
               "apply_migration: the plan starts from " + std::to_string(plan.num_nodes_before) +
                   " nodes, the assignment has " + std::to_string(before.size()));
  std::vector<std::int32_t> after(before.begin(), before.end());
  for (std::size_t i = 0; i < plan.moved.size(); ++i) {
    const auto v = static_cast<std::size_t>(plan.moved[i]);
    HALO_EXPECTS(v < after.size() && after[v] == plan.from[i],
                 "apply_migration: node " + std::to_string(v) + " is not in part " +
                     std::to_string(plan.from[i]));
    after[v] = plan.to[i];
  }
  after.insert(after.end(), plan.placed.begin(), plan.placed.end());
  return after;
}

std::vector<std::int32_t> max_weight_assignment(std::span<const std::int64_t> weight,
                                                std::int32_t n) {
  HALO_EXPECTS(n >= 0 && weight.size() == static_cast<std::size_t>(n) * static_cast<std::size_t>(n),
               "max_weight_assignment: the weights must be n x n");
  // The Hungarian method with potentials (Kuhn-Munkres, O(n^3)) on cost = max - weight, with
  // 1-based rows/columns and column 0 as the sentinel of each augmenting search.
  std::int64_t top = 0;
  for (std::int64_t w : weight) top = std::max(top, w);
  const auto m = static_cast<std::size_t>(n);
  auto cost = [&](std::size_t i, std::size_t j) { return top - weight[(i - 1) * m + (j - 1)]; };
  constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max() / 4;
  std::vector<std::int64_t> u(m + 1, 0), v(m + 1, 0), minv(m + 1);
  std::vector<std::size_t> row_of(m + 1, 0), way(m + 1, 0);
  std::vector<char> used(m + 1);
  for (std::size_t i = 1; i <= m; ++i) {
    row_of[0] = i;
    std::size_t j0 = 0;
    std::fill(minv.begin(), minv.end(), kInf);
    std::fill(used.begin(), used.end(), 0);
    do {
      used[j0] = 1;
      const std::size_t i0 = row_of[j0];
      std::int64_t delta = kInf;
      std::size_t j1 = 0;
      for (std::size_t j = 1; j <= m; ++j) {
        if (used[j]) continue;
        const std::int64_t cur = cost(i0, j) - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (std::size_t j = 0; j <= m; ++j) {
        if (used[j]) {
          u[row_of[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (row_of[j0] != 0);
    do {
      const std::size_t j1 = way[j0];
      row_of[j0] = row_of[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<std::int32_t> col(m, 0);
  for (std::size_t j = 1; j <= m; ++j) col[row_of[j] - 1] = static_cast<std::int32_t>(j - 1);
  return col;
}

std::vector<std::int32_t> relabel_by_overlap(std::span<const std::int32_t> previous,
                                             std::span<const std::int32_t> part,
                                             std::int32_t num_parts) {
  HALO_EXPECTS(previous.size() <= part.size(),
               "relabel_by_overlap: the previous assignment has more nodes");
  const auto p = static_cast<std::size_t>(num_parts);
  // overlap[new label * P + old label]: old nodes in both.
  std::vector<std::int64_t> overlap(p * p, 0);
  for (std::size_t v = 0; v < previous.size(); ++v) {
    HALO_EXPECTS(previous[v] >= 0 && previous[v] < num_parts && part[v] >= 0 && part[v] < num_parts,
                 "relabel_by_overlap: part id out of range");
    ++overlap[static_cast<std::size_t>(part[v]) * p + static_cast<std::size_t>(previous[v])];
  }
  const std::vector<std::int32_t> label = max_weight_assignment(overlap, num_parts);
  std::vector<std::int32_t> out(part.size());
  for (std::size_t v = 0; v < part.size(); ++v) out[v] = label[static_cast<std::size_t>(part[v])];
  return out;
}

void place_streaming(const datasets::Graph& symmetric, std::int64_t first_new,
                     std::int32_t num_parts, double imbalance, std::vector<std::int32_t>& part) {
  const std::int64_t n = symmetric.num_rows();
  HALO_EXPECTS(static_cast<std::int64_t>(part.size()) == n && first_new >= 0 && first_new <= n,
               "place_streaming: the assignment must have one entry per node");
  const auto p = static_cast<std::size_t>(num_parts);
  std::vector<std::int64_t> size(p, 0), links(p, 0);
  for (std::int64_t v = 0; v < first_new; ++v) ++size[static_cast<std::size_t>(part[v])];
  const double capacity = (1.0 + imbalance) * static_cast<double>(n) / num_parts;
  const std::int64_t* rows = symmetric.indptr.data();
  const NodeId* cols = symmetric.indices.data();
  for (std::int64_t v = first_new; v < n; ++v) {
    for (std::int64_t e = rows[v]; e < rows[v + 1]; ++e)
      if (cols[e] < v) ++links[static_cast<std::size_t>(part[static_cast<std::size_t>(cols[e])])];
    bool any_room = false;
    for (std::size_t k = 0; k < p; ++k)
      any_room = any_room || static_cast<double>(size[k]) < capacity;
    std::size_t best = p;
    double best_score = -1;
    for (std::size_t k = 0; k < p; ++k) {
      if (any_room && static_cast<double>(size[k]) >= capacity) continue;
      const double score = static_cast<double>(links[k]) *
                           std::max(0.0, 1.0 - static_cast<double>(size[k]) / capacity);
      if (best == p || score > best_score || (score == best_score && size[k] < size[best])) {
        best = k;
        best_score = score;
      }
    }
    part[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(best);
    ++size[best];
    for (std::int64_t e = rows[v]; e < rows[v + 1]; ++e)
      if (cols[e] < v) links[static_cast<std::size_t>(part[static_cast<std::size_t>(cols[e])])] = 0;
  }
}

SnapshotPartition repartition_snapshot(const kernels::Resources& res, const datasets::Dataset& ds,
                                       const datasets::Graph& symmetric,
                                       std::span<const std::int32_t> previous, std::int64_t index,
                                       const RepartitionConfig& c) {
  check_config(c);
  const std::int64_t n = ds.num_nodes();
  const auto n_old = static_cast<std::int64_t>(previous.size());
  HALO_EXPECTS(n_old <= n && symmetric.num_rows() == n,
               "repartition: the previous snapshot has " + std::to_string(n_old) +
                   " nodes, this one " + std::to_string(n) + " (nodes never leave)");
  const auto start = std::chrono::steady_clock::now();
  SnapshotPartition s;
  s.new_nodes = n - n_old;
  const bool scratch = previous.empty() || c.num_parts == 1 ||
                       c.method == RepartitionMethod::Scratch ||
                       (c.method == RepartitionMethod::Streaming && c.repartition_every > 0 &&
                        index % c.repartition_every == 0);
  if (scratch) {
    s.from_scratch = true;
    s.part = metis_from_scratch(res, ds, symmetric, c);
    if (!previous.empty()) s.part = relabel_by_overlap(previous, s.part, c.num_parts);
  } else {
    s.part.assign(static_cast<std::size_t>(n), 0);
    std::copy(previous.begin(), previous.end(), s.part.begin());
    place_streaming(symmetric, n_old, c.num_parts, c.imbalance, s.part);
    if (c.method == RepartitionMethod::Migration && n > c.num_parts)
      s.part = scotch_repart(symmetric, std::move(s.part), n_old, c);
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::int64_t v = 0; v < n_old; ++v)
    s.migrated += s.part[static_cast<std::size_t>(v)] != previous[static_cast<std::size_t>(v)];
  s.metrics = compute_metrics(ds, symmetric, s.part, c.num_parts);
  return s;
}

}  // namespace halo::partition
