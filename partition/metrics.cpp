#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include <halo/kernels/error.hpp>
#include <halo/partition/metrics.hpp>

namespace halo::partition {
namespace {

ConstraintLoad load_of(std::vector<std::int64_t> per_part) {
  ConstraintLoad c;
  std::int64_t total = 0, largest = 0;
  for (std::int64_t w : per_part) {
    total += w;
    largest = std::max(largest, w);
  }
  if (total > 0)
    c.balance = static_cast<double>(largest) * static_cast<double>(per_part.size()) /
                static_cast<double>(total);
  c.per_part = std::move(per_part);
  return c;
}

}  // namespace

PartitionMetrics compute_metrics(const datasets::Dataset& ds, const datasets::Graph& symmetric,
                                 std::span<const std::int32_t> part, std::int32_t num_parts) {
  const std::int64_t n = ds.num_nodes();
  HALO_EXPECTS(num_parts >= 1, "compute_metrics: needs at least one part");
  HALO_EXPECTS(static_cast<std::int64_t>(part.size()) == n && symmetric.num_rows() == n,
               "compute_metrics: the assignment and the graphs must have one entry per node");
  const auto p = static_cast<std::size_t>(num_parts);
  const std::int64_t* rows = ds.graph.indptr.data();
  const std::int64_t* srows = symmetric.indptr.data();
  const NodeId* scols = symmetric.indices.data();

  PartitionMetrics m;
  // Nodes grouped by part (counting sort), so each part's halo is counted with one marker array.
  std::vector<std::int64_t> start(p + 1, 0);
  for (std::int32_t k : part) {
    HALO_EXPECTS(k >= 0 && k < num_parts, "compute_metrics: part id out of range");
    ++start[static_cast<std::size_t>(k) + 1];
  }
  for (std::size_t k = 0; k < p; ++k) start[k + 1] += start[k];
  std::vector<NodeId> by_part(static_cast<std::size_t>(n));
  {
    std::vector<std::int64_t> next(start.begin(), start.end() - 1);
    for (std::int64_t v = 0; v < n; ++v)
      by_part[static_cast<std::size_t>(next[static_cast<std::size_t>(part[v])]++)] =
          static_cast<NodeId>(v);
  }
  std::vector<std::int32_t> seen_by(static_cast<std::size_t>(n), -1);
  std::vector<std::int64_t> nodes(p, 0), train(p, 0), edges(p, 0);
  m.halo.assign(p, 0);
  for (std::size_t k = 0; k < p; ++k) {
    nodes[k] = start[k + 1] - start[k];
    for (std::int64_t i = start[k]; i < start[k + 1]; ++i) {
      const NodeId v = by_part[static_cast<std::size_t>(i)];
      edges[k] += rows[v + 1] - rows[v];
      for (std::int64_t e = srows[v]; e < srows[v + 1]; ++e) {
        const auto c = static_cast<std::size_t>(scols[e]);
        if (static_cast<std::size_t>(part[c]) != k && seen_by[c] != static_cast<std::int32_t>(k)) {
          seen_by[c] = static_cast<std::int32_t>(k);
          ++m.halo[k];
        }
      }
    }
  }
  for (std::int64_t i = 0; i < ds.train_idx.numel(); ++i)
    ++train[static_cast<std::size_t>(part[static_cast<std::size_t>(ds.train_idx.data()[i])])];

  std::int64_t cut_entries = 0;
  for (std::int64_t v = 0; v < n; ++v)
    for (std::int64_t e = srows[v]; e < srows[v + 1]; ++e)
      if (part[static_cast<std::size_t>(scols[e])] != part[static_cast<std::size_t>(v)])
        ++cut_entries;
  m.edge_cut = cut_entries / 2;  // each undirected edge is stored in both rows

  for (std::int64_t h : m.halo) {
    m.comm_volume += h;
    m.max_halo = std::max(m.max_halo, h);
  }
  if (n > 0) m.replication_factor = static_cast<double>(n + m.comm_volume) / static_cast<double>(n);
  m.nodes = load_of(std::move(nodes));
  m.train = load_of(std::move(train));
  m.edges = load_of(std::move(edges));
  return m;
}

std::string format_metrics(const PartitionMetrics& m, std::int32_t max_part_lines) {
  std::string s;
  char line[256];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    s += line;
  };
  add("%-20s %" PRId64 "\n", "edge cut", m.edge_cut);
  add("%-20s %" PRId64 "\n", "comm volume", m.comm_volume);
  add("%-20s %" PRId64 "\n", "max halo", m.max_halo);
  add("%-20s %.4f\n", "replication factor", m.replication_factor);
  add("%-20s nodes %.4f  train %.4f  edges %.4f\n", "balance (max/mean)", m.nodes.balance,
      m.train.balance, m.edges.balance);
  add("%6s %12s %12s %14s %12s\n", "part", "nodes", "train", "edges", "halo");
  const auto p = static_cast<std::int32_t>(m.halo.size());
  for (std::int32_t k = 0; k < p; ++k) {
    if (k == max_part_lines && p > max_part_lines + 1) {
      add("%6s (%d more parts)\n", "...", p - max_part_lines);
      break;
    }
    const auto i = static_cast<std::size_t>(k);
    add("%6d %12" PRId64 " %12" PRId64 " %14" PRId64 " %12" PRId64 "\n", k, m.nodes.per_part[i],
        m.train.per_part[i], m.edges.per_part[i], m.halo[i]);
  }
  return s;
}

}  // namespace halo::partition
