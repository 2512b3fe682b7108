#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_map>
#include <variant>

#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/runtime/comm/nccl_comm.hpp>
#include <halo/runtime/distributed_minibatch.hpp>
#include <halo/runtime/halo_exchange.hpp>
#include <halo/sampler/neighbor_sampler.hpp>
#include <halo/sampler/sample_body.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;

namespace {

// Every rank's list, concatenated in rank order.
std::vector<NodeId> allgather_ids(Comm& comm, const std::vector<NodeId>& mine) {
  std::vector<std::size_t> counts;
  const std::vector<std::byte> bytes =
      comm.allgatherv(mine.data(), mine.size() * sizeof(NodeId), counts);
  std::vector<NodeId> all(bytes.size() / sizeof(NodeId));
  if (!all.empty()) std::memcpy(all.data(), bytes.data(), bytes.size());
  return all;
}

// Bytes `lists` sends to other ranks (the list to itself stays in memory).
template <class T>
std::int64_t payload(const std::vector<std::vector<T>>& lists, int self) {
  std::int64_t bytes = 0;
  for (std::size_t j = 0; j < lists.size(); ++j)
    if (static_cast<int>(j) != self)
      bytes += static_cast<std::int64_t>(lists[j].size() * sizeof(T));
  return bytes;
}

}  // namespace

DistributedMiniBatchTrainer::DistributedMiniBatchTrainer(const kernels::Resources& res, Comm& comm,
                                                         const partition::Part& part,
                                                         const TrainConfig& config,
                                                         const MiniBatchConfig& mb,
                                                         nn::Model<float>& model, Comm* data_comm)
    : m_res(res),
      m_comm(comm),
      m_data_comm(data_comm != nullptr ? *data_comm : comm),
      m_part(part),
      m_config(config),
      m_mb(mb),
      m_model(model),
      m_full(res, comm, part, config, model, /*overlap=*/true, data_comm),
      m_optimizer(res, model.parameters(), adam_config(config)) {
  HALO_EXPECTS(model.config().kind == nn::ModelKind::Sage,
               "train: distributed mini-batch training trains SAGE models (--model sage)");
  HALO_EXPECTS(static_cast<int>(mb.fanouts.size()) == model.config().num_layers,
               "train: one fan-out per layer expected");
  HALO_EXPECTS(mb.batch_size >= 1, "train: --batch-size must be >= 1");

  // Original <-> partition ids of every node: part k's owned nodes are partition ids
  // begin(k) .., in order, so the concatenated original ids are the inverse map.
  const NodeId* orig = part.original_ids.data();
  const std::vector<NodeId> new_to_old =
      allgather_ids(comm, {orig, orig + part.original_ids.numel()});
  m_old_to_new.assign(new_to_old.size(), 0);
  for (std::size_t i = 0; i < new_to_old.size(); ++i)
    m_old_to_new[static_cast<std::size_t>(new_to_old[i])] = static_cast<NodeId>(i);

  // Owned rows of A ∪ Aᵀ as original ids, ascending: the rows one process samples from.
  const std::int64_t owned = part.num_owned();
  std::vector<std::vector<NodeId>> rows(static_cast<std::size_t>(owned));
  for (const auto& [r, col] : symmetric_owned_edges(comm, part))
    rows[static_cast<std::size_t>(r)].push_back(new_to_old[static_cast<std::size_t>(col)]);
  std::vector<std::int64_t> indptr{0};
  std::vector<NodeId> indices;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    indices.insert(indices.end(), row.begin(), row.end());
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  const auto nnz = static_cast<std::int64_t>(indices.size());
  // Sampling and the feature rows stay on the host, whatever res's device.
  const kernels::Resources host = host_resources(res);
  m_rows = {Tensor<std::int64_t>::from_host(host, indptr),
            Tensor<NodeId>::from_host(host, indices, nnz, 1), Tensor<float>(),
            static_cast<std::int64_t>(new_to_old.size()), false};

  // Owned features, prepared as one process prepares them, dense (rows travel as floats).
  const kernels::FeatureMatrix<float> f =
      prepare_features(host, part.features, config.normalize_features);
  m_num_features = kernels::num_cols(f);
  m_dense.assign(static_cast<std::size_t>(owned * m_num_features), 0.f);
  if (const auto* sparse = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&f)) {
    for (std::int64_t r = 0; r < owned; ++r)
      for (std::int64_t e = sparse->indptr(r); e < sparse->indptr(r + 1); ++e)
        m_dense[static_cast<std::size_t>(r * m_num_features + sparse->indices(e))] =
            sparse->values(e);
  } else {
    const auto& d = std::get<Tensor<float>>(f);
    std::copy(d.data(), d.data() + d.numel(), m_dense.begin());
  }

  std::vector<NodeId> train;
  for (std::int64_t i = 0; i < part.train_idx.numel(); ++i)
    train.push_back(orig[part.train_idx.data()[i]]);
  m_train = allgather_ids(comm, train);
  std::sort(m_train.begin(), m_train.end());
  HALO_EXPECTS(!m_train.empty(), "train: the partition has no training nodes");

  fill_cache(static_cast<std::int64_t>(mb.cache_mb * 1024 * 1024));
}

int DistributedMiniBatchTrainer::owner(NodeId original) const {
  return m_part.book.owner(m_old_to_new[static_cast<std::size_t>(original)]);
}

std::int64_t DistributedMiniBatchTrainer::local(NodeId original) const {
  return m_old_to_new[static_cast<std::size_t>(original)] - m_part.book.begin(m_part.rank);
}

std::int64_t DistributedMiniBatchTrainer::batches_per_epoch() const {
  const auto n = static_cast<std::int64_t>(m_train.size());
  const std::int64_t b = std::min(m_mb.batch_size, n);
  return (n + b - 1) / b;
}

std::vector<NodeId> DistributedMiniBatchTrainer::seeds(std::uint64_t epoch, std::int64_t batch) {
  if (m_order_epoch != epoch) {
    m_order = shuffled_seeds(m_config.seed, epoch, m_train);
    m_order_epoch = epoch;
  }
  const auto n = static_cast<std::int64_t>(m_order.size());
  const std::int64_t b = std::min(m_mb.batch_size, n);
  std::vector<NodeId> mine;
  for (std::int64_t i = batch * b; i < std::min(n, (batch + 1) * b); ++i)
    if (owner(m_order[static_cast<std::size_t>(i)]) == m_comm.rank())
      mine.push_back(m_order[static_cast<std::size_t>(i)]);
  return mine;
}

HostBlock DistributedMiniBatchTrainer::sample_hop(const std::vector<NodeId>& frontier,
                                                  std::uint64_t key, int fanout) {
  const auto p = static_cast<std::size_t>(m_comm.size());
  // The frontier's nodes go to their owners.
  std::vector<std::vector<NodeId>> requests(p);
  for (const NodeId v : frontier) requests[static_cast<std::size_t>(owner(v))].push_back(v);
  std::vector<std::int64_t> offsets;
  m_bytes += payload(requests, m_comm.rank());
  const std::vector<NodeId> wanted = alltoallv_lists(m_comm, requests, offsets);

  // Each owner draws for the nodes it was sent: reply = counts, then the neighbours.
  std::vector<std::vector<NodeId>> replies(p);
  const auto rows = m_rows.view();
  for (std::size_t j = 0; j < p; ++j) {
    const auto n = static_cast<std::size_t>(offsets[j + 1] - offsets[j]);
    const NodeId* ids = wanted.data() + offsets[j];
    std::vector<NodeId> dst(n);
    std::vector<std::int64_t> start(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      dst[i] = static_cast<NodeId>(local(ids[i]));
      start[i + 1] =
          start[i] + sampler::detail::sample_count(rows.degree(dst[i]), fanout, m_mb.replace);
    }
    std::vector<NodeId>& reply = replies[j];
    reply.resize(n + static_cast<std::size_t>(start[n]));
    for (std::size_t i = 0; i < n; ++i) reply[i] = static_cast<NodeId>(start[i + 1] - start[i]);
    const sampler::detail::FillBody fill{rows,
                                         {dst.data(), static_cast<std::int64_t>(n)},
                                         fanout,
                                         m_mb.replace,
                                         key,
                                         start.data(),
                                         reply.data() + n,
                                         ids};
    for (std::size_t i = 0; i < n; ++i) fill(static_cast<std::int64_t>(i));
  }
  m_bytes += payload(replies, m_comm.rank());
  std::vector<std::int64_t> reply_offsets;
  const std::vector<NodeId> got = alltoallv_lists(m_comm, replies, reply_offsets);

  // Neighbours in frontier order, then relabelled: destinations first, then first occurrence.
  std::vector<std::size_t> next(p), cursor(p);
  for (std::size_t j = 0; j < p; ++j) {
    next[j] = static_cast<std::size_t>(reply_offsets[j]);  // the j-th owner's counts
    cursor[j] = next[j] + requests[j].size();              // and its neighbours
  }
  HostBlock block;
  block.indptr.push_back(0);
  block.src_ids = frontier;
  std::unordered_map<NodeId, NodeId> position;
  for (std::size_t i = 0; i < frontier.size(); ++i)
    position.emplace(frontier[i], static_cast<NodeId>(i));
  for (const NodeId v : frontier) {
    const auto j = static_cast<std::size_t>(owner(v));
    const auto count = static_cast<std::size_t>(got[next[j]++]);
    for (std::size_t k = 0; k < count; ++k) {
      const NodeId u = got[cursor[j]++];
      const auto [it, added] = position.emplace(u, static_cast<NodeId>(block.src_ids.size()));
      if (added) block.src_ids.push_back(u);
      block.indices.push_back(it->second);
    }
    block.indptr.push_back(static_cast<std::int64_t>(block.indices.size()));
  }
  return block;
}

std::vector<HostBlock> DistributedMiniBatchTrainer::sample(const std::vector<NodeId>& seeds,
                                                           std::uint64_t epoch,
                                                           std::int64_t batch) {
  const std::size_t layers = m_mb.fanouts.size();
  std::vector<HostBlock> blocks(layers);
  std::vector<NodeId> frontier = seeds;
  for (std::size_t h = 0; h < layers; ++h) {
    const std::size_t l = layers - 1 - h;
    blocks[l] = sample_hop(
        frontier, sampler::hop_key(m_config.seed, epoch, static_cast<std::uint64_t>(batch), h),
        m_mb.fanouts[l]);
    frontier = blocks[l].src_ids;
  }
  return blocks;
}

DistributedMiniBatchTrainer::Pending DistributedMiniBatchTrainer::prepare(std::uint64_t epoch,
                                                                          std::int64_t batch) {
  Pending b;
  b.batch = batch;
  b.seeds = seeds(epoch, batch);
  b.blocks = sample(b.seeds, epoch, batch);
  // Input rows neither owned nor cached are asked from their owners (ids: all-to-all); the rows
  // then travel point to point while the previous batch computes.
  const auto p = static_cast<std::size_t>(m_comm.size());
  const auto f = static_cast<std::size_t>(m_num_features);
  const auto me = static_cast<std::size_t>(m_comm.rank());
  std::vector<std::vector<NodeId>> requests(p);
  for (const NodeId v : b.blocks.front().src_ids) {
    const auto j = static_cast<std::size_t>(owner(v));
    if (j != me && !m_cache.contains(v)) requests[j].push_back(v);
  }
  m_bytes += payload(requests, m_comm.rank());
  std::vector<std::int64_t> offsets;
  const std::vector<NodeId> wanted = alltoallv_lists(m_comm, requests, offsets);
  b.replies.resize(p);
  b.recv_offsets.assign(p + 1, 0);
  for (std::size_t j = 0; j < p; ++j) {
    for (std::int64_t i = offsets[j]; i < offsets[j + 1]; ++i) {
      const float* row = owned_row(wanted[static_cast<std::size_t>(i)]);
      b.replies[j].insert(b.replies[j].end(), row, row + f);
    }
    b.recv_offsets[j + 1] = b.recv_offsets[j] + static_cast<std::int64_t>(requests[j].size() * f);
  }
  m_bytes += payload(b.replies, m_comm.rank());
  b.recv.resize(static_cast<std::size_t>(b.recv_offsets[p]));
  const int tag = 10 + static_cast<int>(batch % 2);  // two batches are in flight at a time
  for (std::size_t j = 0; j < p; ++j) {
    const auto n = static_cast<std::size_t>(b.recv_offsets[j + 1] - b.recv_offsets[j]);
    if (n > 0)
      b.requests.push_back(m_comm.irecv(b.recv.data() + b.recv_offsets[j], n * sizeof(float),
                                        static_cast<int>(j), tag));
  }
  for (std::size_t j = 0; j < p; ++j)
    if (!b.replies[j].empty())
      b.requests.push_back(m_comm.isend(b.replies[j].data(), b.replies[j].size() * sizeof(float),
                                        static_cast<int>(j), tag));
  return b;
}

const kernels::FeatureMatrix<float>& DistributedMiniBatchTrainer::finish(Pending& b) {
  m_comm.wait_all(b.requests);
  const auto p = static_cast<std::size_t>(m_comm.size());
  const auto f = static_cast<std::size_t>(m_num_features);
  const auto me = static_cast<std::size_t>(m_comm.rank());
  const std::vector<NodeId>& inputs = b.blocks.front().src_ids;
  auto& x = std::get<Tensor<float>>(m_x);
  kernels::ensure_shape(m_res, x, static_cast<std::int64_t>(inputs.size()), m_num_features);
  float* rows_out = x.data();
  const bool staged = m_res.device() != kernels::Device::Cpu;
  if (staged) {
    // The previous batch's copy out of m_stage has finished: the step that followed it
    // synchronised (allreduce_gradients); synchronising again here costs nothing and keeps the
    // invariant local.
    m_res.synchronize();
    if (m_stage.bytes() < x.bytes()) m_stage = kernels::PinnedBuffer(m_res, x.bytes());
    rows_out = static_cast<float*>(m_stage.data());
  }
  std::vector<std::size_t> cursor(p);
  for (std::size_t j = 0; j < p; ++j) cursor[j] = static_cast<std::size_t>(b.recv_offsets[j]);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const NodeId v = inputs[i];
    const auto j = static_cast<std::size_t>(owner(v));
    const float* row = nullptr;
    if (j == me) {
      row = owned_row(v);
    } else if (const auto it = m_cache.find(v); it != m_cache.end()) {
      row = m_cache_rows.data() + it->second * f;
    } else {
      row = b.recv.data() + cursor[j];
      cursor[j] += f;
    }
    std::copy(row, row + f, rows_out + i * f);
  }
  if (staged)
    kernels::copy_bytes_async(m_res, x.data(), x.device(), rows_out, kernels::Device::Cpu,
                              x.bytes());
  return m_x;
}

std::vector<nn::Adjacency<float>> DistributedMiniBatchTrainer::upload(
    const std::vector<HostBlock>& blocks) {
  std::vector<nn::Adjacency<float>> graphs;
  if (m_res.device() == kernels::Device::Cpu) {
    for (const HostBlock& blk : blocks) {
      nn::Adjacency<float> a(kernels::CsrView<NodeId, float>{
          blk.indptr.data(), blk.indices.data(), nullptr, blk.num_dst(), blk.num_src()});
      a.source_ids = {blk.src_ids.data(), blk.num_src()};
      graphs.push_back(a);
    }
    return graphs;
  }
  // Every indptr (8-byte entries) first, then every indices and src_ids array (4 bytes): one
  // staging buffer, one copy, every array aligned.
  std::size_t wide = 0, narrow = 0;
  for (const HostBlock& blk : blocks) {
    wide += blk.indptr.size();
    narrow += blk.indices.size() + blk.src_ids.size();
  }
  const std::size_t bytes = wide * sizeof(std::int64_t) + narrow * sizeof(NodeId);
  m_res.synchronize();  // the previous batch's copy out of m_stage_blocks has finished
  if (m_stage_blocks.bytes() < bytes) m_stage_blocks = kernels::PinnedBuffer(m_res, bytes);
  if (m_blocks.bytes() < bytes) m_blocks = kernels::Buffer(m_res, m_res.device(), bytes);
  auto* host64 = static_cast<std::int64_t*>(m_stage_blocks.data());
  auto* host32 = reinterpret_cast<NodeId*>(host64 + wide);
  auto* dev64 = static_cast<std::int64_t*>(m_blocks.data());
  auto* dev32 = reinterpret_cast<NodeId*>(dev64 + wide);
  std::size_t at64 = 0, at32 = 0;
  for (const HostBlock& blk : blocks) {
    std::copy(blk.indptr.begin(), blk.indptr.end(), host64 + at64);
    std::copy(blk.indices.begin(), blk.indices.end(), host32 + at32);
    std::copy(blk.src_ids.begin(), blk.src_ids.end(), host32 + at32 + blk.indices.size());
    nn::Adjacency<float> a(kernels::CsrView<NodeId, float>{dev64 + at64, dev32 + at32, nullptr,
                                                           blk.num_dst(), blk.num_src()});
    a.source_ids = {dev32 + at32 + blk.indices.size(), blk.num_src()};
    graphs.push_back(a);
    at64 += blk.indptr.size();
    at32 += blk.indices.size() + blk.src_ids.size();
  }
  kernels::copy_bytes_async(m_res, m_blocks.data(), m_res.device(), m_stage_blocks.data(),
                            kernels::Device::Cpu, bytes);
  return graphs;
}

const float* DistributedMiniBatchTrainer::owned_row(NodeId original) const {
  return m_dense.data() +
         static_cast<std::size_t>(local(original)) * static_cast<std::size_t>(m_num_features);
}

void DistributedMiniBatchTrainer::fill_cache(std::int64_t budget_bytes) {
  // Global degree of every node (owners know their rows), then the remote nodes of highest
  // degree, as many as fit the budget, fetched once.
  std::vector<NodeId> mine;
  for (std::int64_t r = 0; r < m_rows.num_rows(); ++r)
    mine.push_back(static_cast<NodeId>(m_rows.indptr(r + 1) - m_rows.indptr(r)));
  const std::vector<NodeId> degree = allgather_ids(m_comm, mine);  // by partition id
  const auto row_bytes = static_cast<std::int64_t>(m_num_features) * 4;
  const std::int64_t capacity = row_bytes > 0 ? budget_bytes / row_bytes : 0;
  std::vector<NodeId> remote;
  const std::int64_t begin = m_part.book.begin(m_part.rank), end = m_part.book.end(m_part.rank);
  for (std::size_t v = 0; v < m_old_to_new.size(); ++v) {
    const std::int64_t id = m_old_to_new[v];
    if (id < begin || id >= end) remote.push_back(static_cast<NodeId>(v));
  }
  const auto keep = static_cast<std::size_t>(
      std::min<std::int64_t>(capacity, static_cast<std::int64_t>(remote.size())));
  auto deg = [&](NodeId v) {
    return degree[static_cast<std::size_t>(m_old_to_new[static_cast<std::size_t>(v)])];
  };
  std::partial_sort(remote.begin(), remote.begin() + static_cast<std::ptrdiff_t>(keep),
                    remote.end(),
                    [&](NodeId a, NodeId b) { return deg(a) != deg(b) ? deg(a) > deg(b) : a < b; });
  remote.resize(keep);
  const auto p = static_cast<std::size_t>(m_comm.size());
  const auto f = static_cast<std::size_t>(m_num_features);
  std::vector<std::vector<NodeId>> requests(p);
  for (const NodeId v : remote) requests[static_cast<std::size_t>(owner(v))].push_back(v);
  std::vector<std::int64_t> offsets;
  const std::vector<NodeId> wanted = alltoallv_lists(m_comm, requests, offsets);
  std::vector<std::vector<float>> replies(p);
  for (std::size_t j = 0; j < p; ++j)
    for (std::int64_t i = offsets[j]; i < offsets[j + 1]; ++i) {
      const float* row = owned_row(wanted[static_cast<std::size_t>(i)]);
      replies[j].insert(replies[j].end(), row, row + f);
    }
  std::vector<std::int64_t> row_offsets;
  m_cache_rows = alltoallv_lists(m_comm, replies, row_offsets);
  std::size_t slot = 0;
  for (std::size_t j = 0; j < p; ++j)
    for (const NodeId v : requests[j]) m_cache.emplace(v, slot++);
}

double DistributedMiniBatchTrainer::train_epoch(std::uint64_t epoch) {
  m_bytes = 0;
  const auto n = static_cast<std::int64_t>(m_train.size());
  const std::int64_t b = std::min(m_mb.batch_size, n);
  const auto params = m_model.parameters();
  double loss_sum = 0;
  const std::int64_t batches = batches_per_epoch();
  // One batch ahead: batch + 1 is sampled and its feature rows are on their way while batch
  // computes.
  Pending next = prepare(epoch, 0);
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    Pending current = std::move(next);
    if (batch + 1 < batches) next = prepare(epoch, batch + 1);
    const kernels::FeatureMatrix<float>& x = finish(current);
    const std::vector<NodeId>& mine = current.seeds;
    const std::vector<HostBlock>& blocks = current.blocks;
    const std::int64_t whole = std::min(b, n - batch * b);  // the batch over all ranks
    double loss = 0;
    if (mine.empty()) {
      for (auto* p : params) kernels::fill(m_res, p->grad.span(), 0.f);
    } else {
      const std::vector<nn::Adjacency<float>> graphs = upload(blocks);
      std::vector<std::int32_t> labels;
      for (const NodeId v : mine) labels.push_back(m_part.labels.data()[local(v)]);
      const auto label_t = Tensor<std::int32_t>::from_host(m_res, labels);
      if (m_iota.numel() < b) {  // once: a rank's share of a batch is at most the batch
        std::vector<NodeId> iota(static_cast<std::size_t>(b));
        std::iota(iota.begin(), iota.end(), NodeId{0});
        m_iota = Tensor<NodeId>::from_host(m_res, iota);
      }
      const kernels::Span<const NodeId> rows{m_iota.data(), static_cast<std::int64_t>(mine.size())};
      const nn::Context ctx{&m_res, /*training=*/true, m_config.seed,
                            epoch << 32 | static_cast<std::uint64_t>(batch), 0};
      const Tensor<float>& logits = m_model.forward(ctx, graphs, x);
      kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
      loss = kernels::log_softmax_nll(m_res, logits.view(), label_t.span(), rows, whole);
      kernels::log_softmax_nll_backward(m_res, logits.view(), label_t.span(), rows,
                                        m_dlogits.view(), whole);
      m_model.backward(ctx, graphs, m_dlogits);
    }
    const double total = allreduce_gradients(m_res, m_data_comm, params, loss, m_flat);
    m_optimizer.step(m_res);
    loss_sum += total * static_cast<double>(whole);
  }
  m_res.synchronize();
  return loss_sum / static_cast<double>(n);
}

DistributedMiniBatchTrainer::Evaluation DistributedMiniBatchTrainer::evaluate() {
  return m_full.evaluate();
}

void DistributedMiniBatchTrainer::add_comm_stats(EpochStats& s) {
  s.exchange_bytes = m_comm.sum(m_bytes);
}

DistributedRun train_distributed(const kernels::Resources& res, Comm& comm,
                                 const std::filesystem::path& dir, const TrainConfig& config,
                                 const DistributedOptions& options, const EpochCallback& on_epoch) {
  HALO_EXPECTS(config.epochs >= 1, "train: epochs must be >= 1");
  const partition::PartitionMeta meta = partition::read_partition_meta(dir);
  if (meta.book.num_parts() != comm.size())
    throw IoError((dir / "meta.json").string() + ": the partition has " +
                  std::to_string(meta.book.num_parts()) + " parts but " +
                  std::to_string(comm.size()) + " ranks run; start one rank per part (mpiexec -n " +
                  std::to_string(meta.book.num_parts()) + ")");
  const partition::Part part = partition::read_part(res, dir, comm.rank());  // on the host
  // On GPUs the device traffic (halo rows, gradients) goes over NCCL, bootstrapped over `comm`;
  // without NCCL in the build it is staged through host memory over `comm`.
  std::unique_ptr<Comm> nccl;
  if (res.device() == kernels::Device::Cuda) {
    if (nccl_available())
      nccl = make_nccl_comm(comm, res);
    else
      HALO_LOG_WARN("train: built without NCCL: GPU ranks exchange through host memory over MPI");
  }
  DistributedRun run{make_model(res, meta.num_features, meta.num_classes, config), {}};
  if (options.mini_batch) {
    DistributedMiniBatchTrainer trainer(res, comm, part, config, *options.mini_batch, run.model,
                                        nccl.get());
    run.result = run_epochs(res, trainer, config.epochs, run.model, on_epoch);
  } else {
    DistributedTrainer trainer(res, comm, part, config, run.model, options.overlap, nccl.get());
    run.result = run_epochs(res, trainer, config.epochs, run.model, on_epoch);
  }
  run.result.world_size = comm.size();
  return run;
}

}  // namespace halo::runtime
