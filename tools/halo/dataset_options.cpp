// --dataset and the generator flags: one definition for every subcommand that loads a dataset.
#include <array>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/error.hpp>
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/download_progress.hpp>

namespace halo::cli {

namespace {

/// "0.001" rather than std::to_string's "0.001000".
std::string shortest(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

CLI::Validator finite_range(double min, double max) {
  const std::string range = "[" + shortest(min) + ", " + shortest(max) + "]";
  return CLI::Validator(
      [min, max, range](std::string& input) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(input, v) || !std::isfinite(v) || v < min || v > max)
          return "expected a finite number in " + range + ", got '" + input + "'";
        return {};
      },
      "FLOAT in " + range, "FiniteRange");
}

CLI::Validator integer_range(std::int64_t min, std::int64_t max) {
  const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return CLI::Validator(
      [min, max, range](std::string& input) -> std::string {
        std::int64_t v = 0;
        if (!CLI::detail::lexical_cast(input, v) || v < min || v > max)
          return "expected an integer in " + range + ", got '" + input + "'";
        return {};
      },
      "INT in " + range, "IntegerRange");
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        std::uint64_t v = 0;
        // CLI11 reads "-1" into an unsigned flag as 2^64 - 1.
        if (input.empty() || input.find('-') != std::string::npos ||
            !CLI::detail::lexical_cast(input, v))
          return "expected a non-negative integer below 2^64, got '" + input + "'";
        return {};
      },
      "UINT", "Seed");
}

namespace {

/// "a,b,c": three finite fractions in [0, 1] summing to at most 1 (CLI::ValidationError naming
/// the flag otherwise).
std::array<double, 3> parse_split_fractions(const std::string& value) {
  std::array<double, 3> f{};
  std::size_t begin = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t end = i < 2 ? value.find(',', begin) : value.size();
    const std::string field =
        end == std::string::npos ? std::string() : value.substr(begin, end - begin);
    char* stop = nullptr;
    const double x = field.empty() ? -1.0 : std::strtod(field.c_str(), &stop);
    if (field.empty() || stop != field.c_str() + field.size() || !std::isfinite(x) || x < 0 ||
        x > 1 || (i == 2 && value.find(',', begin) != std::string::npos))
      throw CLI::ValidationError("--rmat-split",
                                 "expected three fractions in [0, 1] as "
                                 "TRAIN,VAL,TEST, got '" +
                                     value + "'");
    f[i] = x;
    begin = end + 1;
  }
  if (f[0] + f[1] + f[2] > 1.0 + 1e-9)
    throw CLI::ValidationError("--rmat-split",
                               "the fractions of '" + value + "' sum to more than 1");
  return f;
}

}  // namespace

void add_dataset_options(CLI::App* sub, DatasetOptions& o) {
  sub->add_option("--dataset", o.dataset,
                  "'synthetic' or 'rmat' (built in), a registered dataset such as 'cora' or "
                  "'ogbn-arxiv' (downloaded once; see `halo datasets list`), or a dataset "
                  "directory in Halo's plain format")
      ->capture_default_str();
  sub->add_flag("--offline", o.offline,
                "Never download: use registered datasets only from the data directory");
  sub->add_option("--features", o.features,
                  "Node features computed from the graph, replacing the dataset's own: 'degree' "
                  "(one-hot in-degree, degrees >= 255 share the last column) or 'constant' (one "
                  "column of ones). Needed for a dataset without features (an edge list). "
                  "Default: the dataset's features")
      ->check(CLI::IsMember({"degree", "constant"}));
  sub->add_option("--columns", o.columns,
                  "Temporal event lists: the order of each line's fields, src,dst,t or "
                  "src,dst,t,rating or src,dst,rating,t (SNAP's signed networks); auto: a "
                  "header line naming them, else src,dst,t (3 fields) or src,dst,t,rating (4)")
      ->check(CLI::IsMember({"auto", "src,dst,t", "src,dst,t,rating", "src,dst,rating,t"}))
      ->capture_default_str();
  auto& s = o.synthetic;
  sub->add_option("--synthetic-nodes", s.num_nodes, "Synthetic dataset: nodes")
      ->check(integer_range(std::int64_t{10}, (std::int64_t{1} << 31) - 1))
      ->capture_default_str();
  sub->add_option("--synthetic-classes", s.num_classes, "Synthetic dataset: classes")
      ->check(integer_range(2, 1000))
      ->capture_default_str();
  sub->add_option("--synthetic-features", s.num_features, "Synthetic dataset: feature width")
      ->check(integer_range(std::int64_t{1}, std::int64_t{1} << 16))
      ->capture_default_str();
  sub->add_option("--synthetic-degree", s.avg_degree, "Synthetic dataset: average degree")
      ->check(finite_range(0.0, 1000.0))
      ->capture_default_str();
  sub->add_option("--synthetic-homophily", s.homophily,
                  "Synthetic dataset: fraction of edges inside a class")
      ->check(finite_range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--synthetic-seed", s.seed,
                  "Synthetic dataset: seed of the generator (the dataset does not depend on "
                  "--seed)")
      ->check(seed_value())
      ->capture_default_str();
  auto& r = o.rmat;
  sub->add_option("--rmat-scale", r.scale, "R-MAT dataset: 2^scale nodes")
      ->check(integer_range(1, 30))
      ->capture_default_str();
  sub->add_option("--rmat-degree", r.avg_degree,
                  "R-MAT dataset: edges drawn per node (directed entries after symmetrising)")
      ->check(finite_range(0.0, 1000.0))
      ->capture_default_str();
  sub->add_option("--rmat-features", r.num_features, "R-MAT dataset: feature width")
      ->check(integer_range(std::int64_t{1}, std::int64_t{1} << 16))
      ->capture_default_str();
  sub->add_option("--rmat-classes", r.num_classes, "R-MAT dataset: label classes")
      ->check(integer_range(2, 1000))
      ->capture_default_str();
  sub->add_option_function<std::string>(
         "--rmat-split",
         [&r](const std::string& value) {
           const auto f = parse_split_fractions(value);
           r.train_fraction = f[0];
           r.val_fraction = f[1];
           r.test_fraction = f[2];
         },
         "R-MAT dataset: TRAIN,VAL,TEST fractions of the nodes in each split (disjoint random "
         "subsets; ogbn-papers100M's shape is 0.011,0.0011,0.0019). Default: 0.1,0.2,0.4")
      ->type_name("F,F,F");
  sub->add_option("--rmat-seed", r.seed,
                  "R-MAT dataset: seed of the generator (the dataset does not depend on --seed)")
      ->check(seed_value())
      ->capture_default_str();
  sub->add_option("--mag-scale", o.mag.scale,
                  "synthetic-mag dataset: ogbn-mag's node and edge counts times this")
      ->check(finite_range(1e-6, 16.0))
      ->capture_default_str();
}

void add_snapshot_options(CLI::App* sub, datasets::SnapshotConfig& o) {
  CLI::Option* n =
      sub->add_option("--snapshots", o.num_snapshots,
                      "Temporal dataset: cut the events into N snapshots of equal time spans")
          ->check(integer_range(std::int64_t{1}, std::int64_t{1} << 24));
  CLI::Option* w = sub->add_option("--snapshot-window", o.window_seconds,
                                   "Temporal dataset: snapshots of this many seconds each, from "
                                   "the first event (EvolveGCN's UC Irvine steps: 190080)")
                       ->check(integer_range(std::int64_t{1}, std::int64_t{1} << 62));
  n->excludes(w);
  w->excludes(n);
  sub->add_option("--window-snapshots", o.window_snapshots,
                  "Snapshot t holds the events of spans t-W+1..t (sliding window); 0: every event "
                  "so far (cumulative)")
      ->check(integer_range(std::int64_t{0}, std::int64_t{1} << 24))
      ->capture_default_str();
}

bool wants_snapshots(const datasets::SnapshotConfig& o) {
  return o.num_snapshots > 0 || o.window_seconds > 0;
}

void check_snapshot_options(const datasets::SnapshotConfig& o) {
  if (o.window_snapshots > 0 && !wants_snapshots(o))
    throw CLI::ValidationError("--window-snapshots", "needs --snapshots or --snapshot-window");
}

datasets::Dataset load_dataset(const kernels::Resources& res, const DatasetOptions& o,
                               bool features_required) {
  DownloadProgressBar bar;
  datasets::LoadOptions lo;
  lo.offline = o.offline;
  lo.download = datasets::download_options_from_env();
  lo.download->on_progress = bar.callback();
  lo.synthetic = o.synthetic;
  lo.rmat = o.rmat;
  lo.map_store = o.memory_budget > 0 && datasets::is_store(o.dataset) &&
                 datasets::read_store_counts(o.dataset).bytes_on_disk > o.memory_budget;
  datasets::Dataset ds = datasets::load_dataset(res, o.dataset, lo);
  if (!o.features.empty()) {
    ds.features = datasets::structural_features(res, ds.graph,
                                                o.features == "degree"
                                                    ? datasets::StructuralFeatures::Degree
                                                    : datasets::StructuralFeatures::Constant);
  } else if (ds.num_features() == 0 && features_required) {
    const std::string which =
        ds.name == o.dataset ? "'" + ds.name + "'" : "'" + ds.name + "' (" + o.dataset + ")";
    throw IoError("dataset " + which +
                  " has no node features; compute them from the graph with --features "
                  "degree|constant");
  }
  return ds;
}

}  // namespace halo::cli
