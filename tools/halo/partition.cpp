// `halo partition`: flags -> partition::PartitionConfig, progress on stderr, metrics on stdout.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/store/csr_builder.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/formats/snapshot_format.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/termination.hpp>

namespace halo::cli {
namespace {

struct PartitionOptions {
  DatasetOptions data;
  std::int32_t parts = 2;
  std::string method = "auto";
  std::string balance = "nodes,train,edges";
  std::string objective = "cut";
  double imbalance = 0.03;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string memory_budget;
  std::string out;
  std::string info;
  datasets::SnapshotConfig snapshots;
  double migration_weight = partition::kDefaultMigrationWeight;
  std::int64_t repartition_every = 0;
  std::optional<int> split;  // heterogeneous datasets: --split K
};

using Clock = std::chrono::steady_clock;

/// "[  1.23 s] what" on stderr.
class ProgressLog {
 public:
  void operator()(std::string_view what) const {
    const double s = std::chrono::duration<double>(Clock::now() - m_start).count();
    std::fprintf(stderr, "halo partition: [%7.2f s] %.*s\n", s, static_cast<int>(what.size()),
                 what.data());
    std::fflush(stderr);
  }

 private:
  Clock::time_point m_start = Clock::now();
};

void print_header(const partition::PartitionMeta& m) {
  const auto& c = m.config;
  std::printf("dataset %s: %lld nodes, %lld edges, %lld %s features, %d classes\n",
              m.dataset.c_str(), static_cast<long long>(m.num_nodes),
              static_cast<long long>(m.num_edges), static_cast<long long>(m.num_features),
              m.sparse_features ? "sparse" : "dense", m.num_classes);
  if (m.hetero) {
    std::printf("heterogeneous: target type %s;",
                m.hetero->types[static_cast<std::size_t>(m.hetero->target_type)].name.c_str());
    for (std::size_t t = 0; t < m.hetero->types.size(); ++t)
      std::printf(" %s %lld nodes (balance %.4f)", m.hetero->types[t].name.c_str(),
                  static_cast<long long>(m.hetero->types[t].num_nodes), m.hetero->balance[t]);
    std::printf("; %zu relations\n", m.hetero->relations.size());
  }
  std::printf("%d parts, method %s, objective %s, balance %s, imbalance %g, seed %llu\n",
              c.num_parts, std::string(partition::to_string(c.method)).c_str(),
              std::string(partition::to_string(c.objective)).c_str(),
              partition::to_string(c.balance).c_str(), c.imbalance,
              static_cast<unsigned long long>(c.seed));
}

int run_series_info(const PartitionOptions& o);

int run_info(const PartitionOptions& o) {
  if (partition::is_snapshot_series(o.info)) return run_series_info(o);
  const partition::PartitionMeta m = partition::read_partition_meta(o.info);
  std::printf("partition directory %s (format version %d)\n", o.info.c_str(), m.format_version);
  print_header(m);
  std::fputs(partition::format_metrics(m.metrics).c_str(), stdout);
  const std::int64_t files = partition::verify_partitions(o.info);
  std::printf("checksums: %lld files ok\n", static_cast<long long>(files));
  if (const auto& f = m.feature_store)
    std::printf("features: %lld x %lld %s rows referenced from the store %s (not copied)\n",
                static_cast<long long>(f->rows), static_cast<long long>(f->cols),
                datasets::feature_dtype_name(f->dtype), f->store.c_str());
  std::int64_t bytes = 0;
  for (const partition::PartInfo& p : m.parts) bytes += p.file_bytes;
  std::printf("on disk: %lld bytes in %zu part files (%.3f GiB)\n", static_cast<long long>(bytes),
              m.parts.size(), static_cast<double>(bytes) / (1ull << 30));
  return 0;
}

/// One line per snapshot (the delta, migration, metrics), then the totals.
void print_snapshot_table(const std::vector<partition::SnapshotRecord>& records) {
  std::printf("%8s %9s %9s %9s %9s %8s %9s %11s %8s %9s\n", "snapshot", "nodes", "pairs", "+pairs",
              "-pairs", "new", "migrated", "comm_volume", "cut", "balance");
  long long migrated = 0, volume = 0;
  for (const auto& r : records) {
    std::printf("%8lld %9lld %9lld %9lld %9lld %8lld %9lld %11lld %8lld %9.4f\n",
                static_cast<long long>(r.index), static_cast<long long>(r.num_nodes),
                static_cast<long long>(r.num_pairs), static_cast<long long>(r.pairs_added),
                static_cast<long long>(r.pairs_removed), static_cast<long long>(r.new_nodes),
                static_cast<long long>(r.migrated), static_cast<long long>(r.comm_volume),
                static_cast<long long>(r.edge_cut), r.balance);
    migrated += r.migrated;
    volume += r.comm_volume;
  }
  std::printf("total: %lld nodes migrated, comm volume %lld (summed over snapshots)\n", migrated,
              volume);
}

/// --info on a snapshot series: its configuration and table, every file verified.
int run_series_info(const PartitionOptions& o) {
  const kernels::Resources res(kernels::Device::Cpu, o.threads);
  const partition::SnapshotSeriesMeta m = partition::read_snapshot_series_meta(o.info);
  std::printf("snapshot partition series %s: %zu snapshots of %s (%lld nodes, %lld events)\n",
              o.info.c_str(), m.records.size(), m.dataset.c_str(),
              static_cast<long long>(m.num_nodes), static_cast<long long>(m.num_events));
  std::printf("%d parts, method %s, objective %s, imbalance %g, seed %llu, migration weight %g\n",
              m.config.num_parts, std::string(partition::to_string(m.config.method)).c_str(),
              std::string(partition::to_string(m.config.objective)).c_str(), m.config.imbalance,
              static_cast<unsigned long long>(m.config.seed), m.config.migration_weight);
  print_snapshot_table(m.records);
  const std::int64_t n = partition::verify_snapshot_partitions(res, o.info);
  std::printf("checksums and migration plans: %lld snapshots ok\n", static_cast<long long>(n));
  return 0;
}

/// --snapshots / --snapshot-window: one partition per snapshot and the migration plans.
int run_snapshots(const PartitionOptions& o) {
  datasets::check_output_directory(o.out);
  const kernels::Resources res(kernels::Device::Cpu, o.threads);
  const ProgressLog progress;
  progress("loading temporal dataset " + o.data.dataset);
  // R-MAT grows in kRmatGrowthSteps steps (datasets::grow_rmat); other datasets must be
  // temporal directories.
  constexpr std::int64_t kRmatGrowthSteps = 10;
  if (o.data.dataset != "rmat" && !datasets::temporal_events_file(o.data.dataset))
    throw IoError("--snapshots: '" + o.data.dataset +
                  "' is not a temporal dataset (a directory holding events.tsv or events.csv, "
                  "or rmat)");
  const datasets::TemporalGraph g =
      o.data.dataset == "rmat"
          ? datasets::grow_rmat(res, o.data.rmat, kRmatGrowthSteps)
          : datasets::load_temporal_dataset(o.data.dataset,
                                            datasets::parse_temporal_layout(o.data.columns));
  progress("dataset " + g.name + ": " + std::to_string(g.num_nodes()) + " nodes, " +
           std::to_string(g.num_events()) + " events");
  partition::RepartitionConfig c;
  c.num_parts = o.parts;
  c.method = partition::parse_repartition_method(o.method);
  c.objective = partition::parse_objective(o.objective);
  c.imbalance = o.imbalance;
  c.seed = o.seed;
  c.migration_weight = o.migration_weight;
  c.repartition_every = o.repartition_every;
  const auto records =
      partition::write_snapshot_partitions(res, g, o.snapshots, c, o.out, progress);
  progress("done");
  std::printf("wrote %s: %zu snapshots of %s (%lld nodes, %lld events), %d parts, method %s\n",
              o.out.c_str(), records.size(), g.name.c_str(), static_cast<long long>(g.num_nodes()),
              static_cast<long long>(g.num_events()), o.parts, o.method.c_str());
  print_snapshot_table(records);
  return 0;
}

partition::PartitionConfig partition_config(const PartitionOptions& o) {
  partition::PartitionConfig config;
  config.num_parts = o.parts;
  config.method = partition::parse_method(o.method);
  config.balance = partition::parse_balance(o.balance);
  config.objective = partition::parse_objective(o.objective);
  config.imbalance = o.imbalance;
  config.seed = o.seed;
  config.memory_budget = datasets::default_memory_budget();
  if (!o.memory_budget.empty()) {
    const auto b = parse_bytes(o.memory_budget);
    if (!b)
      throw UsageError("--memory-budget " + o.memory_budget +
                       ": expected a size such as 512MiB, 8GiB or 1e9");
    config.memory_budget = static_cast<std::size_t>(*b);
  }
  // Coarse levels past the budget go next to the output (the disk the parts go to): into its
  // nearest existing ancestor, as the output's parents may not exist yet.
  std::error_code ec;
  std::filesystem::path scratch =
      std::filesystem::absolute(std::filesystem::path(o.out), ec).lexically_normal().parent_path();
  while (!std::filesystem::is_directory(scratch, ec) && scratch.has_parent_path() &&
         scratch != scratch.parent_path())
    scratch = scratch.parent_path();
  config.scratch_dir = scratch.string();
  return config;
}

/// A typed directory: one balance constraint per node type plus the training nodes.
int run_hetero_partition(const PartitionOptions& o, const kernels::Resources& res,
                         const ProgressLog& progress) {
  const datasets::HeteroGraph g = datasets::read_hetero_directory(res, o.data.dataset, o.split);
  if (o.parts > g.num_nodes())
    throw IoError("--parts " + std::to_string(o.parts) + ": dataset '" + g.name + "' has " +
                  std::to_string(g.num_nodes()) + " nodes; every part needs at least one");
  const partition::PartitionConfig config = partition_config(o);
  progress("dataset " + g.name + ": " + std::to_string(g.num_types()) + " node types, " +
           std::to_string(g.num_nodes()) + " nodes, " + std::to_string(g.relations.size()) +
           " relations, " + std::to_string(g.num_edges()) + " edges");
  const partition::HeteroPartitionResult r = partition::partition_hetero(res, g, config, progress);
  partition::write_hetero_partitions(res, g, r, o.out, progress);
  progress("done");
  const partition::PartitionMeta m = partition::read_partition_meta(o.out);
  std::printf("wrote %s\n", o.out.c_str());
  print_header(m);
  std::fputs(partition::format_metrics(r.homogeneous.metrics).c_str(), stdout);
  std::printf("time: METIS %.3f s, partition total %.3f s\n", r.homogeneous.timings.metis_s,
              r.homogeneous.timings.total_s);
  if (config.method != partition::Method::Random)
    for (std::int32_t t = 0; t < g.num_types(); ++t)
      if (r.type_balance[static_cast<std::size_t>(t)] > 1.0 + config.imbalance + 1e-9)
        std::fprintf(stderr,
                     "halo partition: warning: type %s balance %.4f exceeds 1 + imbalance\n",
                     g.node_types[static_cast<std::size_t>(t)].name.c_str(),
                     r.type_balance[static_cast<std::size_t>(t)]);
  return 0;
}

/// What `halo partition` partitions: the dataset; S when it comes ready (a store whose graph is
/// S already: a second mapping, no copy); the store's dense features, which the parts then
/// reference instead of copying.
struct Input {
  datasets::Dataset data;
  std::optional<datasets::Graph> symmetric;
  std::optional<datasets::StoredFeatures> features;
};

Input open_input(const kernels::Resources& res, const DatasetOptions& o) {
  Input in;
  if (!datasets::is_store(o.dataset)) {
    in.data = load_dataset(res, o, /*features_required=*/false);
    return in;
  }
  // A store is mapped, not copied: a graph larger than memory opens, and its pages are dropped
  // from this process again as the passes go (MappedPageTrimmer in run_partition).
  const datasets::StoreCounts c = datasets::read_store_counts(o.dataset);
  const bool reference = !c.sparse_features && c.num_features > 0 && o.features.empty();
  datasets::StoreOpenOptions open;
  open.mapped = true;
  open.features = !reference && o.features.empty();
  in.data = datasets::open_store(res, o.dataset, open);
  if (reference) in.features = datasets::stored_features(o.dataset);
  if (!o.features.empty())
    in.data.features = datasets::structural_features(res, in.data.graph,
                                                     o.features == "degree"
                                                         ? datasets::StructuralFeatures::Degree
                                                         : datasets::StructuralFeatures::Constant);
  if (c.symmetric && c.training_edges == c.num_edges) {
    open.verify_checksums = false;
    open.features = false;
    in.symmetric = datasets::open_store(res, o.dataset, open).graph;
  }
  return in;
}

int run_partition(const PartitionOptions& o) {
  if (!o.info.empty()) return run_info(o);
  end_by_signal_on_termination();
  if (wants_snapshots(o.snapshots)) return run_snapshots(o);
  // Refuse an unusable --out before any work: partitioning a large graph takes minutes.
  datasets::check_output_directory(o.out);
  const kernels::Resources res(kernels::Device::Cpu, o.threads);
  const ProgressLog progress;
  if (datasets::is_hetero_directory(o.data.dataset)) return run_hetero_partition(o, res, progress);
  if (o.split) throw UsageError("--split: applies to heterogeneous datasets (typed directories)");
  // Flags first (a bad --memory-budget is a usage error, not one found after the load).
  const partition::PartitionConfig config = partition_config(o);
  progress("loading dataset " + o.data.dataset);
  Input in = open_input(res, o.data);
  const datasets::Dataset& data = in.data;
  std::vector<std::pair<const void*, std::size_t>> mapped = datasets::mapped_ranges(data.graph);
  if (in.symmetric) {
    const auto more = datasets::mapped_ranges(*in.symmetric);
    mapped.insert(mapped.end(), more.begin(), more.end());
  }
  // Every 50 ms, for the passes that read the mapped arrays in order (a fault maps the whole
  // page-cache folio around the page); rows read at random go through the files instead
  // (Buffer::read_file), which maps nothing.
  const datasets::MappedPageTrimmer trimmer(std::move(mapped), std::chrono::milliseconds(50));
  // METIS cannot make more parts than nodes (it prints "Cannot bisect a graph with 0 vertices"
  // and returns empty parts), and an empty part is a rank with nothing to train.
  if (o.parts > data.num_nodes())
    throw IoError("--parts " + std::to_string(o.parts) + ": dataset '" + data.name + "' has " +
                  std::to_string(data.num_nodes()) + " nodes; every part needs at least one");
  progress("dataset " + data.name + ": " + std::to_string(data.num_nodes()) + " nodes, " +
           std::to_string(data.graph.num_edges()) + " edges");
  const partition::PartitionResult r =
      in.symmetric
          ? partition::partition_dataset(res, data, std::move(*in.symmetric), config, progress)
          : partition::partition_dataset(res, data, config, progress);
  partition::write_partitions(res, data, r, o.out, progress, in.features ? &*in.features : nullptr);
  progress("done");

  const partition::PartitionMeta m = partition::read_partition_meta(o.out);
  std::printf("wrote %s\n", o.out.c_str());
  print_header(m);
  std::fputs(partition::format_metrics(r.metrics).c_str(), stdout);
  std::printf("time: METIS %.3f s, partition total %.3f s\n", r.timings.metis_s, r.timings.total_s);
  // METIS methods promise the imbalance; say so when greedy moves could not reach it.
  if (config.method != partition::Method::Random) {
    const double bound = 1.0 + config.imbalance + 1e-9;
    const std::pair<bool, const partition::ConstraintLoad*> loads[] = {
        {config.balance.nodes, &r.metrics.nodes},
        {config.balance.train, &r.metrics.train},
        {config.balance.edges, &r.metrics.edges}};
    const char* names[] = {"nodes", "train", "edges"};
    for (int i = 0; i < 3; ++i)
      if (loads[i].first && loads[i].second->balance > bound)
        std::fprintf(stderr, "halo partition: warning: %s balance %.4f exceeds 1 + imbalance\n",
                     names[i], loads[i].second->balance);
  }
  return 0;
}

/// Accepts a comma-separated subset of nodes, train, edges.
const CLI::Validator kBalanceList(
    [](std::string& s) -> std::string {
      try {
        partition::parse_balance(s);
      } catch (const std::exception&) {
        return "expected a comma-separated subset of nodes, train, edges, got '" + s + "'";
      }
      return {};
    },
    "LIST", "BalanceList");

}  // namespace

Command add_partition_command(CLI::App& app) {
  auto o = std::make_shared<PartitionOptions>();
  CLI::App* sub = app.add_subcommand(
      "partition", "Split a dataset into P parts on disk (METIS or random), or describe one");
  add_dataset_options(sub, o->data);
  sub->add_option("--parts", o->parts, "Number of parts P")
      ->check(integer_range(1, 1024))
      ->capture_default_str();
  CLI::Option* method =
      sub->add_option("--method", o->method,
                      "auto (metis where METIS can hold the graph, else lp-multilevel), metis "
                      "(k-way), metis-rb (recursive bisection), lp-multilevel (label-propagation "
                      "coarsening, METIS on the coarsest graph, LP refinement) or random (hash "
                      "baseline); "
                      "with --snapshots: scratch (METIS per snapshot, relabelled), streaming "
                      "(LDG for new nodes) or migration (Scotch repartitioning; default scratch)")
          ->check(CLI::IsMember({"auto", "metis", "metis-rb", "lp-multilevel", "random", "scratch",
                                 "streaming", "migration"}))
          ->capture_default_str();
  sub->add_option("--balance", o->balance,
                  "Constraints METIS balances: a comma-separated subset of nodes, train, edges")
      ->check(kBalanceList)
      ->capture_default_str();
  sub->add_option("--objective", o->objective, "What METIS minimises: edge cut or comm volume")
      ->check(CLI::IsMember({"cut", "vol"}))
      ->capture_default_str();
  sub->add_option("--imbalance", o->imbalance,
                  "Allowed imbalance per constraint: max part <= (1 + imbalance) * mean")
      ->check(finite_range(0.001, 1.0))
      ->capture_default_str();
  sub->add_option("--seed", o->seed,
                  "Seed of METIS and of the random method (not of a generated dataset: see "
                  "--synthetic-seed, --rmat-seed)")
      ->check(seed_value())
      ->capture_default_str();
  sub->add_option("--split", o->split,
                  "Heterogeneous datasets (typed directories): the split K stored "
                  "(splits/train_K.txt; default: the smallest K)")
      ->check(integer_range(0, 1000000));
  add_snapshot_options(sub, o->snapshots);
  CLI::Option* weight =
      sub->add_option("--migration-weight", o->migration_weight,
                      "--method migration: cost of moving one node in cut edges (Scotch's "
                      "emraval; ParMETIS's itr = 1 / weight)")
          ->check(finite_range(0.0, 1e6))
          ->capture_default_str();
  CLI::Option* every =
      sub->add_option("--repartition-every", o->repartition_every,
                      "--method streaming: repartition from scratch every K snapshots (0: only "
                      "the first)")
          ->check(integer_range(std::int64_t{0}, std::int64_t{1} << 24))
          ->capture_default_str();
  CLI::Option* balance_opt = sub->get_option("--balance");
  CLI::Option* features_opt = sub->get_option("--features");
  sub->add_option("--threads", o->threads, "CPU threads (default: all cores)")
      ->check(integer_range(1, 4096));
  sub->add_option("--memory-budget", o->memory_budget,
                  "lp-multilevel: bytes of coarse graphs held in memory; a larger coarse level "
                  "goes to a scratch file beside --out (default: a quarter of the machine's "
                  "memory; the result does not depend on it)");
  CLI::Option* out = sub->add_option(
      "--out", o->out, "Write the partition directory here (must not exist or be empty)");
  CLI::Option* info = sub->add_option(
      "--info", o->info, "Describe an existing partition directory and verify its checksums");
  out->excludes(info);
  info->excludes(out);
  // Checks across flags, during parsing: usage errors (exit code 2).
  sub->parse_complete_callback([o, out, info, method, weight, every, balance_opt, features_opt] {
    if (out->count() == 0 && info->count() == 0)
      throw CLI::RequiredError("--out DIR (or --info DIR)");
    check_snapshot_options(o->snapshots);
    const bool dynamic =
        o->method == "scratch" || o->method == "streaming" || o->method == "migration";
    if (wants_snapshots(o->snapshots)) {
      if (method->count() == 0 || o->method == "auto") o->method = "scratch";
      if (!(o->method == "scratch" || o->method == "streaming" || o->method == "migration"))
        throw CLI::ValidationError("--method", "with --snapshots: scratch, streaming or migration");
      if (balance_opt->count() > 0)
        throw CLI::ValidationError("--balance",
                                   "snapshot partitions balance node counts only (no --balance)");
      if (features_opt->count() > 0)
        throw CLI::ValidationError("--features", "snapshot partitions store no features");
    } else if (dynamic) {
      throw CLI::ValidationError("--method",
                                 "'" + o->method + "' needs --snapshots or --snapshot-window");
    }
    if (weight->count() > 0 && o->method != "migration")
      throw CLI::ValidationError("--migration-weight", "needs --method migration");
    if (every->count() > 0 && o->method != "streaming")
      throw CLI::ValidationError("--repartition-every", "needs --method streaming");
    if (o->method == "metis-rb" && o->objective == "vol")
      throw CLI::ValidationError("--objective",
                                 "'vol' needs --method metis (recursive bisection, "
                                 "metis-rb, minimises the edge cut only)");
  });
  return {sub, [o] { return run_partition(*o); }};
}

}  // namespace halo::cli
