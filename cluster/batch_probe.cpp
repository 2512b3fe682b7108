#include <algorithm>
#include <chrono>
#include <span>
#include <utility>

#include <halo/cluster/batch_probe.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/runtime/data/batches.hpp>
#include <halo/runtime/data/feature_store.hpp>
#include <halo/sampler/envelope.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

namespace halo::cluster {

namespace {

using kernels::NodeId;

/// Batches to sample: those of `seeds` (cut in batches of batch_size) numbered `batches`, drawn
/// as epoch `epoch`'s.
struct Batches {
  std::span<const NodeId> seeds;
  std::vector<std::int64_t> batches;
  std::uint64_t epoch = 0;
};

/// Samples `envelope` (the run's envelope probe: largest) and `counted` (the means) with one
/// sampler.
BatchProbe probe(const kernels::Resources& res, const datasets::Graph& graph,
                 std::int64_t batch_size, const runtime::MiniBatchConfig& mb, std::uint64_t seed,
                 const Batches& envelope, const Batches& counted,
                 const std::vector<NodeId>& cached) {
  BatchProbe out;
  if (batch_size <= 0) return out;
  sampler::NeighborSampler s(res, graph, batch_size, {mb.fanouts, mb.replace, seed});
  out.mean.resize(mb.fanouts.size());
  const auto take = [&](const Batches& from, std::int64_t b) {
    const auto n = static_cast<std::int64_t>(from.seeds.size());
    const std::int64_t begin = b * batch_size, end = std::min(n, begin + batch_size);
    return s.sample(res, {from.seeds.data() + begin, end - begin}, from.epoch,
                    static_cast<std::uint64_t>(b));
  };
  for (const std::int64_t b : envelope.batches) take(envelope, b);
  out.largest = s.largest();
  for (const std::int64_t b : counted.batches) {
    const sampler::MiniBatch& batch = take(counted, b);
    ++out.batches;
    for (std::size_t l = 0; l < batch.blocks.size(); ++l) {
      const sampler::Block& k = batch.blocks[l];
      out.mean[l].dst += static_cast<double>(k.num_dst());
      out.mean[l].edges += static_cast<double>(k.csr.num_edges());
      out.mean[l].src += static_cast<double>(k.num_src());
    }
    const kernels::Span<const NodeId> in = batch.input_nodes;
    for (std::int64_t i = 0; i < in.size; ++i)
      if (!std::binary_search(cached.begin(), cached.end(), in.data[i])) ++out.uncached_rows;
  }
  if (out.batches > 0) {
    const auto k = static_cast<double>(out.batches);
    for (BatchProbe::Layer& l : out.mean) l = {l.dst / k, l.edges / k, l.src / k};
    out.uncached_rows /= k;
  }
  return out;
}

/// first, first + 1, .., last - 1.
std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> v;
  for (std::int64_t b = first; b < last; ++b) v.push_back(b);
  return v;
}

}  // namespace

StoreProbe probe_store_batches(const std::filesystem::path& dir, const runtime::TrainConfig& config,
                               std::int64_t cache_bytes, std::int64_t samples) {
  HALO_EXPECTS(config.mini_batch.has_value(), "batch probe: a mini-batch run expected");
  const runtime::MiniBatchConfig& mb = *config.mini_batch;
  const kernels::Resources res(kernels::Device::Cpu);
  datasets::StoreOpenOptions open;
  open.mapped = true;
  open.verify_checksums = false;
  open.features = false;
  datasets::Dataset ds = datasets::open_store(res, dir, open);
  const datasets::StoreCounts counts = datasets::read_store_counts(dir);
  // A store of S (symmetric, unweighted, as many entries as S) is sampled as the run samples it,
  // through its file; another is symmetrised in memory, as the run does.
  const bool is_s =
      counts.symmetric && !counts.weighted && counts.num_edges == counts.training_edges;
  const datasets::Graph s =
      is_s ? std::move(ds.graph) : partition::partitioning_graph(res, ds.graph);
  // As in the run: the mapped graph's pages are dropped from this process as the sampler's
  // checks walk it (the rows themselves are read with pread).
  const datasets::MappedPageTrimmer trim(datasets::mapped_ranges(s), std::chrono::milliseconds(50));
  const std::int64_t n = s.num_rows();
  const std::int64_t* indptr = s.indptr.data();
  const std::int64_t row_bytes = std::max<std::int64_t>(1, counts.num_features * 4);
  const std::vector<NodeId> cached = runtime::hottest_rows(
      n, cache_bytes / row_bytes, [indptr](NodeId v) { return indptr[v + 1] - indptr[v]; });
  StoreProbe out;
  // Training: the run's envelope probe samples epoch 0's first batches, its first epoch is
  // epoch 1 (its first batches: a sample, the order being shuffled).
  const std::vector<NodeId> train = ds.train_idx.to_vector(res);
  {
    std::vector<std::uint64_t> keys;
    std::vector<std::int64_t> order;
    std::vector<NodeId> seeds[2];
    for (std::uint64_t epoch : {0, 1}) {
      runtime::epoch_order(config.seed, epoch, train, keys, order);
      for (const std::int64_t i : order) seeds[epoch].push_back(train[static_cast<std::size_t>(i)]);
    }
    const auto num = static_cast<std::int64_t>(train.size());
    const std::int64_t batches = runtime::epoch_batches(mb, num);
    out.train = probe(res, s, std::min(mb.batch_size, num), mb, config.seed,
                      {seeds[0], range(0, std::min(batches, runtime::kProbeBatches)), 0},
                      {seeds[1], range(0, std::min(batches, samples)), 1}, cached);
  }
  if (!mb.eval_fanouts.empty()) {
    // The evaluation: training, validation and test nodes in id order, every evaluation
    // epoch 0's draws; `samples` batches spread over them.
    std::vector<NodeId> seeds = train;
    for (const kernels::Tensor<NodeId>* idx : {&ds.val_idx, &ds.test_idx}) {
      const std::vector<NodeId> v = idx->to_vector(res);
      seeds.insert(seeds.end(), v.begin(), v.end());
    }
    std::sort(seeds.begin(), seeds.end());
    runtime::MiniBatchConfig eval = mb;
    eval.fanouts = mb.eval_fanouts;
    const auto num = static_cast<std::int64_t>(seeds.size());
    const std::int64_t batches = runtime::epoch_batches(eval, num);
    std::vector<std::int64_t> spread;
    const std::int64_t k = std::min(batches, samples);
    for (std::int64_t i = 0; i < k; ++i) spread.push_back(i * batches / k);
    out.eval = probe(res, s, std::min(mb.batch_size, num), eval, config.seed,
                     {seeds, range(0, std::min(batches, runtime::kProbeBatches)), 0},
                     {seeds, spread, 0}, cached);
  }
  return out;
}

}  // namespace halo::cluster
