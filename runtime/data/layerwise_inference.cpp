#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include <halo/kernels/error.hpp>
#include <halo/kernels/gather.hpp>
#include <halo/runtime/data/layerwise_inference.hpp>
#include <halo/sampler/batch.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;

/// The rows of the part's graph, with degree statistics that bound one chunk rather than the
/// graph: the sampler's envelope (fan-out -1) is then a chunk's, not every edge of the graph.
class LayerwiseInference::Chunks final : public sampler::NeighborSource {
 public:
  Chunks(const kernels::Resources& res, const datasets::Graph& graph, std::int64_t max_rows,
         std::int64_t max_entries)
      : m_rows(graph.view()),
        m_stats{graph.num_rows(), max_entries, m_rows.stats().max_degree},
        sampler(res, *this, max_rows, {{-1}, false, 0}) {}
  sampler::DegreeStats stats() const override { return m_stats; }
  void count(const kernels::Resources& res, kernels::Span<const NodeId> dst, int fanout,
             bool replace, std::int64_t* counts) override {
    m_rows.count(res, dst, fanout, replace, counts);
  }
  void fill(const kernels::Resources& res, kernels::Span<const NodeId> dst, int fanout,
            bool replace, std::uint64_t hop_key, const std::int64_t* offsets,
            NodeId* out) override {
    m_rows.fill(res, dst, fanout, replace, hop_key, offsets, out);
  }

 private:
  sampler::LocalNeighbors m_rows;
  sampler::DegreeStats m_stats;

 public:
  sampler::NeighborSampler sampler;  // last: it reads stats() when built
};

/// Two hidden representations (ping-pong) in one unlinked file: layer l's rows at slot l % 2,
/// written a chunk at a time, read back row by row with pread.
class LayerwiseInference::Spill {
 public:
  explicit Spill(const std::filesystem::path& dir) : m_where(dir.string()) {
    m_fd = ::open(m_where.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (m_fd < 0)
      throw IoError(m_where + ": cannot create the layer-wise inference's spill file: " +
                    std::strerror(errno));
  }
  ~Spill() { ::close(m_fd); }
  Spill(const Spill&) = delete;
  Spill& operator=(const Spill&) = delete;
  /// Bytes of one slot (a representation), set before a pass writes.
  void set_slot_bytes(std::int64_t bytes) { m_slot = bytes; }

  /// Rows [first, first + rows) of slot `slot`, `cols` wide, from `data`.
  void write(int slot, std::int64_t first, std::int64_t rows, std::int64_t cols,
             const float* data) {
    const auto bytes = static_cast<std::size_t>(rows * cols) * sizeof(float);
    const auto* p = reinterpret_cast<const char*>(data);
    off_t at = offset(slot, first, cols);
    for (std::size_t done = 0; done < bytes;) {
      const ssize_t n = ::pwrite(m_fd, p + done, bytes - done, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw IoError(m_where + ": cannot write the layer-wise inference's spill file: " +
                      (n < 0 ? std::strerror(errno) : "no space written"));
      done += static_cast<std::size_t>(n);
      at += n;
    }
  }
  /// out row i = row ids[i] of slot `slot`, `cols` wide; on res's threads.
  void read(const kernels::Resources& res, int slot, kernels::Span<const NodeId> ids,
            std::int64_t cols, float* out) const {
    const auto row = static_cast<std::size_t>(cols) * sizeof(float);
    std::int64_t failed = -1;
    int error = 0;
#pragma omp parallel for schedule(static) num_threads(res.cpu_exec().num_threads)
    for (std::int64_t i = 0; i < ids.size; ++i) {
      auto* p = reinterpret_cast<char*>(out + i * cols);
      off_t at = offset(slot, ids[i], cols);
      for (std::size_t done = 0; done < row;) {
        const ssize_t n = ::pread(m_fd, p + done, row - done, at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
#pragma omp critical(halo_spill_error)
          {
            failed = ids[i];
            error = n < 0 ? errno : 0;
          }
          break;
        }
        done += static_cast<std::size_t>(n);
        at += n;
      }
    }
    if (failed >= 0)
      throw IoError(m_where + ": cannot read row " + std::to_string(failed) +
                    " of the layer-wise inference's spill file: " +
                    (error != 0 ? std::strerror(error) : "the file is shorter than written"));
  }

 private:
  off_t offset(int slot, std::int64_t row, std::int64_t cols) const {
    return static_cast<off_t>(slot * m_slot +
                              row * cols * static_cast<std::int64_t>(sizeof(float)));
  }
  std::string m_where;
  std::int64_t m_slot = 0;
  int m_fd = -1;
};

std::size_t LayerwiseInference::representation_bytes(const nn::ModelConfig& model,
                                                     std::int64_t num_nodes) {
  if (model.num_layers < 2) return 0;
  const std::int64_t hidden =
      model.kind == nn::ModelKind::Gat ? model.heads * model.hidden : model.hidden;
  return 2 * static_cast<std::size_t>(num_nodes) * static_cast<std::size_t>(hidden) * sizeof(float);
}

LayerwiseInference::LayerwiseInference(const kernels::Resources& res, const partition::Part& part,
                                       const FeatureStore& features, nn::GraphPreparation graph,
                                       const std::filesystem::path& spill_dir,
                                       std::int64_t chunk_entries, std::int64_t chunk_rows)
    : m_res(res), m_part(part), m_store(features), m_features(features.owned()), m_graph(graph) {
  HALO_EXPECTS(part.ids.identity(), "layer-wise inference: needs the whole graph in one part");
  HALO_EXPECTS(res.device() == kernels::Device::Cpu, "layer-wise inference: runs on the CPU");
  HALO_EXPECTS(chunk_entries >= 1 && chunk_rows >= 1,
               "layer-wise inference: chunks need at least one row and one entry");
  const std::int64_t n = part.graph.num_rows();
  HALO_EXPECTS(kernels::num_rows(m_features) == n,
               "layer-wise inference: " + std::to_string(kernels::num_rows(m_features)) +
                   " feature rows for " + std::to_string(n) + " nodes");
  // Chunks: consecutive rows while the entries stay within the cap (a longer row alone).
  const std::int64_t* indptr = part.graph.indptr.data();
  const std::int64_t cap = std::max(chunk_entries, part.max_degree);
  m_bounds.push_back(0);
  std::int64_t max_rows = 1, max_entries = 0;
  for (std::int64_t a = 0; a < n;) {
    std::int64_t b = a + 1;
    while (b < n && b - a < chunk_rows && indptr[b + 1] - indptr[a] <= cap) ++b;
    max_rows = std::max(max_rows, b - a);
    max_entries = std::max(max_entries, indptr[b] - indptr[a]);
    m_max_src = std::max(m_max_src, std::min(n, (b - a) + (indptr[b] - indptr[a])));
    m_bounds.push_back(b);
    a = b;
  }
  m_chunks = std::make_unique<Chunks>(res, part.graph, max_rows, max_entries);
  if (!spill_dir.empty()) m_spill = std::make_unique<Spill>(spill_dir);
  m_seeds.resize(static_cast<std::size_t>(max_rows));
  constexpr auto small = kernels::Pages::Small;
  const std::int64_t width = kernels::num_cols(m_features);
  if (const auto* sparse = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&m_features)) {
    const std::int64_t entries = sampler::max_entries(*sparse, m_max_src);
    m_x = kernels::CsrMatrix<std::int32_t, float>{
        Tensor<std::int64_t>(res, m_max_src + 1, 1, small),
        Tensor<std::int32_t>(res, entries, 1, small), Tensor<float>(res, entries, 1, small), width,
        false};
    m_scan = Tensor<std::int64_t>(
        res, std::max<std::int64_t>(1, sampler::gather_scan_sums_size(m_max_src)));
  } else {
    m_x = Tensor<float>(res, m_max_src, width, small);
  }
  if (graph == nn::GraphPreparation::Symmetric)
    m_degrees = Tensor<std::int64_t>(res, m_max_src, 1, small);
  if (graph == nn::GraphPreparation::Symmetric || graph == nn::GraphPreparation::SelfLoops) {
    const std::int64_t entries = max_entries + max_rows;
    m_block = {Tensor<std::int64_t>(res, max_rows + 1, 1, small), Tensor<NodeId>(res, entries),
               Tensor<float>(res, graph == nn::GraphPreparation::Symmetric ? entries : 0), 0,
               false};
  }
}

LayerwiseInference::~LayerwiseInference() = default;

const Tensor<float>& LayerwiseInference::run(nn::Model<float>& model) {
  const nn::ModelConfig& c = model.config();
  HALO_EXPECTS(nn::graph_preparation(c.kind) == m_graph,
               "layer-wise inference: the model is a " + nn::to_string(c.kind) +
                   ", the blocks were planned for another graph preparation");
  HALO_EXPECTS(c.in_features == kernels::num_cols(m_features),
               "layer-wise inference: the model reads " + std::to_string(c.in_features) +
                   " features, the data has " + std::to_string(kernels::num_cols(m_features)));
  const nn::Context ctx{&m_res, /*training=*/false, 0, 0, 0};
  const std::int64_t n = m_part.graph.num_rows();
  std::int64_t widest = 0;
  for (int l = 1; l <= c.num_layers; ++l) widest = std::max(widest, model.width(l));
  std::size_t x_bytes = 0;
  if (const auto* dense = std::get_if<Tensor<float>>(&m_x))
    x_bytes = dense->capacity_bytes();
  else if (const auto* s = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&m_x))
    x_bytes = s->indptr.capacity_bytes() + s->indices.capacity_bytes() +
              s->values.capacity_bytes() + m_scan.capacity_bytes();
  std::size_t chunk_bytes = m_chunks->sampler.envelope_bytes() + x_bytes +
                            m_degrees.capacity_bytes() + m_block.indptr.capacity_bytes() +
                            m_block.indices.capacity_bytes() + m_block.values.capacity_bytes();
  if (c.num_layers > 1) {
    auto& hx = std::get<Tensor<float>>(m_hx);
    kernels::reserve(m_res, hx, m_max_src * widest);
    chunk_bytes += hx.capacity_bytes();
  }
  std::int64_t host_syncs = 0;
  m_written = m_read = 0;
  m_fetch = {};
  if (m_spill) m_spill->set_slot_bytes(n * widest * static_cast<std::int64_t>(sizeof(float)));
  // Layer l - 1's rows: none for l = 1 (the features), else in m_h[(l - 1) % 2] or the
  // spill file's slot (l - 1) % 2.
  std::int64_t in_cols = 0;
  for (int l = 1; l <= c.num_layers; ++l) {
    const bool to_file = m_spill && l < c.num_layers;
    const std::int64_t cols = model.width(l);
    Tensor<float>& out = m_h[l % 2];
    if (!to_file) kernels::ensure_shape(m_res, out, n, cols);
    for (std::int64_t chunk = 0; chunk < num_chunks(); ++chunk) {
      const std::int64_t a = m_bounds[static_cast<std::size_t>(chunk)];
      const std::int64_t rows = m_bounds[static_cast<std::size_t>(chunk) + 1] - a;
      std::iota(m_seeds.begin(), m_seeds.begin() + rows, static_cast<NodeId>(a));
      const sampler::MiniBatch& mb = m_chunks->sampler.sample(m_res, {m_seeds.data(), rows}, 0,
                                                              static_cast<std::uint64_t>(chunk));
      const sampler::Block& block = mb.blocks.front();
      if (l == 1 && m_store.from_file()) {
        auto& x = std::get<Tensor<float>>(m_x);
        x.reshape_within(block.num_src(), x.cols());
        m_store.read_file_rows(block.src_ids, x.data(), m_fetch);
      } else if (l == 1) {
        sampler::gather_feature_rows(m_res, m_features, block.src_ids, m_x, m_scan, host_syncs);
      } else {
        auto& hx = std::get<Tensor<float>>(m_hx);
        hx.reshape_within(block.num_src(), in_cols);
        if (m_spill) {
          m_spill->read(m_res, (l - 1) % 2, block.src_ids, in_cols, hx.data());
          m_read += static_cast<std::int64_t>(hx.bytes());
        } else {
          kernels::gather_rows<NodeId, float>(m_res, m_h[(l - 1) % 2].view(), block.src_ids,
                                              hx.view());
        }
      }
      nn::Adjacency<float> adjacency(block.csr);
      if (m_graph == nn::GraphPreparation::Symmetric) {
        m_degrees.reshape_within(block.num_src(), 1);
        sampler::gather_values(m_res, m_part.degrees.data(), block.src_ids, 0, m_degrees.data());
        sampler::gcn_block_weights(m_res, block, m_degrees.data(), m_block);
        adjacency = nn::Adjacency<float>(m_block.view());
      } else if (m_graph == nn::GraphPreparation::SelfLoops) {
        sampler::self_loop_block(m_res, block, m_block);
        adjacency = nn::Adjacency<float>(m_block.view());
      }
      adjacency.source_ids = block.src_ids;
      const Tensor<float>& y = model.forward_layer(ctx, adjacency, l == 1 ? m_x : m_hx, l);
      HALO_ASSERT(y.rows() == rows && y.cols() == cols, 1);
      if (to_file) {
        m_spill->write(l % 2, a, rows, cols, y.data());
        m_written += static_cast<std::int64_t>(y.bytes());
      } else {
        kernels::copy_bytes(m_res, out.data() + a * cols, m_res.device(), y.data(), y.device(),
                            y.bytes());
      }
    }
    in_cols = cols;
  }
  m_bytes = std::max(m_bytes, chunk_bytes + m_h[0].capacity_bytes() + m_h[1].capacity_bytes());
  return m_h[c.num_layers % 2];
}

}  // namespace halo::runtime
