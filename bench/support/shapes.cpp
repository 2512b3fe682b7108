#include "support/shapes.hpp"

#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/readers/plain_format.hpp>

#include "support/machine.hpp"

namespace halo::bench {

datasets::Dataset cora(const kernels::Resources& res) {
  return datasets::read_directory(res, HALO_BENCH_DATASETS "/planetoid/cora");
}

datasets::Dataset arxiv_shape(const kernels::Resources& res) {
  datasets::SyntheticConfig c;
  c.num_nodes = smoke() ? 169343 / 20 : 169343;
  c.num_classes = 40;
  c.num_features = 128;
  c.avg_degree = 13.7;  // ogbn-arxiv: 1,166,243 citations, 2.33M directed edges symmetrised
  c.seed = 1;
  return datasets::make_synthetic(res, c);
}

datasets::Dataset products_shape(const kernels::Resources& res) {
  datasets::SyntheticConfig c;
  c.num_nodes = smoke() ? 2449029 / 100 : 2449029;
  c.num_classes = 47;
  c.num_features = 100;
  c.avg_degree = 50.52;  // ogbn-products: 61,859,140 co-purchase edges, 123.7M directed
  c.seed = 2;
  return datasets::make_synthetic(res, c);
}

}  // namespace halo::bench
