// --dataset and the generator flags: one definition for every subcommand that loads a dataset.
#include <halo/datasets/registry.hpp>
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/download_progress.hpp>

namespace halo::cli {

void add_dataset_options(CLI::App* sub, DatasetOptions& o) {
  sub->add_option("--dataset", o.dataset,
                  "'synthetic' or 'rmat' (built in), a registered dataset such as 'cora' or "
                  "'ogbn-arxiv' (downloaded once; see `halo datasets list`), or a dataset "
                  "directory in Halo's plain format")
      ->capture_default_str();
  sub->add_flag("--offline", o.offline,
                "Never download: use registered datasets only from the data directory");
  auto& s = o.synthetic;
  sub->add_option("--synthetic-nodes", s.num_nodes, "Synthetic dataset: nodes")
      ->check(CLI::Range(std::int64_t{10}, (std::int64_t{1} << 31) - 1))
      ->capture_default_str();
  sub->add_option("--synthetic-classes", s.num_classes, "Synthetic dataset: classes")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  sub->add_option("--synthetic-features", s.num_features, "Synthetic dataset: feature width")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16))
      ->capture_default_str();
  sub->add_option("--synthetic-degree", s.avg_degree, "Synthetic dataset: average degree")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  sub->add_option("--synthetic-homophily", s.homophily,
                  "Synthetic dataset: fraction of edges inside a class")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  auto& r = o.rmat;
  sub->add_option("--rmat-scale", r.scale, "R-MAT dataset: 2^scale nodes")
      ->check(CLI::Range(1, 30))
      ->capture_default_str();
  sub->add_option("--rmat-degree", r.avg_degree,
                  "R-MAT dataset: edges drawn per node (directed entries after symmetrising)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  sub->add_option("--rmat-features", r.num_features, "R-MAT dataset: feature width")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16))
      ->capture_default_str();
}

datasets::Dataset load_dataset(const kernels::Resources& res, const DatasetOptions& o,
                               std::uint64_t seed) {
  DownloadProgressBar bar;
  datasets::LoadOptions lo;
  lo.offline = o.offline;
  lo.download = datasets::download_options_from_env();
  lo.download->on_progress = bar.callback();
  lo.synthetic = o.synthetic;
  lo.synthetic.seed = seed;
  lo.rmat = o.rmat;
  lo.rmat.seed = seed;
  return datasets::load_dataset(res, o.dataset, lo);
}

}  // namespace halo::cli
