// Tests of Dataset and validate().

#include <gtest/gtest.h>
#include <string>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

/// Asserts that validate(ds) throws an IoError whose message contains `fragment`.
void expect_invalid(const Dataset& ds, const std::string& fragment) {
  try {
    validate(ds);
    ADD_FAILURE() << "validate accepted a dataset with: " << fragment;
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << fragment;
  }
}

TEST(Dataset, ReportsSizes) {
  const Dataset ds = tiny_dataset();
  EXPECT_EQ(ds.num_nodes(), 5);
  EXPECT_EQ(ds.num_features(), 3);
  EXPECT_NO_THROW(validate(ds));
}

TEST(Dataset, AcceptsSparseFeatures) {
  Dataset ds = tiny_dataset();
  ds.features = make_csr(5, 10, {{0, 9}, {2, 0}, {2, 4}}, {1, 2, 3});
  EXPECT_EQ(ds.num_features(), 10);
  EXPECT_NO_THROW(validate(ds));
}

TEST(Dataset, RejectsLabelOutOfRange) {
  Dataset ds = tiny_dataset();
  ds.labels.data()[3] = 2;
  expect_invalid(ds, "label 2 of node 3 is outside [0, 2)");
  ds.labels.data()[3] = -1;
  expect_invalid(ds, "label -1 of node 3");
}

TEST(Dataset, RejectsWrongLabelCount) {
  Dataset ds = tiny_dataset();
  ds.labels = tensor<std::int32_t>({0, 1, 0, 1});
  expect_invalid(ds, "labels has 4 entries but the graph has 5 nodes");
}

TEST(Dataset, RejectsZeroClasses) {
  Dataset ds = tiny_dataset();
  ds.num_classes = 0;
  expect_invalid(ds, "num_classes must be at least 1");
}

TEST(Dataset, RejectsDuplicateSplitId) {
  Dataset ds = tiny_dataset();
  ds.test_idx = tensor<NodeId>({2, 2});
  expect_invalid(ds, "test_idx must be strictly ascending");
}

TEST(Dataset, RejectsUnsortedSplit) {
  Dataset ds = tiny_dataset();
  ds.test_idx = tensor<NodeId>({4, 2});
  expect_invalid(ds, "test_idx must be strictly ascending");
}

TEST(Dataset, RejectsSplitIdOutOfRange) {
  Dataset ds = tiny_dataset();
  ds.val_idx = tensor<NodeId>({5});
  expect_invalid(ds, "val_idx[0] = 5 is outside [0, 5)");
  ds.val_idx = tensor<NodeId>({-1});
  expect_invalid(ds, "val_idx[0] = -1");
}

TEST(Dataset, RejectsNodeInTwoSplits) {
  Dataset ds = tiny_dataset();
  ds.val_idx = tensor<NodeId>({1, 3});
  expect_invalid(ds, "node 3 is in both train_idx and val_idx");
}

TEST(Dataset, RejectsFeatureRowMismatch) {
  Dataset ds = tiny_dataset();
  ds.features = tensor<float>({1, 2, 3, 4}, 4, 1);
  expect_invalid(ds, "features have 4 rows but the graph has 5 nodes");
  ds.features = make_csr(4, 3, {{0, 1}});
  expect_invalid(ds, "features have 4 rows");
}

TEST(Dataset, RejectsSparseFeatureColumnOutOfRange) {
  Dataset ds = tiny_dataset();
  ds.features = make_csr(5, 3, {{0, 1}, {1, 3}});
  expect_invalid(ds, "sparse features: entry 1 has column 3, outside [0, 3)");
}

TEST(Dataset, RejectsMalformedGraph) {
  Dataset ds = tiny_dataset();
  ds.graph = make_csr(5, 6, {{0, 1}});
  expect_invalid(ds, "graph must be square");
  ds.graph = make_graph(5, {{0, 1}, {1, 7}});
  expect_invalid(ds, "graph: entry 1 has column 7, outside [0, 5)");
  ds.graph = make_graph(5, {{0, 1}});
  ds.graph.indptr.data()[5] = 3;
  expect_invalid(ds, "graph: indptr[num_rows] = 3 but 1 entries are stored");
  ds.graph = make_graph(5, {{0, 1}}, {1.0f});
  ds.graph.values = tensor<float>({1.0f, 2.0f});
  expect_invalid(ds, "graph has 2 values for 1 entries");
}

TEST(Dataset, ChecksTheSymmetricFlag) {
  Dataset ds = tiny_dataset();
  ds.graph.symmetric = true;  // row 3 lists 2, but row 2 does not list 3
  expect_invalid(ds, "graph is flagged symmetric but differs from its transpose");
  ds.graph = make_graph(5, {{0, 1}, {1, 0}, {4, 4}, {2, 3}, {3, 2}});  // unsorted is fine
  ds.graph.symmetric = true;
  EXPECT_NO_THROW(validate(ds));
}

TEST(Dataset, MessageNamesTheDataset) {
  Dataset ds = tiny_dataset();
  ds.num_classes = 0;
  expect_invalid(ds, "dataset 'tiny': ");
}

}  // namespace
}  // namespace halo::datasets::test
