#pragma once
// Shards: the data one rank trains on, homogeneous (a partition::Part) or heterogeneous (typed
// node and relation rows), in one process (the whole dataset as the one part, over a SelfComm)
// or as one part of a partition; and the host-side preparation of their features.

#include <filesystem>
#include <memory>
#include <string>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime {

/// One rank's part of the training graph and the communicator of the ranks: what a Trainer
/// trains on. One process is the one-part case over a SelfComm.
struct Shard {
  /// The Trainer takes the part's features (FeatureStore): a shard trains once.
  partition::Part part;
  std::int64_t num_features = 0;
  std::int64_t num_edges = 0;  // stored entries of the input graph (before symmetrisation)
  Comm* comm = nullptr;
  std::unique_ptr<Comm> own_comm;  // when the shard made its communicator (local_shard)
  std::string dataset;
  /// What a checkpoint of a run on this shard must match: "partition meta.json fnv1a64 0x..."
  /// (open_shard), or "dataset NAME fnv1a64 0x..." over the graph, labels and splits and the
  /// feature width (local_shard).
  std::string identity;
};

/// The whole of `ds` as the one part of a one-part partition, over a SelfComm. Moves `ds`'s
/// features, labels and splits (partition::make_local_part). Host tensors.
Shard local_shard(const kernels::Resources& res, datasets::Dataset&& ds);

/// Rank comm.rank()'s group of parts of the K-part partition in `dir` (any comm.size() from 1
/// to K: partition::read_part_group; one part each when K ranks run, the whole graph in original
/// order on one), checked against the other ranks: one all-reduce that fails on every rank
/// unless all opened the same meta.json (its checksum). Collective. halo::IoError when more
/// ranks than parts run or a part is missing or damaged.
/// `options`: how the part's feature rows are read (partition::read_part).
Shard open_shard(const kernels::Resources& res, Comm& comm, const std::filesystem::path& dir,
                 const partition::PartReadOptions& options = {});

/// One rank's part of a heterogeneous graph: `graph` holds the part's local rows
/// (partition::HeteroPart) and `layout` its owned counts and exchange lists. One process is the
/// one-part case over a SelfComm (local_hetero_shard: every node owned, nothing exchanged).
struct HeteroShard {
  datasets::HeteroGraph graph;
  partition::HeteroPartLayout layout;
  Comm* comm = nullptr;
  std::unique_ptr<Comm> own_comm;
  std::string dataset;
  /// What a checkpoint of a run on this shard must match, as Shard::identity (over the types,
  /// relations, labels and splits in one process).
  std::string identity;
};

/// `g` as the one part of a one-part partition (partition::make_local_hetero_layout), over a
/// SelfComm.
HeteroShard local_hetero_shard(datasets::HeteroGraph&& g);

/// Part comm.rank() of the heterogeneous partition in `dir`, checked as open_shard does (one
/// all-reduce of meta.json's checksum). Collective. halo::IoError for a homogeneous partition,
/// a number of ranks other than its parts', or a missing or damaged part.
HeteroShard open_hetero_shard(const kernels::Resources& res, Comm& comm,
                              const std::filesystem::path& dir);

/// A CPU Resources with res's thread count: where host-only steps (datasets::, preprocessing,
/// set-up) of a run on res's device take place.
kernels::Resources host_resources(const kernels::Resources& res);

/// A copy of `features` on res's device, sparse rows divided by their L1 norm when `normalize`
/// (dense ones are used as given): what the first layer reads.
kernels::FeatureMatrix<float> prepare_features(const kernels::Resources& res,
                                               const kernels::FeatureMatrix<float>& features,
                                               bool normalize);

}  // namespace halo::runtime
