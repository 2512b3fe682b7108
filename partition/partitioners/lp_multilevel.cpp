#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/partition/detail/metis.hpp>
#include <halo/partition/partitioners/lp_multilevel.hpp>

namespace halo::partition {
namespace {

using kernels::NodeId;
static_assert(sizeof(idx_t) == sizeof(std::int32_t), "vertex weights are 32-bit");

/// One coarse level: CSR with edge weights, vertex weights interleaved (n x ncon).
struct Level {
  std::vector<std::int64_t> indptr = {0};
  std::vector<NodeId> adj;
  std::vector<std::int64_t> ew;
  std::vector<idx_t> vw;
};

/// A level, or the input graph (ew nullptr: every entry weighs 1), as the passes read it.
struct View {
  std::int64_t n = 0;
  const std::int64_t* indptr = nullptr;
  const NodeId* adj = nullptr;
  const std::int64_t* ew = nullptr;
  const idx_t* vw = nullptr;
  std::size_t ncon = 1;
  std::int64_t w(std::int64_t e) const { return ew != nullptr ? ew[e] : 1; }
  std::int64_t vwgt(std::int64_t u, std::size_t j) const {
    return vw[static_cast<std::size_t>(u) * ncon + j];
  }
  std::int64_t entries() const { return indptr[n]; }
};

View view_of(const Level& l, std::size_t ncon) {
  return {static_cast<std::int64_t>(l.indptr.size()) - 1,
          l.indptr.data(),
          l.adj.data(),
          l.ew.data(),
          l.vw.data(),
          ncon};
}

std::vector<std::int64_t> totals(const View& g) {
  std::vector<std::int64_t> t(g.ncon, 0);
  for (std::int64_t u = 0; u < g.n; ++u)
    for (std::size_t j = 0; j < g.ncon; ++j) t[j] += g.vwgt(u, j);
  return t;
}

/// Size-constrained label propagation: cluster[u] is the representative node of u's cluster.
/// Ties are broken by a hash of (seed, node, cluster): deterministic, unbiased by ids.
std::vector<NodeId> cluster_level(const View& g, const std::vector<std::int64_t>& maxw, int rounds,
                                  std::uint64_t seed) {
  auto tie_key = [seed](NodeId u, NodeId c) {
    return kernels::rng::mix(seed ^
                             (static_cast<std::uint64_t>(u) << 32 | static_cast<std::uint32_t>(c)));
  };
  const std::int64_t n = g.n;
  const std::size_t ncon = g.ncon;
  std::vector<NodeId> cluster(static_cast<std::size_t>(n));
  std::iota(cluster.begin(), cluster.end(), NodeId{0});
  std::vector<std::int64_t> cw(static_cast<std::size_t>(n) * ncon);
  for (std::int64_t u = 0; u < n; ++u)
    for (std::size_t j = 0; j < ncon; ++j)
      cw[static_cast<std::size_t>(u) * ncon + j] = g.vwgt(u, j);
  auto fits = [&](NodeId c, std::int64_t u) {
    for (std::size_t j = 0; j < ncon; ++j) {
      const std::int64_t w = g.vwgt(u, j);
      if (w > 0 && cw[static_cast<std::size_t>(c) * ncon + j] + w > maxw[j]) return false;
    }
    return true;
  };
  auto move = [&](std::int64_t u, NodeId to) {
    const NodeId from = cluster[static_cast<std::size_t>(u)];
    for (std::size_t j = 0; j < ncon; ++j) {
      cw[static_cast<std::size_t>(from) * ncon + j] -= g.vwgt(u, j);
      cw[static_cast<std::size_t>(to) * ncon + j] += g.vwgt(u, j);
    }
    cluster[static_cast<std::size_t>(u)] = to;
  };
  // Low degrees first (KaMinPar's degree buckets, log2 of the degree; id order within one): a
  // leaf joins its neighbour's cluster before the hubs' clusters fill up.
  std::vector<NodeId> order(static_cast<std::size_t>(n));
  {
    constexpr int kBuckets = 64;
    std::vector<std::int64_t> start(kBuckets + 1, 0);
    auto bucket = [&](std::int64_t u) {
      return std::bit_width(static_cast<std::uint64_t>(g.indptr[u + 1] - g.indptr[u]));
    };
    for (std::int64_t u = 0; u < n; ++u) ++start[static_cast<std::size_t>(bucket(u)) + 1];
    std::partial_sum(start.begin(), start.end(), start.begin());
    for (std::int64_t u = 0; u < n; ++u)
      order[static_cast<std::size_t>(start[static_cast<std::size_t>(bucket(u))]++)] =
          static_cast<NodeId>(u);
  }
  std::vector<std::int64_t> rating(static_cast<std::size_t>(n), 0);
  std::vector<NodeId> touched;
  for (int round = 0; round < rounds; ++round) {
    std::int64_t moved = 0;
    for (const NodeId u : order) {
      const std::int64_t b = g.indptr[u], e = g.indptr[u + 1];
      if (b == e) continue;
      const NodeId own = cluster[static_cast<std::size_t>(u)];
      for (std::int64_t k = b; k < e; ++k) {
        const NodeId c = cluster[static_cast<std::size_t>(g.adj[k])];
        if (rating[static_cast<std::size_t>(c)] == 0) touched.push_back(c);
        rating[static_cast<std::size_t>(c)] += g.w(k);
      }
      // The heaviest connection wins; a tie keeps the node where it is, or else goes to the
      // cluster with the smaller hash of (node, cluster): a tie broken by id would pull every
      // node towards low ids, across communities.
      NodeId best = own;
      std::int64_t best_rating = rating[static_cast<std::size_t>(own)];
      std::uint64_t best_key = 0;
      for (const NodeId c : touched) {
        const std::int64_t r = rating[static_cast<std::size_t>(c)];
        if (c == own || r < best_rating) continue;
        const std::uint64_t key = tie_key(u, c);
        if (r == best_rating && (best == own || key >= best_key)) continue;
        if (!fits(c, u)) continue;
        best = c;
        best_rating = r;
        best_key = key;
      }
      for (const NodeId c : touched) rating[static_cast<std::size_t>(c)] = 0;
      touched.clear();
      if (best != own) {
        move(u, best);
        ++moved;
      }
    }
    if (moved == 0) break;
  }
  // Isolated nodes have no neighbour to join: grouped in id order, within the same bound.
  NodeId group = -1;
  for (std::int64_t u = 0; u < n; ++u) {
    if (g.indptr[u + 1] != g.indptr[u]) continue;
    if (group >= 0 && fits(group, u))
      move(u, group);
    else
      group = static_cast<NodeId>(u);
  }
  return cluster;
}

/// The graph of the clusters: coarse_of[u] is u's coarse node (numbered in order of first
/// appearance), weights summed, parallel edges merged, edges inside a cluster dropped.
Level contract(const View& g, const std::vector<NodeId>& cluster, std::vector<NodeId>& coarse_of) {
  const std::int64_t n = g.n;
  const std::size_t ncon = g.ncon;
  std::vector<NodeId> id(static_cast<std::size_t>(n), -1);
  coarse_of.assign(static_cast<std::size_t>(n), 0);
  NodeId nc = 0;
  for (std::int64_t u = 0; u < n; ++u) {
    NodeId& c = id[static_cast<std::size_t>(cluster[static_cast<std::size_t>(u)])];
    if (c < 0) c = nc++;
    coarse_of[static_cast<std::size_t>(u)] = c;
  }
  id = {};
  std::vector<std::int64_t> start(static_cast<std::size_t>(nc) + 1, 0);
  for (std::int64_t u = 0; u < n; ++u) ++start[static_cast<std::size_t>(coarse_of[u]) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<NodeId> members(static_cast<std::size_t>(n));
  {
    std::vector<std::int64_t> at(start.begin(), start.end() - 1);
    for (std::int64_t u = 0; u < n; ++u)
      members[static_cast<std::size_t>(at[static_cast<std::size_t>(coarse_of[u])]++)] =
          static_cast<NodeId>(u);
  }
  Level l;
  // At most the finer level's entries: reserved once (pages beyond what is written are never
  // touched, hence never resident), so growing never copies a coarse graph of billions.
  l.adj.reserve(static_cast<std::size_t>(g.entries()));
  l.ew.reserve(static_cast<std::size_t>(g.entries()));
  l.indptr.assign(static_cast<std::size_t>(nc) + 1, 0);
  l.vw.assign(static_cast<std::size_t>(nc) * ncon, 0);
  std::vector<std::int64_t> pos(static_cast<std::size_t>(nc), -1);
  for (NodeId c = 0; c < nc; ++c) {
    const auto row = static_cast<std::int64_t>(l.adj.size());
    for (std::int64_t m = start[static_cast<std::size_t>(c)];
         m < start[static_cast<std::size_t>(c) + 1]; ++m) {
      const NodeId u = members[static_cast<std::size_t>(m)];
      for (std::size_t j = 0; j < ncon; ++j)
        l.vw[static_cast<std::size_t>(c) * ncon + j] += static_cast<idx_t>(g.vwgt(u, j));
      for (std::int64_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) {
        const NodeId d = coarse_of[static_cast<std::size_t>(g.adj[k])];
        if (d == c) continue;
        std::int64_t& p = pos[static_cast<std::size_t>(d)];
        if (p < 0) {
          p = static_cast<std::int64_t>(l.adj.size());
          l.adj.push_back(d);
          l.ew.push_back(g.w(k));
        } else {
          l.ew[static_cast<std::size_t>(p)] += g.w(k);
        }
      }
    }
    for (auto k = static_cast<std::size_t>(row); k < l.adj.size(); ++k)
      pos[static_cast<std::size_t>(l.adj[k])] = -1;
    l.indptr[static_cast<std::size_t>(c) + 1] = static_cast<std::int64_t>(l.adj.size());
  }
  return l;
}

/// Balanced label propagation: a node moves to the adjacent part it has strictly more edge
/// weight to than its own, when that part stays within `cap` on every constraint.
void refine(const View& g, std::vector<std::int32_t>& part, std::int32_t num_parts,
            const std::vector<std::int64_t>& cap, int rounds) {
  const std::size_t ncon = g.ncon;
  const auto p = static_cast<std::size_t>(num_parts);
  std::vector<std::int64_t> load(p * ncon, 0);
  for (std::int64_t u = 0; u < g.n; ++u)
    for (std::size_t j = 0; j < ncon; ++j)
      load[static_cast<std::size_t>(part[static_cast<std::size_t>(u)]) * ncon + j] += g.vwgt(u, j);
  std::vector<std::int64_t> conn(p, 0);
  std::vector<std::int32_t> touched;
  for (int round = 0; round < rounds; ++round) {
    std::int64_t moved = 0;
    for (std::int64_t u = 0; u < g.n; ++u) {
      const std::int64_t b = g.indptr[u], e = g.indptr[u + 1];
      if (b == e) continue;
      const std::int32_t own = part[static_cast<std::size_t>(u)];
      for (std::int64_t k = b; k < e; ++k) {
        const std::int32_t q = part[static_cast<std::size_t>(g.adj[k])];
        if (conn[static_cast<std::size_t>(q)] == 0) touched.push_back(q);
        conn[static_cast<std::size_t>(q)] += g.w(k);
      }
      std::int32_t best = own;
      std::int64_t best_conn = conn[static_cast<std::size_t>(own)];
      for (const std::int32_t q : touched) {
        const std::int64_t c = conn[static_cast<std::size_t>(q)];
        if (q == own || !(c > best_conn || (c == best_conn && best != own && q < best))) continue;
        bool fits = true;
        for (std::size_t j = 0; j < ncon && fits; ++j) {
          const std::int64_t w = g.vwgt(u, j);
          fits = w == 0 || load[static_cast<std::size_t>(q) * ncon + j] + w <= cap[j];
        }
        if (fits) {
          best = q;
          best_conn = c;
        }
      }
      for (const std::int32_t q : touched) conn[static_cast<std::size_t>(q)] = 0;
      touched.clear();
      if (best == own) continue;
      for (std::size_t j = 0; j < ncon; ++j) {
        load[static_cast<std::size_t>(own) * ncon + j] -= g.vwgt(u, j);
        load[static_cast<std::size_t>(best) * ncon + j] += g.vwgt(u, j);
      }
      part[static_cast<std::size_t>(u)] = best;
      ++moved;
    }
    if (moved == 0) break;
  }
}

/// METIS k-way on a coarse level: edge weights clamped and vertex weights scaled down to METIS's
/// 32-bit sums where needed.
Assignment initial_parts(const View& g, const PartitionConfig& config) {
  const std::int64_t limit = std::numeric_limits<idx_t>::max() / 2;
  std::vector<idx_t> adjwgt(static_cast<std::size_t>(g.entries()));
  for (std::int64_t k = 0; k < g.entries(); ++k)
    adjwgt[static_cast<std::size_t>(k)] = static_cast<idx_t>(std::min(g.w(k), limit));
  std::vector<idx_t> vwgt(g.vw, g.vw + static_cast<std::size_t>(g.n) * g.ncon);
  const std::vector<std::int64_t> total = totals(g);
  for (std::size_t j = 0; j < g.ncon; ++j) {
    if (total[j] <= limit) continue;
    const std::int64_t f = total[j] / limit + 1;
    for (std::int64_t u = 0; u < g.n; ++u) {
      idx_t& w = vwgt[static_cast<std::size_t>(u) * g.ncon + j];
      if (w > 0) w = static_cast<idx_t>((w + f - 1) / f);
    }
  }
  // The coarsest graph is small: k-way and recursive bisection (the better initial partitioner
  // on small graphs, as KaMinPar's), each the best of a few tries; the smaller cut wins.
  PartitionConfig c = config;
  c.objective = Objective::Cut;
  idx_t* weights = g.entries() > 0 ? adjwgt.data() : nullptr;
  c.method = Method::MetisKway;
  std::vector<idx_t> vwgt_rb = vwgt;
  Assignment best = detail::metis_call(g.n, g.indptr, g.adj, weights, vwgt, g.ncon, c, 4);
  c.method = Method::MetisRecursive;
  Assignment rb = detail::metis_call(g.n, g.indptr, g.adj, weights, vwgt_rb, g.ncon, c, 4);
  rb.metis_seconds += best.metis_seconds;
  if (rb.metis_objective < best.metis_objective) return rb;
  best.metis_seconds = rb.metis_seconds;
  return best;
}

}  // namespace

Assignment lp_multilevel_parts(const datasets::Graph& symmetric,
                               std::vector<std::vector<std::int32_t>> weights,
                               const PartitionConfig& config, const LpMultilevelConfig& lp,
                               LpMultilevelStats* stats) {
  HALO_EXPECTS(lp.contraction_limit >= 1 && lp.clustering_rounds >= 0 && lp.refinement_rounds >= 0,
               "lp_multilevel_parts: invalid configuration");
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const std::int64_t n = symmetric.num_rows();
  const std::int32_t p = config.num_parts;
  std::vector<idx_t> vwgt = detail::interleave(weights, n);
  const std::size_t ncon = weights.size();
  weights = {};
  const View input{n,   symmetric.indptr.data(), symmetric.indices.data(), nullptr, vwgt.data(),
                   ncon};
  LpMultilevelStats s;

  // 1. Coarsening.
  auto t = Clock::now();
  std::vector<Level> levels;
  std::vector<std::vector<NodeId>> coarse_of;
  const std::int64_t target = lp.contraction_limit * p;
  View g = input;
  while (g.n > target) {
    const std::vector<std::int64_t> total = totals(g);
    const std::int64_t kp = std::clamp<std::int64_t>(g.n / lp.contraction_limit, 1, p);
    std::vector<std::int64_t> maxw(ncon);
    for (std::size_t j = 0; j < ncon; ++j)
      maxw[j] = std::clamp<std::int64_t>(
          static_cast<std::int64_t>(config.imbalance * static_cast<double>(total[j]) /
                                    static_cast<double>(kp)),
          1, std::numeric_limits<idx_t>::max());
    const std::vector<NodeId> cluster = cluster_level(
        g, maxw, lp.clustering_rounds, kernels::rng::mix(config.seed + levels.size()));
    std::vector<NodeId> map;
    Level next = contract(g, cluster, map);
    const auto nc = static_cast<std::int64_t>(next.indptr.size()) - 1;
    HALO_LOG_DEBUG("lp-multilevel: level " << levels.size() + 1 << ": " << g.n << " -> " << nc
                                           << " nodes, " << next.adj.size() << " entries");
    if (nc > g.n - g.n / 20) break;  // stopped shrinking (< 5 %)
    levels.push_back(std::move(next));
    coarse_of.push_back(std::move(map));
    g = view_of(levels.back(), ncon);
  }
  s.coarsen_s = since(t);
  s.levels = static_cast<int>(levels.size());
  s.coarsest_nodes = g.n;
  s.coarsest_entries = g.entries();

  // 2. METIS on the coarsest graph.
  t = Clock::now();
  Assignment a = initial_parts(g, config);
  s.initial_s = since(t);

  // 3. Projection and refinement, level by level down to the input.
  t = Clock::now();
  const std::vector<std::int64_t> total = totals(input);
  std::vector<std::int64_t> cap(ncon);
  for (std::size_t j = 0; j < ncon; ++j)
    cap[j] = static_cast<std::int64_t>(
        std::floor((1.0 + config.imbalance) * static_cast<double>(total[j]) / p + 1e-9));
  std::vector<std::int32_t> part = std::move(a.part);
  refine(g, part, p, cap, lp.refinement_rounds);
  for (std::size_t l = levels.size(); l-- > 0;) {
    const View finer = l == 0 ? input : view_of(levels[l - 1], ncon);
    std::vector<std::int32_t> projected(static_cast<std::size_t>(finer.n));
    for (std::int64_t u = 0; u < finer.n; ++u)
      projected[static_cast<std::size_t>(u)] =
          part[static_cast<std::size_t>(coarse_of[l][static_cast<std::size_t>(u)])];
    part = std::move(projected);
    levels.pop_back();
    coarse_of.pop_back();
    refine(finer, part, p, cap, lp.refinement_rounds);
  }
  // 4. The bound made a bound, as after METIS.
  std::vector<idx_t> parts(part.begin(), part.end());
  a.rebalance_moves = detail::rebalance(symmetric.indptr.data(), symmetric.indices.data(), n, vwgt,
                                        ncon, config.imbalance, p, parts);
  a.part.assign(parts.begin(), parts.end());
  s.refine_s = since(t);
  if (stats != nullptr) *stats = s;
  return a;
}

}  // namespace halo::partition
