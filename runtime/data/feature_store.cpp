#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <numeric>
#include <variant>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/runtime/data/feature_store.hpp>
#include <halo/sampler/batch.hpp>
#include <halo/sampler/batch_body.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;
using SparseFeatures = kernels::CsrMatrix<std::int32_t, float>;

namespace {
/// Words of a fetched row: its original id, its degree, then its features (4 bytes each).
constexpr std::int64_t kRowHeader = 2;
}  // namespace

std::vector<NodeId> hottest_rows(std::int64_t n, std::int64_t rows,
                                 const std::function<std::int64_t(NodeId)>& degree) {
  rows = std::clamp<std::int64_t>(rows, 0, n);
  if (rows == 0) return {};
  // The threshold degree t: fewer than `rows` rows have a degree above t, at least `rows` have
  // t or more. Degrees below kDense are counted in an array; the few rows above it (at most
  // entries / kDense) are kept in a list.
  constexpr std::int64_t kDense = std::int64_t{1} << 16;
  std::vector<std::int64_t> count(kDense, 0);
  std::vector<std::int64_t> high;
  for (NodeId v = 0; v < n; ++v) {
    const std::int64_t d = degree(v);
    if (d < kDense)
      ++count[static_cast<std::size_t>(d)];
    else
      high.push_back(d);
  }
  std::sort(high.begin(), high.end(), std::greater<>());
  std::int64_t t = 0, above = 0;  // above: rows of degree > t
  if (std::ssize(high) >= rows) {
    t = high[static_cast<std::size_t>(rows - 1)];
    above = std::lower_bound(high.begin(), high.end(), t, std::greater<>()) - high.begin();
  } else {
    above = std::ssize(high);
    for (t = kDense - 1; t > 0 && above + count[static_cast<std::size_t>(t)] < rows; --t)
      above += count[static_cast<std::size_t>(t)];
  }
  // Every row above t, and the rows of degree t in id order until `rows` are taken.
  std::vector<NodeId> out;
  out.reserve(static_cast<std::size_t>(rows));
  std::int64_t ties = rows - above;
  for (NodeId v = 0; v < n && std::ssize(out) < rows; ++v) {
    const std::int64_t d = degree(v);
    if (d > t || (d == t && ties-- > 0)) out.push_back(v);
  }
  return out;
}

FeatureStore::FeatureStore(const kernels::Resources& res, partition::Part& part, bool normalize)
    : m_part(part) {
  // The part's features become the store's (no second copy in host memory), prepared on the
  // host: sparse rows L1-normalised in place.
  kernels::FeatureMatrix<float> f = std::move(part.features);
  if (normalize && std::holds_alternative<SparseFeatures>(f))
    datasets::row_normalize(host_resources(res), f);
  m_width = kernels::num_cols(f);
  // One part: the degrees a batch gathers, a device's copy (on the CPU the part's own).
  if (part.ids.identity() && res.device() != kernels::Device::Cpu)
    m_degrees = part.degrees.copy_to(res, res.device());
  if (res.device() == kernels::Device::Cpu) {
    const auto* dense = std::get_if<Tensor<float>>(&f);
    m_by_original = part.features_by_original;
    m_from_file = (part.ids.identity() || m_by_original) && dense != nullptr && dense->mapped();
    // Rows are read at random: no read-ahead (it multiplied the disk's bytes about tenfold on
    // R-MAT 26, bench/results/out_of_core.md).
    if (m_from_file) dense->storage().advise_random();
    m_owned = std::move(f);
    return;
  }
  HALO_EXPECTS(!part.features_by_original,
               "feature store: rows read from a store's file are for the CPU");
  m_owned = std::visit(
      [&](const auto& x) -> kernels::FeatureMatrix<float> { return x.copy_to(res, res.device()); },
      f);
  m_owned_host = std::move(f);  // rows assembled on the host, and the sparse gather's bound
  m_host_copy = true;
}

void FeatureStore::enable_batches(Comm& comm, std::int64_t max_rows, std::int64_t cache_bytes,
                                  CachePolicy policy) {
  grow_batches(max_rows);
  max_rows = m_max_rows;
  if (m_part.ids.identity()) return;  // every row is local: a cache would hold nothing
  // Exchange buffers for the largest batch: what this rank asks for, what each peer (of the
  // same batch bound) can ask of it, and the rows both ways.
  const auto p = static_cast<std::size_t>(comm.size());
  const std::int64_t served = static_cast<std::int64_t>(p) * std::min(max_rows, m_part.num_owned());
  const std::int64_t words = kRowHeader + m_width;
  m_want.reserve(static_cast<std::size_t>(max_rows));
  m_want_pos.reserve(static_cast<std::size_t>(max_rows));
  if (m_from_file) {  // a batch's owned rows, or the rows a rank serves, read at once
    m_read_local.reserve(static_cast<std::size_t>(std::max(max_rows, served)));
    m_read_pos.reserve(static_cast<std::size_t>(std::max(max_rows, served)));
  }
  m_served.reserve(static_cast<std::size_t>(served));
  m_reply_out.reserve(static_cast<std::size_t>(served * words));
  m_reply_in.reserve(static_cast<std::size_t>(max_rows * words));
  for (auto* v : {&m_count_out, &m_count_in, &m_cursor}) v->assign(p + 1, 0);
  m_bytes_out.assign(p, 0);
  m_bytes_in.assign(p, 0);
  m_policy = policy;
  m_cache_slot.assign(static_cast<std::size_t>(m_part.num_halo()), -1);
  m_capacity = m_width > 0 ? std::min(cache_bytes / (m_width * 4), m_part.num_halo()) : 0;
  if (policy == CachePolicy::Degree) {
    const std::int64_t* d = m_part.degrees.data() + m_part.num_owned();
    fill_cache(comm, std::vector<std::int64_t>(d, d + m_part.num_halo()));
  } else {
    m_access.assign(static_cast<std::size_t>(m_part.num_halo()), 0);
  }
}

void FeatureStore::grow_batches(std::int64_t max_rows) {
  if (max_rows <= m_max_rows && m_max_rows > 0) return;
  m_max_rows = std::max(m_max_rows, max_rows);
  if (const auto* sparse = std::get_if<SparseFeatures>(m_host_copy ? &m_owned_host : &m_owned))
    m_max_entries = sampler::max_entries(*sparse, m_max_rows);
}

BatchInputs FeatureStore::make_inputs(const kernels::Resources& res) const {
  BatchInputs in;
  const std::int64_t n = std::max<std::int64_t>(m_max_rows, 1);
  if (m_part.ids.identity() && std::holds_alternative<SparseFeatures>(m_owned)) {
    in.x =
        SparseFeatures{Tensor<std::int64_t>(res, n + 1, 1, kernels::Pages::Small),
                       Tensor<std::int32_t>(res, m_max_entries, 1, kernels::Pages::Small),
                       Tensor<float>(res, m_max_entries, 1, kernels::Pages::Small), m_width, false};
    in.scan_sums =
        Tensor<std::int64_t>(res, std::max<std::int64_t>(1, sampler::gather_scan_sums_size(n)));
  } else {
    in.x = Tensor<float>(res, n, m_width, kernels::Pages::Small);
  }
  in.degrees = Tensor<std::int64_t>(res, n, 1, kernels::Pages::Small);
  if (!m_part.ids.identity()) {
    in.original_ids = Tensor<NodeId>(res, n, 1, kernels::Pages::Small);
    if (res.device() != kernels::Device::Cpu)
      in.stage = kernels::PinnedBuffer(
          res, static_cast<std::size_t>(n) * (static_cast<std::size_t>(m_width) * sizeof(float) +
                                              sizeof(NodeId) + sizeof(std::int64_t)));
  }
  return in;
}

void FeatureStore::copy_owned_row(std::int64_t local, float* out) const {
  HALO_EXPECTS(!m_by_original, "feature store: the owned rows are in the store's file");
  const kernels::FeatureMatrix<float>& x = m_host_copy ? m_owned_host : m_owned;
  if (const auto* dense = std::get_if<Tensor<float>>(&x)) {
    std::memcpy(out, dense->data() + local * m_width, static_cast<std::size_t>(m_width) * 4);
    return;
  }
  const auto& s = std::get<SparseFeatures>(x);
  std::fill_n(out, m_width, 0.f);
  for (std::int64_t e = s.indptr(local); e < s.indptr(local + 1); ++e)
    out[s.indices(e)] = s.values.empty() ? 1.f : s.values(e);
}

void FeatureStore::gather(const kernels::Resources& res, Comm& comm,
                          kernels::Span<const NodeId> nodes, BatchInputs& out, FetchStats& stats,
                          std::int64_t& host_syncs, sampler::GatherDropout dropout) {
  const std::int64_t n = nodes.size;
  HALO_EXPECTS(n <= m_max_rows, "feature store: more rows than the batch bound");
  out.degrees.reshape_within(n, 1);
  if (m_from_file && m_part.ids.identity()) {  // one part, rows read from the file (or its
                                               // row cache), then dropped out
    auto& x = std::get<Tensor<float>>(out.x);
    x.reshape_within(n, m_width);
    read_file_rows(nodes, x.data(), stats);
    sampler::gather_values(res, degrees(), nodes, 0, out.degrees.data());
    out.original = nodes;
    if (dropout.p > 0) {
      dropout.key.row_ids = nodes;
      kernels::dropout(res, dropout.key, dropout.p, x.view(), x.view());
    }
    return;
  }
  if (m_part.ids.identity()) {  // every node is owned; ids are local ids, on res's device
    dropout.key.row_ids = nodes;
    sampler::gather_feature_rows(res, m_owned, nodes, out.x, out.scan_sums, host_syncs, dropout);
    sampler::gather_values(res, degrees(), nodes, 0, out.degrees.data());
    out.original = nodes;
    return;
  }
  // Several parts: rows assembled on the host (directly in out's tensors on the CPU, in the
  // pinned staging on a device), remote ones fetched from their owners.
  auto& x = std::get<Tensor<float>>(out.x);
  x.reshape_within(n, m_width);
  out.original_ids.reshape_within(n, 1);
  const bool staged = res.device() != kernels::Device::Cpu;
  if (staged) res.synchronize();  // the previous batch's copies out of the staging are done
  auto* rows = staged ? static_cast<float*>(out.stage.data()) : x.data();
  auto* original = staged ? reinterpret_cast<NodeId*>(rows + n * m_width) : out.original_ids.data();
  auto* degrees = staged ? reinterpret_cast<std::int64_t*>(
                               static_cast<char*>(out.stage.data()) +
                               static_cast<std::size_t>(n) *
                                   (static_cast<std::size_t>(m_width) * 4 + sizeof(NodeId)))
                         : out.degrees.data();
  const partition::IdMap& ids = m_part.ids;
  const std::int64_t owned = ids.num_owned();
  const auto p = static_cast<std::size_t>(comm.size());
  std::fill(m_count_out.begin(), m_count_out.end(), 0);
  m_read_local.clear();
  m_read_pos.clear();
  // Owned and cached rows now (owned rows of a file listed, then read at once); remote ones
  // counted per owner, then placed grouped by owner.
  for (std::int64_t i = 0; i < n; ++i) {
    const NodeId v = nodes[i];
    if (ids.owns(v)) {
      const std::int64_t local = v - ids.first_owned();
      if (m_from_file) {
        m_read_local.push_back(static_cast<NodeId>(local));
        m_read_pos.push_back(i);
      } else {
        copy_owned_row(local, rows + i * m_width);
      }
      original[i] = ids.to_original(local);
      degrees[i] = m_part.degrees.data()[local];
      continue;
    }
    ++stats.remote_rows;
    const std::int64_t local = ids.to_local(v);
    if (local >= owned) {
      const auto h = static_cast<std::size_t>(local - owned);
      if (!m_access.empty()) ++m_access[h];
      if (const std::int32_t slot = m_cache_slot[h]; slot >= 0) {
        ++stats.cache_hits;
        std::memcpy(rows + i * m_width, m_cache_rows.data() + slot * m_width,
                    static_cast<std::size_t>(m_width) * 4);
        original[i] = ids.to_original(local);
        degrees[i] = m_part.degrees.data()[local];
        continue;
      }
    }
    ++m_count_out[static_cast<std::size_t>(ids.owner(v)) + 1];
  }
  std::partial_sum(m_count_out.begin(), m_count_out.end(), m_cursor.begin());
  const auto want = static_cast<std::size_t>(m_cursor[p]);
  m_want.resize(want);  // within the capacity reserved for the batch bound
  m_want_pos.resize(want);
  for (std::int64_t i = 0; i < n; ++i) {
    const NodeId v = nodes[i];
    if (ids.owns(v)) continue;
    const std::int64_t local = ids.to_local(v);
    if (local >= owned && m_cache_slot[static_cast<std::size_t>(local - owned)] >= 0) continue;
    const auto at = static_cast<std::size_t>(m_cursor[static_cast<std::size_t>(ids.owner(v))]++);
    m_want[at] = v;
    m_want_pos[at] = i;
  }
  if (m_from_file)
    read_rows(m_read_local.data(), m_read_pos.data(), std::ssize(m_read_local), rows, m_width,
              stats);
  fetch(comm, static_cast<std::int64_t>(want), rows, original, degrees, stats);
  out.original = out.original_ids.span();
  if (staged) {
    kernels::copy_bytes_async(res, x.data(), res.device(), rows, kernels::Device::Cpu, x.bytes());
    kernels::copy_bytes_async(res, out.original_ids.data(), res.device(), original,
                              kernels::Device::Cpu, static_cast<std::size_t>(n) * sizeof(NodeId));
    kernels::copy_bytes_async(res, out.degrees.data(), res.device(), degrees, kernels::Device::Cpu,
                              static_cast<std::size_t>(n) * sizeof(std::int64_t));
  }
  if (dropout.p > 0) {  // rows assembled from several sources: dropped out in place
    dropout.key.row_ids = out.original;
    kernels::dropout(res, dropout.key, dropout.p, x.view(), x.view());
  }
}

void FeatureStore::fetch(Comm& comm, std::int64_t count, float* rows, NodeId* original,
                         std::int64_t* degrees, FetchStats& stats) {
  const auto start = std::chrono::steady_clock::now();
  const auto p = static_cast<std::size_t>(comm.size());
  const std::int64_t words = kRowHeader + m_width;
  // Per owner: how many rows this rank wants (m_count_out[j + 1] - ... as counts), and the
  // ids, grouped by owner in m_want.
  for (std::size_t j = 0; j < p; ++j) m_count_out[j] = m_count_out[j + 1];
  comm.alltoall({m_count_out.data(), static_cast<std::int64_t>(p)},
                {m_count_in.data(), static_cast<std::int64_t>(p)});
  std::int64_t served = 0;
  for (std::size_t j = 0; j < p; ++j) {
    m_bytes_out[j] = static_cast<std::size_t>(m_count_out[j]) * sizeof(NodeId);
    m_bytes_in[j] = static_cast<std::size_t>(m_count_in[j]) * sizeof(NodeId);
    served += m_count_in[j];
  }
  m_served.resize(static_cast<std::size_t>(served));
  comm.alltoallv(m_want.data(), m_bytes_out, m_served.data(), m_bytes_in);
  // Serve: original id, degree and the features of every row asked for.
  m_reply_out.resize(static_cast<std::size_t>(served * words));
  const partition::IdMap& ids = m_part.ids;
  if (m_from_file) m_read_local.clear();
  for (std::int64_t k = 0; k < served; ++k) {
    const NodeId v = m_served[static_cast<std::size_t>(k)];
    HALO_EXPECTS(ids.owns(v), "feature store: asked for a row this rank does not own");
    const std::int64_t local = v - ids.first_owned();
    std::int32_t* w = m_reply_out.data() + k * words;
    w[0] = ids.to_original(local);
    w[1] = static_cast<std::int32_t>(m_part.degrees.data()[local]);
    if (m_from_file)
      m_read_local.push_back(static_cast<NodeId>(local));
    else
      copy_owned_row(local, reinterpret_cast<float*>(w + kRowHeader));
  }
  // Rows of a file read at once, into the reply's rows (a row every `words` words).
  if (m_from_file)
    read_rows(m_read_local.data(), nullptr, served,
              reinterpret_cast<float*>(m_reply_out.data() + kRowHeader), words, stats);
  for (std::size_t j = 0; j < p; ++j) {
    m_bytes_out[j] = static_cast<std::size_t>(m_count_in[j] * words) * 4;
    m_bytes_in[j] = static_cast<std::size_t>(m_count_out[j] * words) * 4;
  }
  m_reply_in.resize(static_cast<std::size_t>(count * words));
  comm.alltoallv(m_reply_out.data(), m_bytes_out, m_reply_in.data(), m_bytes_in);
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int32_t* w = m_reply_in.data() + k * words;
    const std::int64_t at = m_want_pos[static_cast<std::size_t>(k)];
    original[at] = w[0];
    degrees[at] = w[1];
    std::memcpy(rows + at * m_width, w + kRowHeader, static_cast<std::size_t>(m_width) * 4);
  }
  stats.bytes += count * words * 4;
  stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void FeatureStore::fill_cache(Comm& comm, const std::vector<std::int64_t>& score) {
  // The m_capacity halo nodes of highest score (ties: lower partition id), fetched once.
  std::vector<std::int64_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  const auto keep = static_cast<std::ptrdiff_t>(m_capacity);
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](auto a, auto b) {
    return score[static_cast<std::size_t>(a)] != score[static_cast<std::size_t>(b)]
               ? score[static_cast<std::size_t>(a)] > score[static_cast<std::size_t>(b)]
               : a < b;
  });
  order.resize(static_cast<std::size_t>(keep));
  std::sort(order.begin(), order.end());  // halo order is owner order
  const partition::IdMap& ids = m_part.ids;
  std::fill(m_count_out.begin(), m_count_out.end(), 0);
  m_want.resize(order.size());
  m_want_pos.resize(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    const NodeId v = ids.to_partition(ids.num_owned() + order[k]);
    ++m_count_out[static_cast<std::size_t>(ids.owner(v)) + 1];
    m_want[k] = v;
    m_want_pos[k] = static_cast<std::int64_t>(k);
    m_cache_slot[static_cast<std::size_t>(order[k])] = static_cast<std::int32_t>(k);
  }
  m_cache_rows.assign(order.size() * static_cast<std::size_t>(m_width), 0.f);
  std::vector<NodeId> original(order.size());
  std::vector<std::int64_t> degrees(order.size());
  FetchStats ignored;
  fetch(comm, static_cast<std::int64_t>(order.size()), m_cache_rows.data(), original.data(),
        degrees.data(), ignored);
  m_cached = static_cast<std::int64_t>(order.size());
}

void FeatureStore::end_epoch(Comm& comm, std::uint64_t epoch) {
  if (m_part.ids.identity() || m_policy != CachePolicy::Access || epoch != 1) return;
  std::vector<std::int64_t> counts;
  counts.swap(m_access);  // counting stops
  fill_cache(comm, counts);
}

void FeatureStore::cache_file_rows(std::int64_t bytes) {
  if (!m_from_file || m_width == 0) return;
  const std::int64_t n = m_part.num_owned();
  const std::int64_t rows = std::min(n, std::max<std::int64_t>(0, bytes) / (m_width * 4));
  m_file_slot.assign(static_cast<std::size_t>(n), -1);
  m_file_rows.assign(static_cast<std::size_t>(rows * m_width), 0.f);
  m_file_cached = 0;
  if (rows == 0) return;
  const std::int64_t* degree = m_part.degrees.data();
  const std::vector<NodeId> order = hottest_rows(n, rows, [degree](NodeId v) { return degree[v]; });
  FetchStats ignored;  // every slot is still empty: all rows come from the file
  read_file_rows({order.data(), rows}, m_file_rows.data(), ignored);
  for (std::int64_t i = 0; i < rows; ++i)
    m_file_slot[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] =
        static_cast<std::int32_t>(i);
  m_file_cached = rows;
}

void FeatureStore::read_file_rows(kernels::Span<const NodeId> nodes, float* out,
                                  FetchStats& stats) const {
  read_rows(nodes.data, nullptr, nodes.size, out, m_width, stats);
}

void FeatureStore::read_rows(const NodeId* locals, const std::int64_t* positions,
                             std::int64_t count, float* out, std::int64_t stride,
                             FetchStats& stats) const {
  HALO_EXPECTS(m_from_file, "feature store: the rows are not read from a file");
  const auto start = std::chrono::steady_clock::now();
  const auto& file = std::get<Tensor<float>>(m_owned).storage();
  const auto row = static_cast<std::size_t>(m_width) * sizeof(float);
  const bool cached = !m_file_slot.empty();
  const NodeId* original = m_part.ids.original_ids().data;
  // Cached rows copied; the others read in ascending file row, runs of consecutive rows (a
  // batch's hubs are often neighbours in the file) with one pread each. Per thread, grown once.
  thread_local std::vector<std::pair<NodeId, std::int64_t>> want;  // (file row, position)
  thread_local std::vector<std::int64_t> runs;                     // starts in `want`
  want.clear();
  std::int64_t hits = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const NodeId v = locals[i];
    const std::int64_t at = positions != nullptr ? positions[i] : i;
    if (const std::int32_t slot = cached ? m_file_slot[static_cast<std::size_t>(v)] : -1;
        slot >= 0) {
      std::memcpy(out + at * stride, m_file_rows.data() + static_cast<std::int64_t>(slot) * m_width,
                  row);
      ++hits;
    } else {
      want.emplace_back(m_by_original ? original[v] : v, at);
    }
  }
  std::sort(want.begin(), want.end());
  // A run: consecutive ids, at most kRunBytes.
  constexpr std::size_t kRunBytes = std::size_t{64} << 10;
  const auto max_rows = static_cast<std::int64_t>(std::max<std::size_t>(1, kRunBytes / row));
  runs.clear();
  for (std::size_t k = 0; k < want.size(); ++k)
    if (k == 0 || want[k].first != want[k - 1].first + 1 ||
        static_cast<std::int64_t>(k) - runs.back() >= max_rows)
      runs.push_back(static_cast<std::int64_t>(k));
  runs.push_back(static_cast<std::int64_t>(want.size()));
  const auto num_runs = static_cast<std::int64_t>(runs.size()) - 1;
  const std::vector<std::pair<NodeId, std::int64_t>>& w = want;
  const std::vector<std::int64_t>& r = runs;
  std::exception_ptr error;
  // Reads in flight: a disk serves random reads far faster at a queue depth of 16 than of 1
  // (this machine's, fio 4 KiB: 26K IOPS at depth 1, 90K at 16), so the runs are read by
  // kReadDepth threads whatever the compute threads are; they wait on the disk, not compute.
  constexpr int kReadDepth = 16;
#pragma omp parallel num_threads(kReadDepth) if (num_runs >= 64)
  {
    thread_local std::vector<char> buffer;  // one run's rows, per thread, grown once
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t k = 0; k < num_runs; ++k) {
      const auto a = static_cast<std::size_t>(r[static_cast<std::size_t>(k)]);
      const auto b = static_cast<std::size_t>(r[static_cast<std::size_t>(k) + 1]);
      try {
        if (b - a == 1) {
          file.read_file(static_cast<std::size_t>(w[a].first) * row, out + w[a].second * stride,
                         row);
          continue;
        }
        buffer.resize((b - a) * row);
        file.read_file(static_cast<std::size_t>(w[a].first) * row, buffer.data(), (b - a) * row);
        for (std::size_t q = a; q < b; ++q)
          std::memcpy(out + w[q].second * stride, buffer.data() + (q - a) * row, row);
      } catch (...) {
#pragma omp critical(halo_feature_file_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  stats.file_rows += count;
  stats.file_hits += hits;
  stats.file_bytes += (count - hits) * static_cast<std::int64_t>(row);
  stats.file_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace halo::runtime
