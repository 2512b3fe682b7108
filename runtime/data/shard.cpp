// Shards: the data a rank trains on (one process: the whole dataset as a one-part partition;
// several ranks: each its part of a partition), homogeneous or heterogeneous.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/log.hpp>
#include <halo/partition/formats/part_group.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/data/shard.hpp>

namespace halo::runtime {

kernels::Resources host_resources(const kernels::Resources& res) {
  return kernels::Resources(kernels::Device::Cpu, res.cpu_exec().num_threads);
}

kernels::FeatureMatrix<float> prepare_features(const kernels::Resources& res,
                                               const kernels::FeatureMatrix<float>& features,
                                               bool normalize) {
  const kernels::Resources host = host_resources(res);
  auto f = std::visit([&](const auto& m) -> kernels::FeatureMatrix<float> { return m.clone(host); },
                      features);
  if (normalize && std::holds_alternative<kernels::CsrMatrix<std::int32_t, float>>(f))
    datasets::row_normalize(host, f);
  if (res.device() == kernels::Device::Cpu) return f;
  return std::visit(
      [&](const auto& m) -> kernels::FeatureMatrix<float> { return m.copy_to(res, res.device()); },
      f);
}

Shard local_shard(const kernels::Resources& res, datasets::Dataset&& ds) {
  Shard s;
  s.dataset = ds.name;
  if (!ds.graph.values.empty())
    HALO_LOG_WARN("train: '" + ds.name + "' has edge weights; the models train on its structure");
  s.num_features = ds.num_features();
  s.num_edges = ds.graph.num_edges();
  s.part = partition::make_local_part(host_resources(res), std::move(ds));
  // The dataset's identity for checkpoints: its name, structure, labels, splits and width.
  const partition::Part& p = s.part;
  std::uint64_t h = partition::fnv1a64(&s.num_features, sizeof s.num_features);
  // 64 MiB at a time, a mapped graph's pages dropped after each (a store's graph larger than
  // memory must not become resident to be hashed); the same hash as one pass.
  const datasets::MappedPageTrimmer trim(datasets::mapped_ranges(p.graph),
                                         std::chrono::milliseconds(0));
  const auto mix = [&](const auto& t) {
    constexpr std::size_t kBlock = std::size_t{64} << 20;
    const auto* bytes = reinterpret_cast<const unsigned char*>(t.data());
    for (std::size_t at = 0; at < t.bytes(); at += kBlock) {
      h = partition::fnv1a64(bytes + at, std::min(kBlock, t.bytes() - at), h);
      if (t.mapped()) trim.trim();
    }
  };
  mix(p.graph.indptr), mix(p.graph.indices), mix(p.labels);
  mix(p.train_idx), mix(p.val_idx), mix(p.test_idx);
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(h));
  s.identity = "dataset " + s.dataset + " fnv1a64 " + hex;
  s.own_comm = std::make_unique<SelfComm>();
  s.comm = s.own_comm.get();
  return s;
}

namespace {
/// The checks open_shard and open_hetero_shard share: a group of parts per rank (one part per
/// rank where `elastic` is false), the same meta.json.
void check_partition_ranks(const partition::PartitionMeta& meta, Comm& comm,
                           const std::filesystem::path& dir, bool elastic) {
  const std::int32_t k = meta.book.num_parts();
  if (elastic ? comm.size() > k : comm.size() != k)
    throw IoError((dir / "meta.json").string() + ": the partition has " + std::to_string(k) +
                  " parts but " + std::to_string(comm.size()) + " ranks run; " +
                  (elastic ? "start 1 to " + std::to_string(k) + " ranks (mpiexec -n R)"
                           : "a heterogeneous partition trains on one rank per part (mpiexec -n " +
                                 std::to_string(k) + ")"));
  // The one collective of the start-up: every rank read the same meta.json.
  const auto mine = static_cast<std::int64_t>(meta.checksum >> 1);
  std::vector<std::int64_t> v = {mine, -mine};
  comm.allreduce(kernels::Span<std::int64_t>(v.data(), 2), ReduceOp::Max);
  if (v[0] != mine || -v[1] != mine)
    throw IoError((dir / "meta.json").string() +
                  ": the ranks opened different partitions (meta.json differs between ranks)");
}
}  // namespace

Shard open_shard(const kernels::Resources& res, Comm& comm, const std::filesystem::path& dir,
                 const partition::PartReadOptions& options) {
  const partition::PartitionMeta meta = partition::read_partition_meta(dir);
  if (meta.hetero)
    throw IoError((dir / "meta.json").string() +
                  ": a heterogeneous partition (train it with --model rgcn or hgt)");
  check_partition_ranks(meta, comm, dir, /*elastic=*/true);
  Shard s;
  s.dataset = meta.dataset;
  s.part =
      partition::read_part_group(host_resources(res), dir, meta, comm.size(), comm.rank(), options);
  s.num_features = meta.num_features;
  s.num_edges = meta.num_edges;
  s.comm = &comm;
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(meta.checksum));
  s.identity = std::string("partition meta.json fnv1a64 ") + hex;
  return s;
}

HeteroShard open_hetero_shard(const kernels::Resources& res, Comm& comm,
                              const std::filesystem::path& dir) {
  const partition::PartitionMeta meta = partition::read_partition_meta(dir);
  if (!meta.hetero)
    throw IoError((dir / "meta.json").string() +
                  ": a homogeneous partition (--model rgcn and hgt need one of a typed directory)");
  check_partition_ranks(meta, comm, dir, /*elastic=*/false);
  partition::HeteroPart part =
      partition::read_hetero_part(host_resources(res), dir, comm.rank(), &meta);
  HeteroShard s;
  s.dataset = meta.dataset;
  s.graph = std::move(part.graph);
  s.graph.split = meta.hetero->split;
  s.layout = std::move(part.layout);
  s.comm = &comm;
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(meta.checksum));
  s.identity = std::string("partition meta.json fnv1a64 ") + hex;
  return s;
}

HeteroShard local_hetero_shard(datasets::HeteroGraph&& g) {
  HeteroShard s;
  s.dataset = g.name;
  // The dataset's identity for checkpoints: its types' sizes and widths, relations, labels and
  // splits.
  std::uint64_t h = partition::fnv1a64(&g.target_type, sizeof g.target_type);
  const auto mix = [&h](const auto& t) { h = partition::fnv1a64(t.data(), t.bytes(), h); };
  for (const datasets::NodeType& t : g.node_types) {
    const std::int64_t v[2] = {t.num_nodes, kernels::num_cols(t.features)};
    h = partition::fnv1a64(v, sizeof v, h);
  }
  for (const datasets::Relation& r : g.relations) {
    const std::int32_t v[2] = {r.src_type, r.dst_type};
    h = partition::fnv1a64(v, sizeof v, h);
    mix(r.adj.indptr), mix(r.adj.indices);
  }
  mix(g.labels), mix(g.train_idx), mix(g.val_idx), mix(g.test_idx);
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(h));
  s.identity = "dataset " + g.name + " fnv1a64 " + hex;
  s.layout = partition::make_local_hetero_layout(kernels::Resources(kernels::Device::Cpu, 1), g);
  s.graph = std::move(g);
  s.own_comm = std::make_unique<SelfComm>();
  s.comm = s.own_comm.get();
  return s;
}

}  // namespace halo::runtime
