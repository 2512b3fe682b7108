// Part groups: R ranks training a K-part partition, each on a contiguous group of parts merged
// into one part at start-up.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <halo/kernels/error.hpp>
#include <halo/partition/formats/part_group.hpp>

namespace halo::partition {

namespace fs = std::filesystem;

namespace {

template <class T>
kernels::Tensor<T> host_tensor(const kernels::Resources& res, const std::vector<T>& v) {
  return kernels::Tensor<T>::from_host(res, v, static_cast<std::int64_t>(v.size()), 1);
}

using Csr = kernels::CsrMatrix<std::int32_t, float>;

/// The merged part's feature rows, filled part by part: dense rows are copied in the first
/// pass; sparse rows' lengths are counted in the first pass and their entries copied in the
/// second; a store's mapping (rows by original id) is taken as it is.
class FeatureMerge {
 public:
  FeatureMerge(const kernels::Resources& res, std::int64_t rows) : m_res(res), m_rows(rows) {}
  /// First pass: part `p`'s owned row i goes to row dest(i).
  template <class Dest>
  void first(Part& p, const Dest& dest) {
    if (p.features_by_original) {
      if (!m_mapped) m_out = std::move(p.features), m_mapped = true;
      return;
    }
    if (const auto* x = std::get_if<kernels::Tensor<float>>(&p.features)) {
      if (!m_dense) m_dense.emplace(m_res, m_rows, x->cols());
      const std::int64_t cols = x->cols();
      for (std::int64_t i = 0; i < p.num_owned(); ++i)
        std::memcpy(m_dense->data() + dest(i) * cols, x->data() + i * cols,
                    static_cast<std::size_t>(cols) * sizeof(float));
      return;
    }
    const Csr& x = std::get<Csr>(p.features);
    if (m_indptr.empty()) {
      m_indptr.assign(static_cast<std::size_t>(m_rows) + 1, 0);
      m_cols = x.num_cols;
      m_values = !x.values.empty();
    }
    for (std::int64_t i = 0; i < p.num_owned(); ++i)
      m_indptr[static_cast<std::size_t>(dest(i)) + 1] = x.indptr.data()[i + 1] - x.indptr.data()[i];
  }
  /// Second pass: the sparse rows' entries.
  template <class Dest>
  void second(const Part& p, const Dest& dest) {
    if (m_indptr.empty() || m_mapped) return;
    if (m_sparse.indices.empty() && m_sparse.indptr.empty()) {
      std::partial_sum(m_indptr.begin(), m_indptr.end(), m_indptr.begin());
      m_sparse.num_cols = m_cols;
      m_sparse.indices = kernels::Tensor<std::int32_t>(m_res, m_indptr.back());
      if (m_values) m_sparse.values = kernels::Tensor<float>(m_res, m_indptr.back());
      m_sparse.indptr = host_tensor(m_res, m_indptr);
    }
    const Csr& x = std::get<Csr>(p.features);
    for (std::int64_t i = 0; i < p.num_owned(); ++i) {
      const std::int64_t from = x.indptr.data()[i], n = x.indptr.data()[i + 1] - from;
      const std::int64_t to = m_indptr[static_cast<std::size_t>(dest(i))];
      std::memcpy(m_sparse.indices.data() + to, x.indices.data() + from,
                  static_cast<std::size_t>(n) * sizeof(std::int32_t));
      if (m_values)
        std::memcpy(m_sparse.values.data() + to, x.values.data() + from,
                    static_cast<std::size_t>(n) * sizeof(float));
    }
  }
  bool mapped() const { return m_mapped; }
  kernels::FeatureMatrix<float> take() {
    if (m_mapped) return std::move(m_out);
    if (m_dense) return std::move(*m_dense);
    return std::move(m_sparse);
  }

 private:
  const kernels::Resources& m_res;
  std::int64_t m_rows;
  bool m_mapped = false;
  kernels::FeatureMatrix<float> m_out;
  std::optional<kernels::Tensor<float>> m_dense;
  std::vector<std::int64_t> m_indptr;  // sparse: row lengths, then offsets
  std::int64_t m_cols = 0;
  bool m_values = false;
  Csr m_sparse;
};

}  // namespace

std::vector<std::int32_t> part_groups(const PartitionMeta& meta, std::int32_t ranks) {
  const auto k = static_cast<std::int32_t>(meta.parts.size());
  if (ranks < 1 || ranks > k)
    throw IoError("meta.json: the partition has " + std::to_string(k) + " parts but " +
                  std::to_string(ranks) + " ranks run; start 1 to " + std::to_string(k) +
                  " ranks (each takes a group of parts)");
  std::vector<std::int32_t> groups(static_cast<std::size_t>(ranks) + 1);
  if (ranks == k) {
    std::iota(groups.begin(), groups.end(), 0);
    return groups;
  }
  // Prefix sums of the constraints the partition balanced; a range's cost is its largest share.
  std::vector<std::array<double, 3>> prefix(static_cast<std::size_t>(k) + 1, {0, 0, 0});
  for (std::int32_t i = 0; i < k; ++i) {
    const PartInfo& p = meta.parts[static_cast<std::size_t>(i)];
    const std::array<double, 3> w = {static_cast<double>(p.num_owned),
                                     static_cast<double>(p.num_train),
                                     static_cast<double>(p.num_edges)};
    for (std::size_t c = 0; c < 3; ++c)
      prefix[static_cast<std::size_t>(i) + 1][c] = prefix[static_cast<std::size_t>(i)][c] + w[c];
  }
  const Balance& b = meta.config.balance;
  const std::array<bool, 3> used = {b.nodes || !(b.train || b.edges), b.train, b.edges};
  const auto cost = [&](std::int32_t from, std::int32_t to) {
    double worst = 0;
    for (std::size_t c = 0; c < 3; ++c) {
      const double total = prefix.back()[c];
      if (used[c] && total > 0)
        worst = std::max(worst, (prefix[static_cast<std::size_t>(to)][c] -
                                 prefix[static_cast<std::size_t>(from)][c]) /
                                    total);
    }
    return worst;
  };
  // best[g][i]: the smallest largest cost of parts 0 .. i - 1 in g non-empty groups; the last
  // group's start at cut[g][i]. best[g - 1][j] grows with j, cost(j, i) shrinks: the optimum is
  // where they cross (a binary search), O(R K log K).
  const auto kk = static_cast<std::size_t>(k) + 1;
  std::vector<std::vector<double>> best(static_cast<std::size_t>(ranks) + 1,
                                        std::vector<double>(kk, 1e300));
  std::vector<std::vector<std::int32_t>> cut(static_cast<std::size_t>(ranks) + 1,
                                             std::vector<std::int32_t>(kk, 0));
  for (std::int32_t i = 1; i <= k; ++i) best[1][static_cast<std::size_t>(i)] = cost(0, i);
  for (std::int32_t g = 2; g <= ranks; ++g) {
    const auto& prev = best[static_cast<std::size_t>(g) - 1];
    for (std::int32_t i = g; i <= k - (ranks - g); ++i) {
      // The first j in [g - 1, i - 1] where prev[j] >= cost(j, i); the optimum is j or j - 1.
      std::int32_t lo = g - 1, hi = i - 1;
      while (lo < hi) {
        const std::int32_t mid = lo + (hi - lo) / 2;
        if (prev[static_cast<std::size_t>(mid)] >= cost(mid, i))
          hi = mid;
        else
          lo = mid + 1;
      }
      double value = 1e300;
      std::int32_t arg = lo;
      for (std::int32_t j = std::max(g - 1, lo - 1); j <= lo; ++j) {
        const double v = std::max(prev[static_cast<std::size_t>(j)], cost(j, i));
        if (v < value) value = v, arg = j;
      }
      best[static_cast<std::size_t>(g)][static_cast<std::size_t>(i)] = value;
      cut[static_cast<std::size_t>(g)][static_cast<std::size_t>(i)] = arg;
    }
  }
  groups[static_cast<std::size_t>(ranks)] = k;
  for (std::int32_t g = ranks; g >= 2; --g)
    groups[static_cast<std::size_t>(g) - 1] =
        cut[static_cast<std::size_t>(g)]
           [static_cast<std::size_t>(groups[static_cast<std::size_t>(g)])];
  groups[0] = 0;
  return groups;
}

Part merge_parts(const kernels::Resources& res, const PartReader& read, std::int32_t first,
                 std::int32_t last, const PartitionBook& group_book, std::int32_t rank) {
  HALO_EXPECTS(first < last, "merge_parts: no parts");
  // One group: the whole graph, local ids the original ids (make_local_part's part). Else the
  // group's owned rows in partition order, then its halo.
  const bool whole = group_book.num_parts() == 1;
  const NodeId begin = static_cast<NodeId>(group_book.begin(rank));
  const NodeId end = static_cast<NodeId>(group_book.end(rank));
  const std::int64_t owned = end - begin;
  const auto in_group = [&](NodeId v) { return v >= begin && v < end; };
  const std::int32_t groups = group_book.num_parts();
  Part out;
  // First pass: the owned rows' lengths, ids, degrees, labels and splits, the halo (partition
  // id, original id, degree), the rows sent to each other group, dense features.
  struct Remote {
    NodeId id, original;
    std::int64_t degree;
    bool operator<(const Remote& o) const { return id < o.id; }
  };
  std::vector<Remote> remote;
  std::vector<NodeId> original(static_cast<std::size_t>(owned));
  std::vector<std::int64_t> degrees(static_cast<std::size_t>(owned));
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(owned) + 1, 0);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(owned));
  std::array<std::vector<NodeId>, 3> splits;
  std::vector<std::vector<NodeId>> send(static_cast<std::size_t>(groups));
  FeatureMerge features(res, owned);
  std::int64_t at = 0;  // the part's first owned row in partition order, from the group's start
  for (std::int32_t j = first; j < last; ++j) {
    Part p = read(j);
    HALO_EXPECTS(p.ids.first_owned() == begin + at, "merge_parts: the parts are not consecutive");
    const auto row = [&](std::int64_t i) -> std::int64_t {
      return whole ? p.ids.to_original(i) : at + i;
    };
    if (j == first) {
      out.num_classes = p.num_classes;
      out.training_edges = p.training_edges;
      out.max_degree = p.max_degree;
      out.all_train = std::move(p.all_train);
      out.all_train_original = std::move(p.all_train_original);
    }
    for (std::int64_t i = 0; i < p.num_owned(); ++i) {
      const auto r = static_cast<std::size_t>(row(i));
      original[r] = p.ids.to_original(i);
      degrees[r] = p.degrees.data()[i];
      indptr[r + 1] = p.graph.indptr.data()[i + 1] - p.graph.indptr.data()[i];
      labels[r] = p.labels.data()[i];
    }
    for (std::int64_t h = p.num_owned(); h < p.ids.num_local(); ++h) {
      const NodeId v = p.ids.to_partition(h);
      if (!in_group(v)) remote.push_back({v, p.ids.to_original(h), p.degrees.data()[h]});
    }
    std::size_t s = 0;
    for (const kernels::Tensor<NodeId>* idx : {&p.train_idx, &p.val_idx, &p.test_idx}) {
      for (std::int64_t i = 0; i < idx->numel(); ++i)
        splits[s].push_back(static_cast<NodeId>(row(idx->data()[i])));
      ++s;
    }
    // What the part sends to the parts of another group, once per row.
    for (std::int32_t g = 0; g < groups; ++g) {
      if (g == rank) continue;
      std::vector<NodeId> rows;
      for (std::int32_t k = 0; k < p.book().num_parts(); ++k) {
        if (p.book().begin(k) < group_book.begin(g) || p.book().end(k) > group_book.end(g))
          continue;  // (an empty part between two groups sends nothing)
        for (std::int64_t e = p.send_offsets[static_cast<std::size_t>(k)];
             e < p.send_offsets[static_cast<std::size_t>(k) + 1]; ++e)
          rows.push_back(static_cast<NodeId>(at + p.send_rows.data()[e]));
      }
      std::sort(rows.begin(), rows.end());
      rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
      auto& to = send[static_cast<std::size_t>(g)];
      to.insert(to.end(), rows.begin(), rows.end());
    }
    features.first(p, row);
    at += p.num_owned();
  }
  HALO_EXPECTS(at == owned, "merge_parts: the parts do not cover the group");
  std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
  for (auto& v : splits) std::sort(v.begin(), v.end());
  // The group's halo: the parts' halo nodes it does not own, ascending partition id.
  std::sort(remote.begin(), remote.end());
  remote.erase(std::unique(remote.begin(), remote.end(),
                           [](const Remote& a, const Remote& b) { return a.id == b.id; }),
               remote.end());
  std::vector<NodeId> halo;
  for (const Remote& r : remote) {
    halo.push_back(r.id);
    original.push_back(r.original);
    degrees.push_back(r.degree);
  }
  remote = {};
  // Second pass: the rows' entries renumbered, sparse features. A row lists its neighbours in
  // ascending original id, and so it does renumbered.
  kernels::Tensor<NodeId> indices(res, indptr.back());
  at = 0;
  for (std::int32_t j = first; j < last; ++j) {
    const Part p = read(j);
    const auto row = [&](std::int64_t i) -> std::int64_t {
      return whole ? p.ids.to_original(i) : at + i;
    };
    std::vector<NodeId> local(static_cast<std::size_t>(p.ids.num_local()));
    for (std::int64_t i = 0; i < p.ids.num_local(); ++i) {
      const NodeId v = p.ids.to_partition(i);
      local[static_cast<std::size_t>(i)] = static_cast<NodeId>(
          whole         ? p.ids.to_original(i)
          : in_group(v) ? v - begin
                        : owned + (std::lower_bound(halo.begin(), halo.end(), v) - halo.begin()));
    }
    for (std::int64_t i = 0; i < p.num_owned(); ++i) {
      NodeId* to = indices.data() + indptr[static_cast<std::size_t>(row(i))];
      for (std::int64_t e = p.graph.indptr.data()[i]; e < p.graph.indptr.data()[i + 1]; ++e)
        *to++ = local[static_cast<std::size_t>(p.graph.indices.data()[e])];
    }
    features.second(p, row);
    at += p.num_owned();
  }
  std::vector<std::int64_t> send_offsets = {0};
  std::vector<NodeId> send_rows;
  for (const auto& rows : send) {
    send_rows.insert(send_rows.end(), rows.begin(), rows.end());
    send_offsets.push_back(static_cast<std::int64_t>(send_rows.size()));
  }
  std::vector<std::int64_t> recv_offsets(static_cast<std::size_t>(groups) + 1, 0);
  for (const NodeId v : halo) ++recv_offsets[static_cast<std::size_t>(group_book.owner(v)) + 1];
  std::partial_sum(recv_offsets.begin(), recv_offsets.end(), recv_offsets.begin());
  // A store's mapping: every part maps the same file, rows by original id (one group: the
  // local ids, so the part's own rows).
  out.features_by_original = features.mapped() && !whole;
  out.features = features.take();
  out.ids = IdMap(group_book, rank, host_tensor(res, original), host_tensor(res, halo));
  out.graph.indptr = host_tensor(res, indptr);
  out.graph.indices = std::move(indices);
  out.graph.num_cols = owned + static_cast<std::int64_t>(halo.size());
  out.degrees = host_tensor(res, degrees);
  out.send_offsets = std::move(send_offsets);
  out.send_rows = host_tensor(res, send_rows);
  out.recv_offsets = std::move(recv_offsets);
  out.labels = host_tensor(res, labels);
  out.train_idx = host_tensor(res, splits[0]);
  out.val_idx = host_tensor(res, splits[1]);
  out.test_idx = host_tensor(res, splits[2]);
  if (whole) {  // one process's training list: every training node, by its (original) id
    out.all_train = out.train_idx.clone(res);
    out.all_train_original = out.train_idx.clone(res);
  }
  return out;
}

namespace {

/// Array `name` of part `k`'s file, its checksum verified.
template <class T>
std::vector<T> read_array(const fs::path& dir, std::int32_t k, const PartInfo& info,
                          const char* name) {
  const fs::path file = dir / ("part-" + std::to_string(k) + ".bin");
  const ArrayEntry* a = info.find(name);
  if (a == nullptr)
    throw IoError((dir / "meta.json").string() + ": part " + std::to_string(k) + " has no array '" +
                  name + "'");
  std::vector<T> v(static_cast<std::size_t>(a->rows * a->cols));
  std::ifstream in(file, std::ios::binary);
  in.seekg(a->offset);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  if (!in) throw IoError(file.string() + ": cannot read array '" + name + "'");
  if (fnv1a64(v.data(), v.size() * sizeof(T)) != a->fnv1a64)
    throw IoError(file.string() + ": array '" + name + "' does not match its checksum");
  return v;
}

}  // namespace

std::vector<std::vector<GroupCounts>> group_counts(const fs::path& dir, const PartitionMeta& meta,
                                                   const std::vector<std::int32_t>& rank_counts) {
  const auto k = static_cast<std::int32_t>(meta.parts.size());
  std::vector<std::vector<GroupCounts>> all;
  // Per rank count, each part's lists are read again: memory stays one part's lists and two
  // bitmaps (the group's halo over the graph's nodes, a part's rows sent to one group).
  std::vector<std::uint64_t> in_halo, sent;
  const auto set = [](std::vector<std::uint64_t>& bits, std::int64_t i) {
    std::uint64_t& word = bits[static_cast<std::size_t>(i >> 6)];
    const std::uint64_t bit = std::uint64_t{1} << (i & 63);
    const bool fresh = (word & bit) == 0;
    word |= bit;
    return fresh;
  };
  for (const std::int32_t ranks : rank_counts) {
    const std::vector<std::int32_t> groups = part_groups(meta, ranks);
    std::vector<GroupCounts> out;
    for (std::int32_t r = 0; r < ranks; ++r) {
      const std::int32_t first = groups[static_cast<std::size_t>(r)];
      const std::int32_t last = groups[static_cast<std::size_t>(r) + 1];
      GroupCounts g;
      if (ranks == k) {  // one part per rank: meta.json's counts
        const PartInfo& p = meta.parts[static_cast<std::size_t>(r)];
        const ArrayEntry* send = p.find("send_rows");
        const ArrayEntry* nnz = p.find("features_indices");
        g = {.num_owned = p.num_owned,
             .num_halo = p.num_halo,
             .num_edges = p.num_edges,
             .num_halo_entries = p.num_halo_entries,
             .num_train = p.num_train,
             .num_send = send != nullptr ? send->rows * send->cols : 0,
             .feature_nnz = nnz != nullptr ? nnz->rows * nnz->cols : 0,
             .file_bytes = p.file_bytes};
        out.push_back(g);
        continue;
      }
      const NodeId begin = static_cast<NodeId>(meta.book.begin(first));
      const NodeId end = static_cast<NodeId>(meta.book.begin(last));
      in_halo.assign(static_cast<std::size_t>((meta.num_nodes + 63) / 64), 0);
      double cut = 0;
      bool cut_known = true;
      for (std::int32_t j = first; j < last; ++j) {
        const PartInfo& p = meta.parts[static_cast<std::size_t>(j)];
        g.num_owned += p.num_owned;
        g.num_edges += p.num_edges;
        g.num_train += p.num_train;
        g.file_bytes += p.file_bytes;
        if (const ArrayEntry* a = p.find("features_indices")) g.feature_nnz += a->rows * a->cols;
        const std::vector<NodeId> halo = read_array<NodeId>(dir, j, p, "halo_ids");
        std::int64_t remote = 0;
        for (const NodeId v : halo)
          if (v < begin || v >= end) {
            ++remote;
            g.num_halo += set(in_halo, v) ? 1 : 0;
          }
        if (p.num_halo_entries < 0) cut_known = false;
        if (!halo.empty() && p.num_halo_entries > 0)
          cut += static_cast<double>(p.num_halo_entries) * static_cast<double>(remote) /
                 static_cast<double>(halo.size());
        // Rows sent to each other group, each once per group.
        const std::vector<std::int64_t> offsets =
            read_array<std::int64_t>(dir, j, p, "send_offsets");
        const std::vector<NodeId> rows = read_array<NodeId>(dir, j, p, "send_rows");
        for (std::int32_t h = 0; h < ranks; ++h) {
          if (h == r) continue;
          sent.assign(static_cast<std::size_t>((p.num_owned + 63) / 64), 0);
          const auto from = static_cast<std::size_t>(groups[static_cast<std::size_t>(h)]);
          const auto to = static_cast<std::size_t>(groups[static_cast<std::size_t>(h) + 1]);
          for (std::int64_t e = offsets[from]; e < offsets[to]; ++e)
            g.num_send += set(sent, rows[static_cast<std::size_t>(e)]) ? 1 : 0;
        }
      }
      g.num_halo_entries = cut_known ? static_cast<std::int64_t>(std::llround(cut)) : -1;
      out.push_back(g);
    }
    all.push_back(std::move(out));
  }
  return all;
}

Part read_part_group(const kernels::Resources& res, const fs::path& dir, const PartitionMeta& meta,
                     std::int32_t ranks, std::int32_t rank, const PartReadOptions& options) {
  const std::vector<std::int32_t> groups = part_groups(meta, ranks);
  HALO_EXPECTS(rank >= 0 && rank < ranks, "read_part_group: rank out of range");
  const auto k = static_cast<std::int32_t>(meta.parts.size());
  if (ranks == k) return read_part(res, dir, rank, &meta, options);
  std::vector<std::int64_t> offsets;
  for (const std::int32_t g : groups)
    offsets.push_back(meta.book.offsets()[static_cast<std::size_t>(g)]);
  return merge_parts(
      res, [&](std::int32_t j) { return read_part(res, dir, j, &meta, options); },
      groups[static_cast<std::size_t>(rank)], groups[static_cast<std::size_t>(rank) + 1],
      PartitionBook(std::move(offsets)), rank);
}

}  // namespace halo::partition
