#pragma once
// The dataset, model and mode flags of a training run: one definition shared by `halo train`
// and `halo plan`, so the plan of a command line is the plan of the same run.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <halo/runtime/runtime.hpp>
#include <halo/tools/halo/dataset_options.hpp>

namespace halo::cli {

/// What a `halo train` command line says about the run (its outputs apart).
struct TrainOptions {
  DatasetOptions data;
  std::string model = "gcn";
  int layers = 2;
  std::int64_t hidden = 16;
  float dropout = 0.5f;
  double lr = 0.01;
  double weight_decay = 5e-4;
  int epochs = 200;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string device = "cpu";
  bool no_normalize = false;
  bool normalize = false;  // --normalize-features: a heterogeneous dataset's rows L1-normalised
  std::string partitions;
  bool no_overlap = false;
  std::string mode = "full-graph";
  runtime::MiniBatchConfig mb;
  /// --fanouts as given: numbers per layer (parsed into mb.fanouts), or for a heterogeneous
  /// dataset also `rel=N` pairs (sampler::parse_hetero_fanouts, once the relations are known).
  std::string fanouts = "25,10";
  /// --eval-fanouts as given (parsed into mb.eval_fanouts); empty: the exact evaluation.
  std::string eval_fanouts;
  std::string cache_policy = "degree";
  std::string memory_budget;  // --memory-budget as given (empty: the machine's default)
  // Heterogeneous datasets (typed directories): --split, --num-bases, --featureless, and which
  // of the run's flags were given (the others take the heterogeneous task's defaults).
  int split = 0;
  int num_bases = 0;
  std::string featureless = "auto";
  int heads = 4;
  std::vector<std::string> given;
  // --task link (temporal datasets): the snapshots, the window, negatives and the split.
  std::string task = "node";
  datasets::SnapshotConfig snapshots;
  runtime::LinkPredictionConfig link;
  std::string select_by = "map";  // --select-by
  std::vector<double> link_split = {0.7, 0.1};
};

/// A model of node classification (`--model NAME`, nn::ModelKind) and the values its published
/// set-up gives the flags a run does not (unset: the flag's own default). A model with `heads`
/// takes --heads. One line per model in node_models().
struct NodeModel {
  std::string name;
  std::optional<std::int64_t> hidden;
  std::optional<int> heads;
  std::optional<float> dropout;
  std::optional<double> lr;
  std::optional<double> weight_decay;
};
const std::vector<NodeModel>& node_models();
/// The entry of node_models() named `name`; nullptr when there is none.
const NodeModel* find_node_model(const std::string& name);

/// Registers the run's flags on `sub`, bound to `o` (which must outlive the parse): the dataset
/// flags, --model ... --seed, --threads, --device, --no-normalize-features, --mode and the
/// mini-batch flags, --partitions, --no-overlap, and the heterogeneous datasets' --split,
/// --num-bases, --featureless. Returns the checks across these flags (a flag of one mode
/// refused in the other, ...) that throw CLI::ValidationError and record o.given: call it from
/// the subcommand's parse callback, so a violation is a usage error (exit code 2).
std::function<void()> add_train_options(CLI::App* sub, TrainOptions& o);

/// Whether the command line gave `flag` (one of the run's flags).
bool was_given(const TrainOptions& o, const char* flag);

/// Whether `o` trains on a heterogeneous dataset (--dataset a typed directory, docs/formats.md).
bool is_hetero_run(const TrainOptions& o);

/// UsageError unless `o` is fit for a homogeneous graph: the heterogeneous datasets' flags
/// (--split, --num-bases, --featureless) and --model rgcn are refused.
void check_homogeneous_run(const TrainOptions& o);

/// UsageError unless `o` is fit for its --task: link needs a temporal model (--model
/// evolvegcn-o or gcrn) and snapshots and refuses the static models' flags; node refuses the
/// temporal models and the link flags.
void check_task(const TrainOptions& o);

/// The runtime::TrainConfig of `o`.
runtime::TrainConfig train_config(const TrainOptions& o);

}  // namespace halo::cli
