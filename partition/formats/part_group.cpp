// Part groups: R ranks training a K-part partition, each on a contiguous group of parts merged
// into one part at start-up.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
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

std::int64_t row_length(const datasets::Graph& g, std::int64_t row) {
  return g.indptr.data()[row + 1] - g.indptr.data()[row];
}

/// Concatenates (R > 1) or scatters by original id (R == 1, `by_original`) the parts' owned
/// feature rows: dense or sparse like theirs.
kernels::FeatureMatrix<float> merge_features(const kernels::Resources& res,
                                             std::vector<Part>& parts, std::int64_t rows,
                                             bool by_original) {
  const auto dest = [&](const Part& p, std::int64_t i, std::int64_t at) -> std::int64_t {
    return by_original ? p.ids.to_original(i) : at + i;
  };
  if (std::holds_alternative<kernels::Tensor<float>>(parts.front().features)) {
    const std::int64_t cols = std::get<kernels::Tensor<float>>(parts.front().features).cols();
    kernels::Tensor<float> x(res, rows, cols);
    std::int64_t at = 0;
    for (Part& p : parts) {
      const auto& f = std::get<kernels::Tensor<float>>(p.features);
      for (std::int64_t i = 0; i < p.num_owned(); ++i)
        std::memcpy(x.data() + dest(p, i, at) * cols, f.data() + i * cols,
                    static_cast<std::size_t>(cols) * sizeof(float));
      at += p.num_owned();
      p.features = kernels::Tensor<float>();
    }
    return x;
  }
  using Csr = kernels::CsrMatrix<std::int32_t, float>;
  const Csr& first = std::get<Csr>(parts.front().features);
  const bool values = !first.values.empty();
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(rows) + 1, 0);
  std::int64_t at = 0;
  for (const Part& p : parts) {
    const Csr& f = std::get<Csr>(p.features);
    for (std::int64_t i = 0; i < p.num_owned(); ++i)
      indptr[static_cast<std::size_t>(dest(p, i, at)) + 1] =
          f.indptr.data()[i + 1] - f.indptr.data()[i];
    at += p.num_owned();
  }
  std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
  Csr x;
  x.num_cols = first.num_cols;
  x.indices = kernels::Tensor<std::int32_t>(res, indptr.back());
  if (values) x.values = kernels::Tensor<float>(res, indptr.back());
  at = 0;
  for (Part& p : parts) {
    const Csr& f = std::get<Csr>(p.features);
    for (std::int64_t i = 0; i < p.num_owned(); ++i) {
      const std::int64_t from = f.indptr.data()[i], n = f.indptr.data()[i + 1] - from;
      const std::int64_t to = indptr[static_cast<std::size_t>(dest(p, i, at))];
      std::memcpy(x.indices.data() + to, f.indices.data() + from,
                  static_cast<std::size_t>(n) * sizeof(std::int32_t));
      if (values)
        std::memcpy(x.values.data() + to, f.values.data() + from,
                    static_cast<std::size_t>(n) * sizeof(float));
    }
    at += p.num_owned();
    p.features = Csr();
  }
  x.indptr = host_tensor(res, indptr);
  return x;
}

/// The whole graph in one part, local ids the original ids: make_local_part's part.
Part merge_all(const kernels::Resources& res, std::vector<Part>&& parts) {
  const std::int64_t n = parts.front().book().num_nodes();
  Part out;
  out.num_classes = parts.front().num_classes;
  out.training_edges = parts.front().training_edges;
  out.max_degree = parts.front().max_degree;
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(n) + 1, 0);
  std::vector<std::int64_t> degrees(static_cast<std::size_t>(n), 0);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n), 0);
  std::array<std::vector<NodeId>, 3> splits;
  for (const Part& p : parts)
    for (std::int64_t i = 0; i < p.num_owned(); ++i) {
      const auto v = static_cast<std::size_t>(p.ids.to_original(i));
      indptr[v + 1] = row_length(p.graph, i);
      degrees[v] = p.degrees.data()[i];
      labels[v] = p.labels.data()[i];
    }
  std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
  kernels::Tensor<NodeId> indices(res, indptr.back());
  for (Part& p : parts) {
    // A row lists its neighbours in ascending original id: so it does with original ids.
    const NodeId* original = p.ids.original_ids().data;
    for (std::int64_t i = 0; i < p.num_owned(); ++i) {
      NodeId* to = indices.data() + indptr[static_cast<std::size_t>(original[i])];
      for (std::int64_t e = p.graph.indptr.data()[i]; e < p.graph.indptr.data()[i + 1]; ++e)
        *to++ = original[p.graph.indices.data()[e]];
    }
    std::size_t s = 0;
    for (const kernels::Tensor<NodeId>* idx : {&p.train_idx, &p.val_idx, &p.test_idx}) {
      for (std::int64_t i = 0; i < idx->numel(); ++i) splits[s].push_back(original[idx->data()[i]]);
      ++s;
    }
    p.graph = datasets::Graph();
  }
  for (auto& s : splits) std::sort(s.begin(), s.end());
  const bool by_original = parts.front().features_by_original;
  if (by_original)  // the store's mapping: its rows are the nodes in original order already
    out.features = std::move(parts.front().features);
  else
    out.features = merge_features(res, parts, n, /*by_original=*/true);
  std::vector<NodeId> iota(static_cast<std::size_t>(n));
  std::iota(iota.begin(), iota.end(), NodeId{0});
  out.ids = IdMap(PartitionBook({0, n}), 0, host_tensor(res, iota), host_tensor<NodeId>(res, {}));
  out.graph.indptr = host_tensor(res, indptr);
  out.graph.indices = std::move(indices);
  out.graph.num_cols = n;
  out.degrees = host_tensor(res, degrees);
  out.send_offsets = {0, 0};
  out.send_rows = host_tensor<NodeId>(res, {});
  out.recv_offsets = {0, 0};
  out.labels = host_tensor(res, labels);
  out.train_idx = host_tensor(res, splits[0]);
  out.val_idx = host_tensor(res, splits[1]);
  out.test_idx = host_tensor(res, splits[2]);
  out.all_train = out.train_idx.clone(res);
  out.all_train_original = out.train_idx.clone(res);
  return out;
}

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

Part merge_parts(const kernels::Resources& res, std::vector<Part>&& parts,
                 const PartitionBook& group_book, std::int32_t rank) {
  HALO_EXPECTS(!parts.empty(), "merge_parts: no parts");
  if (group_book.num_parts() == 1) return merge_all(res, std::move(parts));
  const NodeId begin = static_cast<NodeId>(group_book.begin(rank));
  const NodeId end = static_cast<NodeId>(group_book.end(rank));
  const std::int64_t owned = end - begin;
  const auto in_group = [&](NodeId v) { return v >= begin && v < end; };
  // The group's halo: the parts' halo nodes it does not own, ascending partition id.
  std::vector<NodeId> halo;
  for (const Part& p : parts) {
    const kernels::Span<const NodeId> ids = p.ids.halo_ids();
    for (std::int64_t h = 0; h < ids.size; ++h)
      if (!in_group(ids[h])) halo.push_back(ids[h]);
  }
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  const auto nh = static_cast<std::int64_t>(halo.size());
  const auto halo_slot = [&](NodeId v) {
    return static_cast<std::int64_t>(std::lower_bound(halo.begin(), halo.end(), v) - halo.begin());
  };
  std::vector<NodeId> original(static_cast<std::size_t>(owned + nh));
  std::vector<std::int64_t> degrees(static_cast<std::size_t>(owned + nh));
  std::vector<std::int64_t> indptr = {0};
  std::vector<std::int32_t> labels;
  std::array<std::vector<NodeId>, 3> splits;
  std::int64_t entries = 0;
  for (const Part& p : parts) entries += p.graph.num_edges();
  kernels::Tensor<NodeId> indices(res, entries);
  const std::int32_t groups = group_book.num_parts();
  std::vector<std::int64_t> send_offsets(static_cast<std::size_t>(groups) + 1, 0);
  std::vector<std::vector<NodeId>> send(static_cast<std::size_t>(groups));
  std::int64_t at = 0, edge = 0;
  for (Part& p : parts) {
    HALO_EXPECTS(p.ids.first_owned() == begin + at, "merge_parts: the parts are not consecutive");
    // Local id in the part -> local id in the group.
    std::vector<std::int64_t> local(static_cast<std::size_t>(p.ids.num_local()));
    for (std::int64_t i = 0; i < p.ids.num_local(); ++i) {
      const NodeId v = p.ids.to_partition(i);
      const std::int64_t l = in_group(v) ? v - begin : owned + halo_slot(v);
      local[static_cast<std::size_t>(i)] = l;
      original[static_cast<std::size_t>(l)] = p.ids.to_original(i);
      degrees[static_cast<std::size_t>(l)] = p.degrees.data()[i];
    }
    for (std::int64_t i = 0; i < p.num_owned(); ++i) {
      for (std::int64_t e = p.graph.indptr.data()[i]; e < p.graph.indptr.data()[i + 1]; ++e)
        indices.data()[edge++] =
            static_cast<NodeId>(local[static_cast<std::size_t>(p.graph.indices.data()[e])]);
      indptr.push_back(edge);
      labels.push_back(p.labels.data()[i]);
    }
    std::size_t s = 0;
    for (const kernels::Tensor<NodeId>* idx : {&p.train_idx, &p.val_idx, &p.test_idx}) {
      for (std::int64_t i = 0; i < idx->numel(); ++i)
        splits[s].push_back(static_cast<NodeId>(at + idx->data()[i]));
      ++s;
    }
    // What the part sends to the parts of another group, once per row.
    for (std::int32_t g = 0; g < groups; ++g) {
      if (g == rank) continue;
      std::vector<NodeId> rows;
      for (std::int32_t j = 0; j < p.book().num_parts(); ++j) {
        if (p.book().begin(j) < group_book.begin(g) || p.book().end(j) > group_book.end(g))
          continue;  // (an empty part between two groups sends nothing)
        for (std::int64_t e = p.send_offsets[static_cast<std::size_t>(j)];
             e < p.send_offsets[static_cast<std::size_t>(j) + 1]; ++e)
          rows.push_back(static_cast<NodeId>(at + p.send_rows.data()[e]));
      }
      std::sort(rows.begin(), rows.end());
      rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
      auto& to = send[static_cast<std::size_t>(g)];
      to.insert(to.end(), rows.begin(), rows.end());
    }
    at += p.num_owned();
    p.graph = datasets::Graph();
  }
  HALO_EXPECTS(at == owned, "merge_parts: the parts do not cover the group");
  std::vector<NodeId> send_rows;
  for (std::int32_t g = 0; g < groups; ++g) {
    const auto& rows = send[static_cast<std::size_t>(g)];
    send_rows.insert(send_rows.end(), rows.begin(), rows.end());
    send_offsets[static_cast<std::size_t>(g) + 1] = static_cast<std::int64_t>(send_rows.size());
  }
  std::vector<std::int64_t> recv_offsets(static_cast<std::size_t>(groups) + 1, 0);
  for (const NodeId v : halo) ++recv_offsets[static_cast<std::size_t>(group_book.owner(v)) + 1];
  std::partial_sum(recv_offsets.begin(), recv_offsets.end(), recv_offsets.begin());

  Part out;
  out.num_classes = parts.front().num_classes;
  out.training_edges = parts.front().training_edges;
  out.max_degree = parts.front().max_degree;
  out.all_train = std::move(parts.front().all_train);
  out.all_train_original = std::move(parts.front().all_train_original);
  out.features_by_original = parts.front().features_by_original;
  if (out.features_by_original)  // every part maps the same store file
    out.features = std::move(parts.front().features);
  else
    out.features = merge_features(res, parts, owned, /*by_original=*/false);
  out.ids = IdMap(group_book, rank, host_tensor(res, original), host_tensor(res, halo));
  out.graph.indptr = host_tensor(res, indptr);
  out.graph.indices = std::move(indices);
  out.graph.num_cols = owned + nh;
  out.degrees = host_tensor(res, degrees);
  out.send_offsets = std::move(send_offsets);
  out.send_rows = host_tensor(res, send_rows);
  out.recv_offsets = std::move(recv_offsets);
  out.labels = host_tensor(res, labels);
  out.train_idx = host_tensor(res, splits[0]);
  out.val_idx = host_tensor(res, splits[1]);
  out.test_idx = host_tensor(res, splits[2]);
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
        g = {p.num_owned,
             p.num_halo,
             p.num_edges,
             p.num_halo_entries,
             p.num_train,
             send != nullptr ? send->rows * send->cols : 0,
             nnz != nullptr ? nnz->rows * nnz->cols : 0,
             p.file_bytes};
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
  std::vector<Part> parts;
  for (std::int32_t j = groups[static_cast<std::size_t>(rank)];
       j < groups[static_cast<std::size_t>(rank) + 1]; ++j)
    parts.push_back(read_part(res, dir, j, &meta, options));
  return merge_parts(res, std::move(parts), PartitionBook(std::move(offsets)), rank);
}

}  // namespace halo::partition
