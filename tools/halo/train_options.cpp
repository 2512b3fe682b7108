// The flags of a training run, shared by `halo train` and `halo plan`.
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/store/csr_builder.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_hetero.hpp>
#include <halo/tools/halo/train_options.hpp>

namespace halo::cli {

bool was_given(const TrainOptions& o, const char* flag) {
  return std::find(o.given.begin(), o.given.end(), flag) != o.given.end();
}

const std::vector<NodeModel>& node_models() {
  static const std::vector<NodeModel> models = {
      {"gcn", {}, {}, {}, {}, {}},
      {"sage", {}, {}, {}, {}, {}},
      {"gat", 8, 8, 0.6f, 0.005, 5e-4},  // Velickovic et al. 2018: 8 heads x 8, Cora's set-up
  };
  return models;
}

const NodeModel* find_node_model(const std::string& name) {
  for (const NodeModel& m : node_models())
    if (m.name == name) return &m;
  return nullptr;
}

bool is_hetero_run(const TrainOptions& o) {
  if (!o.partitions.empty()) return partition::read_partition_meta(o.partitions).hetero.has_value();
  return datasets::is_hetero_dataset(o.data.dataset);
}

void check_homogeneous_run(const TrainOptions& o) {
  const NodeModel* model = find_node_model(o.model);
  for (const char* flag : {"--split", "--num-bases", "--featureless", "--heads"})
    if (was_given(o, flag) && !(flag == std::string("--heads") && model && model->heads))
      throw UsageError(std::string(flag) +
                       ": applies to heterogeneous datasets (typed directories)");
  if (o.model == "rgcn" || o.model == "hgt")
    throw UsageError("--model " + o.model +
                     ": needs a heterogeneous dataset (a typed directory, "
                     "docs/formats.md, or its partition)");
}

void check_task(const TrainOptions& o) {
  const bool temporal_model = o.model == "evolvegcn-o" || o.model == "gcrn";
  const NodeModel* node_model = find_node_model(o.model);
  if (was_given(o, "--heads") && o.model != "hgt" && !(node_model && node_model->heads)) {
    std::string takes = "hgt";
    for (const NodeModel& m : node_models())
      if (m.heads) takes += ", " + m.name;
    throw UsageError("--heads: applies to --model " + takes);
  }
  // HGT trains heterogeneous datasets, whose --hidden default is HeteroDefaults'.
  const std::int64_t hidden = was_given(o, "--hidden") ? o.hidden : HeteroDefaults::kHidden;
  if (o.model == "hgt" && hidden % o.heads != 0)
    throw UsageError("--heads " + std::to_string(o.heads) + ": must divide --hidden " +
                     std::to_string(hidden) + " (every HGT layer is --hidden wide, split " +
                     "evenly among the heads)");
  if (o.task == "node") {
    if (temporal_model)
      throw UsageError("--model " + o.model + ": a temporal model, for --task link");
    for (const char* flag : {"--window", "--negatives", "--link-split", "--select-by",
                             "--snapshots", "--snapshot-window", "--window-snapshots", "--columns"})
      if (was_given(o, flag)) throw UsageError(std::string(flag) + ": applies to --task link");
    return;
  }
  if (was_given(o, "--model") && !temporal_model)
    throw UsageError("--model " + o.model + ": --task link takes --model evolvegcn-o or gcrn");
  if (!wants_snapshots(o.snapshots))
    throw UsageError("--task link: needs --snapshots N or --snapshot-window SECONDS");
  if (!(o.link_split[0] > 0 && o.link_split[0] + o.link_split[1] < 1))
    throw UsageError("--link-split: expected TRAIN,VAL with TRAIN > 0 and TRAIN + VAL < 1");
  for (const char* flag : {"--layers", "--dropout", "--features", "--split", "--num-bases",
                           "--heads", "--featureless"})
    if (was_given(o, flag))
      throw UsageError(std::string(flag) + ": not supported with --task link");
  if (o.mode != "full-graph")
    throw UsageError("--mode " + o.mode + ": not supported with --task link");
  if (o.device != "cpu") throw UsageError("--device " + o.device + ": --task link runs on the CPU");
  if (!o.partitions.empty() && o.model == "gcrn")
    throw UsageError(
        "--partitions: distributed --task link trains --model evolvegcn-o (GCRN's per-node "
        "state would have to follow the rows that migrate between snapshots)");
}

runtime::TrainConfig train_config(const TrainOptions& o) {
  runtime::TrainConfig config;
  if (o.task == "link") {
    config.link = o.link;
    config.link.model.kind =
        nn::parse_temporal_kind(o.model == "gcrn" ? o.model : std::string("evolvegcn-o"));
    if (was_given(o, "--hidden")) config.link.model.hidden = o.hidden;
    config.link.train_fraction = o.link_split[0];
    config.link.val_fraction = o.link_split[1];
    config.link.select_by = runtime::parse_link_select(o.select_by);
    config.epochs = o.epochs;
    config.lr = o.lr;
    config.weight_decay = o.weight_decay;
    config.seed = o.seed;
    return config;
  }
  config.model.kind = nn::parse_model_kind(o.model);
  // The model's published set-up for the flags not given.
  const NodeModel* m = find_node_model(o.model);
  const auto pick = [&](const char* flag, auto given, const auto& published) {
    return was_given(o, flag) || !published ? given : *published;
  };
  config.model.num_layers = o.layers;
  config.model.hidden = m ? pick("--hidden", o.hidden, m->hidden) : o.hidden;
  config.model.dropout = m ? pick("--dropout", o.dropout, m->dropout) : o.dropout;
  if (m && m->heads) config.model.heads = pick("--heads", o.heads, m->heads);
  config.epochs = o.epochs;
  config.lr = m ? pick("--lr", o.lr, m->lr) : o.lr;
  config.weight_decay =
      m ? pick("--weight-decay", o.weight_decay, m->weight_decay) : o.weight_decay;
  config.seed = o.seed;
  config.memory_budget = datasets::default_memory_budget();
  if (!o.memory_budget.empty())  // checked when parsed
    config.memory_budget = static_cast<std::size_t>(parse_bytes(o.memory_budget).value_or(0));
  config.normalize_features = !o.no_normalize;
  config.overlap = !o.no_overlap;
  if (o.mode == "mini-batch") {
    config.mini_batch = o.mb;
    config.mini_batch->cache_policy = runtime::parse_cache_policy(o.cache_policy);
  }
  return config;
}

std::function<void()> add_train_options(CLI::App* sub, TrainOptions& o) {
  add_dataset_options(sub, o.data);
  std::vector<std::string> models;
  for (const NodeModel& m : node_models()) models.push_back(m.name);
  for (const char* m : {"rgcn", "hgt", "evolvegcn-o", "gcrn"}) models.emplace_back(m);
  sub->add_option("--model", o.model,
                  "Model kind (node classification's take their published set-up for the "
                  "flags not given, docs/cli.md)")
      ->check(CLI::IsMember(models))
      ->capture_default_str();
  sub->add_option("--split", o.split,
                  "Heterogeneous datasets: the split splits/{train,val,test}_K.txt to use "
                  "(default: the smallest K)")
      ->check(integer_range(0, 1000000));
  sub->add_option("--num-bases", o.num_bases,
                  "R-GCN: basis matrices the relation weights are combined from (0 = one weight "
                  "per relation)")
      ->check(integer_range(0, 4096))
      ->capture_default_str();
  sub->add_option("--heads", o.heads,
                  "Attention heads: HGT's (they must divide --hidden: every HGT layer is --hidden "
                  "wide, a linear classifier gives the logits), or a node model's hidden heads "
                  "(each --hidden wide, concatenated)")
      ->check(integer_range(1, 64))
      ->capture_default_str();
  sub->add_option("--featureless", o.featureless,
                  "Heterogeneous datasets: the input of a node type without features: embedding "
                  "(a learnable row per node, updated by SparseAdam), zero (represented by what "
                  "it aggregates) or auto (embedding for a type with fewer nodes than the target "
                  "type, zero for the others)")
      ->check(CLI::IsMember({"embedding", "zero", "auto"}))
      ->capture_default_str();
  sub->add_option("--layers", o.layers, "Number of graph convolutions")
      ->check(integer_range(1, 16))
      ->capture_default_str();
  sub->add_option("--hidden", o.hidden, "Hidden layer width")
      ->check(integer_range(std::int64_t{1}, std::int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--dropout", o.dropout, "Dropout probability in [0, 1)")
      ->check(finite_range(0.0, 0.999))
      ->capture_default_str();
  sub->add_option("--lr", o.lr, "Adam learning rate (a finite number > 0)")
      ->check(finite_range(1e-12, 1e6))
      ->capture_default_str();
  sub->add_option("--weight-decay", o.weight_decay, "L2 weight decay (added to the gradient)")
      ->check(finite_range(0.0, 1e6))
      ->capture_default_str();
  sub->add_option("--epochs", o.epochs, "Training epochs")
      ->check(integer_range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--seed", o.seed,
                  "Seed of the run's random choices (initialisation, dropout, "
                  "sampling, batch order); datasets have their own seeds")
      ->check(seed_value())
      ->capture_default_str();
  sub->add_option("--threads", o.threads,
                  "CPU threads (default: all cores, shared by the ranks started on one host)")
      ->check(integer_range(1, 4096));
  sub->add_option("--device", o.device,
                  "cpu, or cuda: train on a GPU (device 0; with --partitions one GPU per rank, "
                  "by local rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  CLI::Option* raw = sub->add_flag(
      "--no-normalize-features", o.no_normalize,
      "Keep sparse features raw (the default of a heterogeneous dataset; otherwise each row is "
      "divided by its L1 norm)");
  sub->add_flag("--normalize-features", o.normalize,
                "Divide each sparse feature row by its L1 norm (the default, except for a "
                "heterogeneous dataset)")
      ->excludes(raw);
  sub->add_option("--task", o.task,
                  "node (node classification) or link (link prediction on a temporal dataset: "
                  "--model evolvegcn-o or gcrn, --snapshots, default --window-snapshots 1; "
                  "docs/dynamic.md)")
      ->check(CLI::IsMember({"node", "link"}))
      ->capture_default_str();
  add_snapshot_options(sub, o.snapshots);
  sub->add_option("--window", o.link.window,
                  "--task link: snapshots the model reads before a predicted step (truncated "
                  "backpropagation through time over them)")
      ->check(integer_range(1, 1000))
      ->capture_default_str();
  sub->add_option("--negatives", o.link.negatives,
                  "--task link: negative pairs sampled per positive pair of a training step")
      ->check(integer_range(1, 100000))
      ->capture_default_str();
  sub->add_option("--link-split", o.link_split,
                  "--task link: TRAIN,VAL shares of the snapshots (the rest are test steps; "
                  "EvolveGCN's 0.7,0.1: 88 steps -> 62 / 9 / 17)")
      ->delimiter(',')
      ->expected(2)
      ->check(finite_range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--select-by", o.select_by,
                  "--task link: the validation metric that selects the epoch kept: map (mean "
                  "average precision, EvolveGCN's UC Irvine choice) or mrr")
      ->check(CLI::IsMember({"map", "mrr"}))
      ->capture_default_str();
  auto* mode = sub->add_option("--mode", o.mode,
                               "full-graph, or mini-batch (sampled blocks, docs/sampler.md)")
                   ->check(CLI::IsMember({"full-graph", "mini-batch"}))
                   ->capture_default_str();
  (void)mode;
  runtime::MiniBatchConfig& mb = o.mb;
  std::vector<CLI::Option*> mini_batch_only = {
      sub->add_option("--batch-size", mb.batch_size,
                      "Mini-batch: training nodes per batch (over all ranks)")
          ->check(integer_range(std::int64_t{1}, std::int64_t{1} << 30))
          ->capture_default_str(),
      sub->add_option("--fanouts", o.fanouts,
                      "Mini-batch: neighbours sampled per node and layer, input layer first, "
                      "one per layer (-1 = all), e.g. 25,10; heterogeneous datasets: per "
                      "relation, each (DGL's count), or layers split by ':' of rel=N pairs "
                      "and *=N for the others, e.g. writes=5,*=10:5")
          ->capture_default_str(),
      sub->add_option("--eval-fanouts", o.eval_fanouts,
                      "Mini-batch node classification: evaluate on sampled neighbourhoods, one "
                      "fan-out per layer as --fanouts, the same draw at every evaluation "
                      "(default: every neighbour, exact). For graphs whose hidden layers do not "
                      "fit on disk, as DGL's and PyG's ogbn-papers100M examples do"),
      sub->add_option("--prefetch", mb.prefetch,
                      "Mini-batch: batches prepared ahead by a producer thread (0 = none; "
                      "auto = 1 where every rank's producer has a core of its own, else 0)")
          ->transform(CLI::Validator(
              [](std::string& s) -> std::string {
                if (s == "auto") {
                  s = std::to_string(runtime::kAutoPrefetch);
                  return "";
                }
                std::size_t used = 0;
                int v = -1;
                try {
                  v = std::stoi(s, &used);
                } catch (const std::exception&) {
                  used = 0;
                }
                if (used == 0 || used != s.size() || v < 0 || v > 16)
                  return "'auto' or an integer in [0, 16] expected, not '" + s + "'";
                return "";
              },
              "auto|0..16"))
          ->default_str("auto"),
      sub->add_flag("--replace", mb.replace, "Mini-batch: sample neighbours with replacement"),
      sub->add_option("--max-batches", mb.max_batches,
                      "Mini-batch: train at most N batches an epoch (0 = all; a timed sample of "
                      "a long epoch)")
          ->check(integer_range(std::int64_t{0}, std::int64_t{1} << 40))
          ->capture_default_str(),
      sub->add_option("--cache-mb", mb.cache_mb,
                      "Mini-batch with --partitions: MiB per rank of remote feature rows kept "
                      "(halo nodes, chosen by --cache-policy)")
          ->check(finite_range(0.0, 1e6))
          ->capture_default_str(),
      sub->add_option("--cache-policy", o.cache_policy,
                      "Mini-batch with --partitions: degree (highest-degree halo nodes, fetched "
                      "before training) or access (most fetched in epoch 1, fetched after it)")
          ->check(CLI::IsMember({"degree", "access"}))
          ->capture_default_str()};
  auto* partitions =
      sub->add_option("--partitions", o.partitions,
                      "The partition directory DIR written by `halo partition`, on 1 to K ranks "
                      "of its K parts (each rank a group of parts): mpiexec -n R halo train "
                      "--partitions DIR (docs/distributed.md; a heterogeneous partition: one "
                      "rank per part); with "
                      "--task link, the snapshot partition series of --dataset (halo partition "
                      "--snapshots, docs/dynamic.md)")
          ->check(CLI::ExistingDirectory);
  sub->add_option("--memory-budget", o.memory_budget,
                  "Bytes the run may hold, such as 8GiB or 1e9 (default: a quarter of the "
                  "machine's memory). A store directory larger than it is read from its files "
                  "(mini-batch, one process: feature rows with pread, the hottest cached in a "
                  "quarter of it; full graph there is refused with the memory it needs); one "
                  "process's mini-batch evaluation keeps its hidden "
                  "representations in memory only when they and the data fit under it and "
                  "they are at most half the data or 512 MiB, else in a temporary file "
                  "($TMPDIR). The results do not depend on it")
      ->check(
          [](const std::string& s) -> std::string {
            const auto b = parse_bytes(s);
            return b && *b > 0 ? ""
                               : "a size such as 512MiB, 8GiB or 1e9 expected, not '" + s + "'";
          },
          "BYTES");
  auto* no_overlap = sub->add_flag(
      "--no-overlap", o.no_overlap,
      "Full graph with --partitions: wait for the halo exchange before aggregating (for "
      "comparison; default: overlap it with the owned rows' aggregation)");
  // Checks across flags, during parsing: usage errors (exit code 2). A flag of one mode is
  // refused in the other.
  return [&o, sub, mini_batch_only, no_overlap, partitions] {
    check_snapshot_options(o.snapshots);
    if (partitions->count() > 0 && sub->get_option("--dataset")->count() > 0 && o.task != "link")
      throw CLI::ValidationError("--dataset",
                                 "excludes --partitions (a partition holds its data; both "
                                 "together only with --task link, whose snapshot series holds "
                                 "the nodes' owners, not the events)");
    o.given.clear();
    for (const char* flag :
         {"--model",       "--split",           "--num-bases",        "--heads",
          "--featureless", "--layers",          "--hidden",           "--dropout",
          "--lr",          "--weight-decay",    "--epochs",           "--features",
          "--window",      "--negatives",       "--link-split",       "--select-by",
          "--snapshots",   "--snapshot-window", "--window-snapshots", "--partitions",
          "--max-batches", "--columns"})
      if (sub->get_option(flag)->count() > 0) o.given.emplace_back(flag);
    const bool hetero = o.partitions.empty() && datasets::is_hetero_dataset(o.data.dataset);
    // Heterogeneous datasets: --fanouts or --batch-size without --mode select mini-batch.
    if (hetero && sub->get_option("--mode")->count() == 0 &&
        (sub->get_option("--fanouts")->count() > 0 || sub->get_option("--batch-size")->count() > 0))
      o.mode = "mini-batch";
    const bool mini = o.mode == "mini-batch";
    // "15,10,5": one fan-out per layer (integers >= -1).
    const auto parse_fanouts = [](const char* flag, const std::string& text) {
      std::vector<int> out;
      for (std::size_t start = 0;;) {
        const std::size_t comma = text.find(',', start);
        const std::string token = text.substr(start, comma - start);
        char* end = nullptr;
        const long v = std::strtol(token.c_str(), &end, 10);
        if (token.empty() || end != token.c_str() + token.size() || v < -1 || v > (1 << 20))
          throw CLI::ValidationError(flag, "'" + token +
                                               "' is not a fan-out (integers >= -1 "
                                               "separated by commas)");
        out.push_back(static_cast<int>(v));
        if (comma == std::string::npos) return out;
        start = comma + 1;
      }
    };
    if (!hetero) o.mb.fanouts = parse_fanouts("--fanouts", o.fanouts);
    if (sub->get_option("--eval-fanouts")->count() > 0) {
      if (hetero || o.task != "node")
        throw CLI::ValidationError("--eval-fanouts",
                                   "applies to node classification of a homogeneous dataset");
      o.mb.eval_fanouts = parse_fanouts("--eval-fanouts", o.eval_fanouts);
    }
    for (CLI::Option* opt : mini_batch_only)
      if (!mini && opt->count() > 0)
        throw CLI::ValidationError(opt->get_name(), "applies to --mode mini-batch only");
    if (mini && no_overlap->count() > 0)
      throw CLI::ValidationError("--no-overlap", "applies to full-graph training only");
    if (no_overlap->count() > 0 && partitions->count() == 0)
      throw CLI::ValidationError("--no-overlap",
                                 "needs --partitions (one process exchanges "
                                 "nothing)");
    for (const char* flag : {"--cache-mb", "--cache-policy"})
      if (sub->get_option(flag)->count() > 0 && partitions->count() == 0)
        throw CLI::ValidationError(flag, "needs --partitions (one process has no remote rows)");
    if (mini && !hetero && static_cast<int>(o.mb.fanouts.size()) != o.layers)
      throw CLI::ValidationError("--fanouts", "one fan-out per layer expected (" +
                                                  std::to_string(o.layers) + " layers, " +
                                                  std::to_string(o.mb.fanouts.size()) + " given)");
    if (mini && !o.mb.eval_fanouts.empty() &&
        static_cast<int>(o.mb.eval_fanouts.size()) != o.layers)
      throw CLI::ValidationError(
          "--eval-fanouts", "one fan-out per layer expected (" + std::to_string(o.layers) +
                                " layers, " + std::to_string(o.mb.eval_fanouts.size()) + " given)");
  };
}

}  // namespace halo::cli
