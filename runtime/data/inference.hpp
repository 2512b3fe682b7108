#pragma once
// Using a trained model: the full-graph pass in evaluation mode on a shard (one process or one
// rank per part), and the outputs of every rank gathered in original node order.

#include <cstdint>
#include <memory>
#include <vector>

#include <halo/nn/model.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/data/shard.hpp>

namespace halo::runtime {

class FeatureStore;
class HaloExchange;

/// Which split a node is in.
enum class Split : std::int8_t { None = 0, Train = 1, Val = 2, Test = 3 };

/// The forward pass Trainer::evaluate runs, without the training: the same graph (GCN
/// normalisation or SAGE mean, HaloExchange with several ranks), the same prepared features
/// (row normalisation when `normalize_features`), evaluation mode (no dropout). So the logits
/// are those the training run scored, and its accuracies are reproduced exactly.
/// Takes the shard's features (FeatureStore) and keeps references to res and shard. Passes are
/// collective over shard.comm with several ranks; not thread-safe.
class Inference {
 public:
  Inference(const kernels::Resources& res, Shard& shard, nn::ModelKind kind,
            bool normalize_features);
  ~Inference();
  Inference(const Inference&) = delete;
  Inference& operator=(const Inference&) = delete;

  /// The representation after convolution `layer` (1-based; model.config().num_layers: the
  /// logits) of every owned node: num_owned x model.width(layer), on res's device, owned by the
  /// model (valid until its next pass). LogicError when the model does not fit the shard
  /// (kind, feature width) or the layer is out of range.
  const kernels::Tensor<float>& run(nn::Model<float>& model, int layer);

  /// The logits of `seeds` on sampled neighbourhoods instead of the full graph: blocks as
  /// mini-batch training samples them (`mb`'s fan-outs, one per layer, -1: all neighbours;
  /// batch size; replacement), keyed by `seed`, evaluation mode. `seeds` are partition ids of
  /// the whole graph, the same list on every rank, without repeats. Returns this rank's owned
  /// seeds (local ids) and their logits (host, row-major), in batch order. Collective.
  struct SampledRows {
    std::vector<std::int64_t> local;
    std::vector<float> rows;
    std::int64_t cols = 0;
  };
  SampledRows run_sampled(nn::Model<float>& model, std::vector<kernels::NodeId> seeds,
                          const MiniBatchConfig& mb, std::uint64_t seed);

  /// The nodes of `split` over all ranks (every node for Split::None), as partition ids,
  /// ascending: the same list on every rank. Collective.
  std::vector<kernels::NodeId> split_nodes(Split split) const;

 private:
  const kernels::Resources& m_res;
  Shard& m_shard;
  nn::ModelKind m_kind;
  std::unique_ptr<HaloExchange> m_graph;
  std::unique_ptr<FeatureStore> m_features;
};

/// Rows of nodes gathered from every rank, in ascending original id.
struct GatheredNodes {
  std::int64_t num_nodes = 0;  // of the whole graph
  std::int64_t cols = 0;
  std::vector<kernels::NodeId> ids;  // original ids of the rows, ascending
  std::vector<float> rows;           // ids.size() x cols, row-major
  std::vector<std::int32_t> labels;  // per row
  std::vector<Split> split;          // per row
  /// num_nodes entries: the row of original id v, -1 when v was not gathered.
  std::vector<std::int64_t> position;
};

/// Gathers `rows` (host, rows of the owned nodes `local`, local ids, cols wide) with their
/// labels and splits from every rank (an allgatherv: every rank holds the result for a moment).
/// Collective over shard.comm.
GatheredNodes gather_nodes(const Shard& shard, const std::vector<std::int64_t>& local,
                           const std::vector<float>& rows, std::int64_t cols);

/// The same for every owned node: `owned` is num_owned x cols on res's device (a pass of
/// Inference::run); the result holds every node of the graph, so rows are in node id order.
GatheredNodes gather_nodes(const kernels::Resources& res, const Shard& shard,
                           const kernels::Tensor<float>& owned);

/// Classification scores of `predicted` against `labels` (same length; entries whose label is
/// negative are skipped): accuracy and macro-F1 over the `num_classes` classes (a class with
/// neither true nor predicted nodes is left out of the mean). NaN when nothing is labelled.
struct Scores {
  std::int64_t labelled = 0;
  double accuracy = 0;
  double macro_f1 = 0;
};
Scores score(const std::vector<std::int32_t>& predicted, const std::vector<std::int32_t>& labels,
             std::int32_t num_classes);

/// The arg-max of each row of a rows x cols matrix (the first of equal maxima, as
/// kernels::count_correct counts it).
std::vector<std::int32_t> argmax_rows(const std::vector<float>& m, std::int64_t cols);

/// Each row of a rows x cols logits matrix replaced by its softmax, in place.
void softmax_rows(std::vector<float>& m, std::int64_t cols);

}  // namespace halo::runtime
