// `halo datasets`: list, describe, fetch, convert, prepare and export datasets.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/readers/edge_list.hpp>
#include <halo/datasets/readers/numpy.hpp>
#include <halo/datasets/readers/ogb.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/datasets/readers/planetoid.hpp>
#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/store/csr_builder.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/download_progress.hpp>
#include <halo/tools/halo/export_temporal.hpp>
#include <halo/tools/halo/npy_arrays.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/termination.hpp>

namespace halo::cli {
namespace {

namespace fs = std::filesystem;

struct DatasetsOptions {
  std::string name;
  bool offline = false;
  std::string from;
  std::string path;
  std::string out;
  std::string planetoid_name;
  DatasetOptions data;  // export, prepare
  bool raw_features = false;
  int split = -1;                     // export of a typed directory: --split (-1: its smallest)
  std::string memory_budget;          // prepare
  std::string feature_dtype = "f32";  // prepare
  TemporalExportOptions temporal;     // export --snapshots
};

const char* state_name(datasets::LocalState s) {
  switch (s) {
    case datasets::LocalState::Generated:
      return "generated";
    case datasets::LocalState::Missing:
      return "not downloaded";
    case datasets::LocalState::Downloaded:
      return "downloaded";
    case datasets::LocalState::Cached:
      return "cached";
  }
  return "?";
}

const char* format_name(datasets::DatasetFormat f) {
  switch (f) {
    case datasets::DatasetFormat::Generator:
      return "generator (no download)";
    case datasets::DatasetFormat::Planetoid:
      return "planetoid (ind.<name>.* pickles)";
    case datasets::DatasetFormat::OgbNode:
      return "ogb (node-property raw CSV layout, zipped)";
    case datasets::DatasetFormat::KarateGml:
      return "gml (Zachary's karate club, NetworkX export)";
    case datasets::DatasetFormat::OgbNodeBinary:
      return "ogb (node-property binary npz layout, zipped)";
    case datasets::DatasetFormat::OgbHetero:
      return "ogb-hetero (heterogeneous node-property raw CSV layout, zipped)";
    case datasets::DatasetFormat::Reddit:
      return "npz-reddit (reddit_data.npz + reddit_graph.npz, zipped)";
  }
  return "?";
}

std::string count_or_dash(std::int64_t n) { return n > 0 ? std::to_string(n) : "-"; }

/// The exact total when every size is known, else the registry's approximation.
std::string download_size(const datasets::DatasetInfo& d) {
  if (d.files.empty()) return "-";
  std::int64_t total = 0;
  for (const auto& f : d.files) {
    if (f.size_bytes <= 0)
      return d.approx_download_size.empty() ? "unknown" : d.approx_download_size;
    total += f.size_bytes;
  }
  return datasets::format_bytes(total);
}

int run_list() {
  const datasets::LoadOptions o;
  std::printf("%-16s %11s %12s  %-10s  %s\n", "name", "nodes", "edges", "download", "local");
  for (const auto& d : datasets::list_datasets())
    std::printf("%-16s %11s %12s  %-10s  %s\n", d.name.c_str(), count_or_dash(d.num_nodes).c_str(),
                count_or_dash(d.num_edges).c_str(), download_size(d).c_str(),
                state_name(datasets::local_state(d, o)));
  std::printf("data directory: %s\n", datasets::default_data_dir().c_str());
  return 0;
}

int run_info(const DatasetsOptions& opts) {
  const datasets::LoadOptions o;
  const auto& d = datasets::find_dataset(opts.name);
  std::printf("name:        %s\n", d.name.c_str());
  std::printf("description: %s\n", d.description.c_str());
  std::printf("format:      %s\n", format_name(d.format));
  if (d.num_nodes > 0)
    std::printf("size:        %lld nodes, %lld directed edges, %lld features, %d classes\n",
                static_cast<long long>(d.num_nodes), static_cast<long long>(d.num_edges),
                static_cast<long long>(d.num_features), d.num_classes);
  if (!d.homepage.empty()) std::printf("homepage:    %s\n", d.homepage.c_str());
  std::printf("licence:     %s\n", d.licence.c_str());
  std::printf("citation:    %s\n", d.citation.c_str());
  if (d.format == datasets::DatasetFormat::Generator) return 0;
  const auto paths = datasets::dataset_paths(d, o);
  std::printf("download:    %s\n", download_size(d).c_str());
  std::printf("local:       %s (%s)\n", paths.root.c_str(),
              state_name(datasets::local_state(d, o)));
  std::printf("files:\n");
  for (const auto& f : d.files) {
    const std::string sha = datasets::expected_sha256(d, f, o);
    std::printf("  %s\n", f.file_name.c_str());
    std::printf("    url:     %s\n", datasets::source_url(d, f, o).c_str());
    if (f.size_bytes > 0) std::printf("    bytes:   %lld\n", static_cast<long long>(f.size_bytes));
    std::printf(
        "    sha256:  %s\n",
        sha.empty()
            ? "not known yet (recorded at the first download)"
            : (sha + (f.sha256.empty() ? " (recorded at the first download)" : "")).c_str());
  }
  return 0;
}

int run_fetch(const DatasetsOptions& opts) {
  const auto& d = datasets::find_dataset(opts.name);
  if (d.format == datasets::DatasetFormat::Generator) {
    std::printf("%s is generated in memory: nothing to fetch\n", d.name.c_str());
    return 0;
  }
  DownloadProgressBar bar;
  datasets::LoadOptions o;
  o.offline = opts.offline;
  o.download = datasets::download_options_from_env();
  o.download->on_progress = bar.callback();
  const auto files = datasets::fetch_dataset(d, o);
  bar.finish();
  std::printf("%s: %zu file%s verified in %s\n", d.name.c_str(), files.size(),
              files.size() == 1 ? "" : "s", datasets::dataset_paths(d, o).raw.c_str());
  return 0;
}

/// The <name> of the single `ind.<name>.graph` in `dir`.
std::string planetoid_name_in(const fs::path& dir) {
  std::string found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.size() > 10 && f.rfind("ind.", 0) == 0 && f.compare(f.size() - 6, 6, ".graph") == 0) {
      if (!found.empty())
        throw IoError(dir.string() + ": several ind.<name>.graph files; choose one with --name");
      found = f.substr(4, f.size() - 10);
    }
  }
  if (found.empty()) throw IoError(dir.string() + ": no ind.<name>.graph file");
  return found;
}

int run_convert(const DatasetsOptions& opts) {
  // Checked before the (possibly long) read, as partition's --out.
  datasets::check_output_directory(opts.out);
  end_by_signal_on_termination();
  const kernels::Resources res(kernels::Device::Cpu, 0);
  const fs::path in = opts.path;
  datasets::Dataset ds;
  if (opts.from == "planetoid") {
    if (!fs::is_directory(in)) throw IoError(in.string() + ": not a directory");
    const std::string name =
        opts.planetoid_name.empty() ? planetoid_name_in(in) : opts.planetoid_name;
    ds = datasets::read_planetoid(res, in, name);
  } else if (opts.from == "ogb") {
    ds = datasets::read_ogb_node_raw(res, in);
  } else if (opts.from == "npz-reddit") {
    ds = datasets::read_reddit(res, in);
  } else if (opts.from == "edgelist" || opts.from == "mtx") {
    ds =
        datasets::graph_only_dataset(res, opts.from == "mtx" ? datasets::read_matrix_market(res, in)
                                                             : datasets::read_edge_list(res, in));
    ds.name = in.stem().string();
  } else {
    ds = datasets::read_directory(res, in);
  }
  datasets::write_directory(res, ds, opts.out);
  std::printf("%s: %lld nodes, %lld edges, %lld features, %d classes written to %s\n",
              ds.name.c_str(), static_cast<long long>(ds.num_nodes()),
              static_cast<long long>(ds.graph.num_edges()),
              static_cast<long long>(ds.num_features()), ds.num_classes, opts.out.c_str());
  return 0;
}

/// The labels, splits and class count every node-classification export holds.
void put_labels(NpzArrays& arrays, const kernels::Tensor<std::int32_t>& labels,
                const kernels::Tensor<kernels::NodeId>& train,
                const kernels::Tensor<kernels::NodeId>& val,
                const kernels::Tensor<kernels::NodeId>& test, std::int64_t num_classes) {
  arrays["y"] = npy_vector("<i4", labels);
  arrays["train_idx"] = npy_vector("<i4", train);
  arrays["val_idx"] = npy_vector("<i4", val);
  arrays["test_idx"] = npy_vector("<i4", test);
  arrays["num_classes"] = npy_scalar(num_classes);
}

/// A feature matrix under `key` (dense) or `key`_indptr/_indices/_data/_shape (sparse).
void put_features(NpzArrays& arrays, const std::string& key, std::int64_t rows,
                  const kernels::FeatureMatrix<float>& x) {
  if (const auto* m = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&x)) {
    arrays[key + "_indptr"] = npy_vector("<i8", m->indptr);
    arrays[key + "_indices"] = npy_vector("<i4", m->indices);
    arrays[key + "_data"] = npy_vector("<f4", m->values);
    const std::int64_t shape[2] = {rows, m->num_cols};
    arrays[key + "_shape"] = npy_array("<i8", {2}, shape, 2);
  } else {
    const auto& t = std::get<kernels::Tensor<float>>(x);
    arrays[key] = npy_array("<f4", {rows, kernels::num_cols(x)}, t.data(), t.numel());
  }
}

/// `halo datasets export` of a heterogeneous dataset (docs/formats.md, "Exported typed
/// datasets"): every type's features, every relation (reverses included) as the layers
/// aggregate it, the target type's labels and splits, and a JSON description of the types.
int run_export_typed(const DatasetsOptions& opts, const kernels::Resources& res) {
  datasets::LoadOptions load;
  load.offline = opts.data.offline;
  load.synthetic_mag = opts.data.mag;
  std::optional<int> split;
  if (opts.split >= 0) split = opts.split;
  datasets::HeteroGraph g = datasets::load_hetero_dataset(res, opts.data.dataset, split, load);
  NpzArrays arrays;
  nlohmann::json meta;
  meta["name"] = g.name;
  meta["target"] = g.target_type;
  meta["split"] = g.split;
  meta["node_types"] = nlohmann::json::array();
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    const datasets::NodeType& type = g.node_types[t];
    const bool sparse =
        std::holds_alternative<kernels::CsrMatrix<std::int32_t, float>>(type.features);
    meta["node_types"].push_back({{"name", type.name},
                                  {"num_nodes", type.num_nodes},
                                  {"num_features", kernels::num_cols(type.features)},
                                  {"features", !type.has_features() ? "none"
                                               : sparse             ? "sparse"
                                                                    : "dense"}});
    if (!type.has_features()) continue;
    // As the heterogeneous task reads them by default: as stored (docs/cli.md).
    put_features(arrays, "x_" + std::to_string(t), type.num_nodes, type.features);
  }
  meta["relations"] = nlohmann::json::array();
  for (std::size_t r = 0; r < g.relations.size(); ++r) {
    const datasets::Relation& rel = g.relations[r];
    meta["relations"].push_back({{"name", rel.name}, {"src", rel.src_type}, {"dst", rel.dst_type}});
    arrays["rel_" + std::to_string(r) + "_indptr"] = npy_vector("<i8", rel.adj.indptr);
    arrays["rel_" + std::to_string(r) + "_indices"] = npy_vector("<i4", rel.adj.indices);
  }
  arrays["meta_json"] = npy_text(meta.dump());
  put_labels(arrays, g.labels, g.train_idx, g.val_idx, g.test_idx, g.num_classes);
  datasets::write_npz(opts.out, arrays);
  std::printf(
      "%s: %d node types, %zu relations, %lld nodes, %lld edges, %d classes written to %s\n",
      g.name.c_str(), g.num_types(), g.relations.size(), static_cast<long long>(g.num_nodes()),
      static_cast<long long>(g.num_edges()), g.num_classes, opts.out.c_str());
  return 0;
}

/// `halo datasets export`: the graph, features, labels and splits a run trains on, as one .npz
/// (docs/formats.md, "Exported datasets"): what bench/peers/ gives PyG and DGL.
int run_export(const DatasetsOptions& opts) {
  const fs::path out = opts.out;
  // Checked before the (possibly long) load: an output that cannot be written fails first.
  check_output(opts.out, "--out");
  // --snapshots: the link task's snapshots of a temporal event list (export_temporal.hpp).
  if (wants_temporal_export(opts.temporal)) {
    if (opts.split >= 0 || opts.raw_features)
      throw UsageError(std::string(opts.split >= 0 ? "--split" : "--raw-features") +
                       ": not with --snapshots (a snapshot series has one-hot degree features "
                       "and step splits)");
    return run_export_temporal(opts.data, opts.temporal, opts.out);
  }
  const kernels::Resources res(kernels::Device::Cpu, 0);
  if (datasets::is_hetero_dataset(opts.data.dataset)) return run_export_typed(opts, res);
  if (opts.split >= 0)
    throw UsageError("--split " + std::to_string(opts.split) +
                     ": only a heterogeneous dataset has numbered splits");
  datasets::Dataset ds = load_dataset(res, opts.data);
  const datasets::Graph s = partition::partitioning_graph(res, ds.graph);
  const std::int64_t n = ds.num_nodes();
  NpzArrays arrays;
  arrays["indptr"] = npy_vector("<i8", s.indptr);
  arrays["indices"] = npy_vector("<i4", s.indices);
  put_labels(arrays, ds.labels, ds.train_idx, ds.val_idx, ds.test_idx, ds.num_classes);
  const kernels::FeatureMatrix<float> x =
      opts.raw_features ? std::move(ds.features)
                        : runtime::prepare_features(res, ds.features, /*normalize=*/true);
  put_features(arrays, "x", n, x);
  datasets::write_npz(out, arrays);
  std::printf(
      "%s: %lld nodes, %lld training-graph edges, %lld %s features, %d classes written to %s\n",
      ds.name.c_str(), static_cast<long long>(n), static_cast<long long>(s.num_edges()),
      static_cast<long long>(kernels::num_cols(x)),
      std::holds_alternative<kernels::CsrMatrix<std::int32_t, float>>(x) ? "sparse" : "dense",
      ds.num_classes, out.c_str());
  return 0;
}

/// Accepts only registered dataset names (a usage error otherwise, exit code 2).
CLI::Validator registered_name() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        if (datasets::is_registered(name)) return {};
        std::string known;
        for (const auto& d : datasets::list_datasets())
          known += (known.empty() ? "" : ", ") + d.name;
        return "unknown dataset \"" + name + "\"; known datasets: " + known;
      },
      "NAME", "RegisteredDataset");
}

/// "1.25 GiB", "3.0 MiB".
std::string gib(std::uint64_t bytes) {
  char text[32];
  const auto b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", b / (1ull << 30));
  else
    std::snprintf(text, sizeof text, "%.1f MiB", b / (1ull << 20));
  return text;
}

/// `halo datasets prepare`: a dataset as a store (docs/formats.md, "Graph store"):
/// datasets::prepare_dataset (streamed where it can), or with --features the dataset as loaded.
int run_prepare(const DatasetsOptions& opts) {
  check_output_directory(opts.out, "--out");
  std::size_t budget = datasets::default_memory_budget();
  if (!opts.memory_budget.empty()) {
    const auto b = parse_bytes(opts.memory_budget);
    if (!b)
      throw UsageError("--memory-budget " + opts.memory_budget +
                       ": expected a size such as 512MiB, 8GiB or 1e9");
    budget = static_cast<std::size_t>(*b);
  }
  datasets::PrepareOptions po;
  po.memory_budget = budget;
  po.feature_dtype = *datasets::parse_feature_dtype(opts.feature_dtype);
  // A signal removes the store's temporary directory (its edge file can be tens of GB).
  end_by_signal_on_termination();
  const kernels::Resources res(kernels::Device::Cpu, 0);
  const auto start = std::chrono::steady_clock::now();
  datasets::StoreCounts c;
  std::string how = "in memory";
  if (opts.data.features.empty()) {
    datasets::LoadOptions lo;
    lo.offline = opts.data.offline;
    lo.download = datasets::download_options_from_env();
    lo.rmat = opts.data.rmat;
    lo.synthetic = opts.data.synthetic;
    const datasets::PrepareReport r =
        datasets::prepare_dataset(res, opts.data.dataset, opts.out, lo, po);
    c = r.counts;
    if (r.row_blocks > 0)
      how = "streamed: " + std::to_string(r.row_blocks) + " row blocks, " + gib(r.spill_bytes) +
            " of temporary edges";
  } else {
    const datasets::Dataset ds = load_dataset(res, opts.data, /*features_required=*/false);
    datasets::write_store(res, ds, opts.out, "", po.feature_dtype);
    c = datasets::read_store_counts(opts.out);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto peak = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  std::printf(
      "%s: %lld nodes, %lld entries, %lld features (%s), %llu bytes (%s) on disk in %s\n"
      "%.1f s, %s, memory budget %s, peak RSS %llu bytes (%s)\n",
      c.name.c_str(), static_cast<long long>(c.num_nodes), static_cast<long long>(c.num_edges),
      static_cast<long long>(c.num_features), datasets::feature_dtype_name(c.feature_dtype),
      static_cast<unsigned long long>(c.bytes_on_disk), gib(c.bytes_on_disk).c_str(),
      opts.out.c_str(), seconds, how.c_str(), gib(budget).c_str(),
      static_cast<unsigned long long>(peak), gib(peak).c_str());
  return 0;
}

}  // namespace

Command add_datasets_command(CLI::App& app) {
  auto o = std::make_shared<DatasetsOptions>();
  CLI::App* sub =
      app.add_subcommand("datasets", "List, describe, download and convert public datasets");
  sub->require_subcommand(1, 1);

  CLI::App* list = sub->add_subcommand("list", "Registered datasets and whether they are local");
  CLI::App* info = sub->add_subcommand("info", "Source, licence, citation and files of a dataset");
  info->add_option("NAME", o->name, "A registered dataset")->required()->check(registered_name());
  CLI::App* fetch = sub->add_subcommand("fetch", "Download and verify a dataset's files");
  fetch->add_option("NAME", o->name, "A registered dataset")->required()->check(registered_name());
  fetch->add_flag("--offline", o->offline,
                  "Do not download: only verify the files already present (also HALO_OFFLINE=1)");
  CLI::App* convert =
      sub->add_subcommand("convert", "Convert a dataset to Halo's plain directory format");
  convert->add_option("--from", o->from, "Input format")
      ->required()
      ->check(CLI::IsMember({"planetoid", "ogb", "npz-reddit", "edgelist", "mtx", "plain"}));
  convert->add_option("PATH", o->path, "Input directory (edgelist, mtx: input file)")->required();
  convert->add_option("--out", o->out, "Output directory (must not exist, or be empty)")
      ->required();
  convert->add_option("--name", o->planetoid_name,
                      "planetoid: the <name> of ind.<name>.* (default: the only one in PATH)");

  CLI::App* exp = sub->add_subcommand(
      "export",
      "Write the training graph, input features, labels and splits of a dataset as one .npz");
  add_dataset_options(exp, o->data);
  exp->add_option("--out", o->out, "Output .npz file (replaced atomically)")->required();
  exp->add_option("--split", o->split,
                  "A heterogeneous directory's labelled split (splits/*_K.txt; default: its "
                  "smallest)")
      ->check(integer_range(0, 1 << 30));
  exp->add_flag("--raw-features", o->raw_features,
                "The dataset's features as stored (default: as the first layer reads them, sparse "
                "rows divided by their L1 norm; a heterogeneous dataset's are always as stored, "
                "as its task reads them)");
  add_temporal_export_options(exp, o->temporal);

  CLI::App* prepare = sub->add_subcommand(
      "prepare",
      "Write a dataset as a graph store (memory-mapped arrays), streamed under a memory budget");
  add_dataset_options(prepare, o->data);
  prepare->add_option("--out", o->out, "The store directory (replaced when the build succeeds)")
      ->required();
  prepare->add_option("--memory-budget", o->memory_budget,
                      "Working memory for edges and features, e.g. 2GiB (default: a quarter of "
                      "the machine's memory); O(nodes) arrays come on top");
  prepare
      ->add_option("--feature-dtype", o->feature_dtype,
                   "Element type of the stored features (converted to float32 when opened)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();

  return {sub, [o, list, info, fetch, convert, exp, prepare]() -> int {
            if (list->parsed()) return run_list();
            if (prepare->parsed()) return run_prepare(*o);
            if (exp->parsed()) return run_export(*o);
            if (info->parsed()) return run_info(*o);
            if (fetch->parsed()) return run_fetch(*o);
            if (convert->parsed()) return run_convert(*o);
            return 2;
          }};
}

}  // namespace halo::cli
