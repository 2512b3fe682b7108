// Tests of the plain directory format: the real Cora files, malformed inputs, round trips.

#include <cmath>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

using SparseFeatures = kernels::CsrMatrix<std::int32_t, float>;

// ---- Cora ---------------------------------------------------------------------------------------

const Dataset& cora() {
  static const Dataset ds = read_directory(cpu(), cora_dir());
  return ds;
}

TEST(PlainFormat, ReadsCora) {
  ASSERT_TRUE(fs::is_directory(cora_dir())) << "missing " << cora_dir();
  const Dataset& ds = cora();
  EXPECT_EQ(ds.name, "cora");
  EXPECT_EQ(ds.num_nodes(), 2708);
  EXPECT_EQ(ds.graph.num_edges(), 10556);
  EXPECT_TRUE(ds.graph.values.empty());
  EXPECT_EQ(ds.num_features(), 1433);
  ASSERT_TRUE(std::holds_alternative<SparseFeatures>(ds.features));
  const auto& x = std::get<SparseFeatures>(ds.features);
  EXPECT_EQ(x.num_edges(), 49216);
  for (const float v : vec(x.values)) ASSERT_EQ(v, 1.0f);
  EXPECT_EQ(ds.num_classes, 7);

  std::vector<int> class_sizes(7, 0);
  for (const std::int32_t label : vec(ds.labels)) ++class_sizes.at(static_cast<std::size_t>(label));
  EXPECT_EQ(class_sizes, (std::vector<int>{351, 217, 418, 818, 426, 298, 180}));

  ASSERT_EQ(ds.train_idx.numel(), 140);
  ASSERT_EQ(ds.val_idx.numel(), 500);
  ASSERT_EQ(ds.test_idx.numel(), 1000);
  EXPECT_EQ(ds.train_idx(0), 0);
  EXPECT_EQ(ds.train_idx(139), 139);
  EXPECT_EQ(ds.val_idx(0), 140);
  EXPECT_EQ(ds.val_idx(499), 639);
  EXPECT_EQ(ds.test_idx(0), 1708);
  EXPECT_EQ(ds.test_idx(999), 2707);
  std::vector<int> train_per_class(7, 0);
  for (const NodeId v : vec(ds.train_idx))
    ++train_per_class.at(static_cast<std::size_t>(ds.labels(v)));
  EXPECT_EQ(train_per_class, std::vector<int>(7, 20));
}

TEST(PlainFormat, CoraIsSymmetricWithoutSelfLoops) {
  const Dataset& ds = cora();
  const Graph sym = symmetrize(cpu(), ds.graph);
  EXPECT_EQ(sym.num_edges(), 10556);
  EXPECT_EQ(deduplicate(cpu(), sym).num_edges(), 10556);
  EXPECT_EQ(rows_of(sym), rows_of(ds.graph));  // Cora lists both directions already
  EXPECT_EQ(remove_self_loops(cpu(), ds.graph).num_edges(), 10556);
  for (std::int64_t r = 0; r < ds.num_nodes(); ++r) {
    EXPECT_GT(ds.graph.indptr(r + 1), ds.graph.indptr(r)) << "Cora has no isolated nodes";
  }
}

TEST(PlainFormat, CoraGcnNormalization) {
  const Dataset& ds = cora();
  const Graph a = symmetrize(cpu(), ds.graph);
  const auto a_hat = gcn_normalize<float>(cpu(), a);
  EXPECT_EQ(a_hat.num_edges(), 10556 + 2708);

  // Plain reference: deg(v) = in-degree + 1; row r of Â sums to Σ_c 1 / sqrt(deg r * deg c).
  const auto rows = rows_of(a);
  std::vector<double> deg(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) deg[r] = static_cast<double>(rows[r].size()) + 1.0;
  const auto got = rows_of(a_hat);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    double want = 1.0 / deg[r];
    for (const auto& [c, v] : rows[r])
      want += 1.0 / std::sqrt(deg[r] * deg[static_cast<std::size_t>(c)]);
    double sum = 0.0;
    for (const auto& [c, v] : got[r]) sum += v;
    ASSERT_NEAR(sum, want, 1e-5) << "row " << r;
  }
}

TEST(PlainFormat, CoraFeaturesRowNormalize) {
  const auto& x = std::get<SparseFeatures>(cora().features);
  kernels::FeatureMatrix<float> y = x.clone(cpu());
  row_normalize(cpu(), y);
  const auto& m = std::get<SparseFeatures>(y);
  for (std::int64_t r = 0; r < m.num_rows(); ++r) {
    double sum = 0.0;
    for (std::int64_t e = m.indptr(r); e < m.indptr(r + 1); ++e) sum += m.values(e);
    ASSERT_NEAR(sum, 1.0, 1e-5) << "row " << r;
  }
}

// ---- fixtures -----------------------------------------------------------------------------------

/// A small valid directory: 4 nodes, sparse features, no meta.tsv. `files` replaces (or, with
/// std::nullopt, removes) files of the default set.
using Files = std::map<std::string, std::optional<std::string>>;
void write_fixture(const fs::path& dir, const Files& files = {}) {
  Files all = {
      {"edges.tsv", "0\t1\n1\t0\n1\t2\n2\t1\n3\t2\n"},
      {"features.coo.tsv", "0\t0\t1\n1\t2\t0.5\n3\t1\t2\n"},
      {"labels.txt", "0\n1\n0\n1\n"},
      {"train_idx.txt", "0\n"},
      {"val_idx.txt", "1\n"},
      {"test_idx.txt", "2\n3\n"},
  };
  for (const auto& [name, text] : files) all[name] = text;
  for (const auto& [name, text] : all) {
    if (text) {
      write_text(dir / name, *text);
    } else {
      fs::remove(dir / name);
    }
  }
}

/// Asserts that reading `dir` throws an IoError whose message contains every fragment.
void expect_read_error(const fs::path& dir, const std::vector<std::string>& fragments) {
  try {
    read_directory(cpu(), dir);
    ADD_FAILURE() << "read_directory accepted the input";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
    }
  }
}

TEST(PlainFormat, ReadsMinimalDirectoryWithoutMeta) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "mini";
  fs::create_directory(dir);
  write_fixture(dir);
  const Dataset ds = read_directory(cpu(), dir);
  EXPECT_EQ(ds.name, "mini");
  EXPECT_EQ(ds.num_nodes(), 4);
  EXPECT_EQ(ds.num_features(), 3);
  EXPECT_EQ(ds.num_classes, 2);
  // Edge src -> dst is column src of row dst.
  EXPECT_EQ(rows_of(ds.graph),
            (std::vector<Row>{{{1, 1.0}}, {{0, 1.0}, {2, 1.0}}, {{1, 1.0}, {3, 1.0}}, {}}));
  const auto& x = std::get<SparseFeatures>(ds.features);
  EXPECT_EQ(vec(x.indptr), (std::vector<std::int64_t>{0, 1, 2, 2, 3}));
  EXPECT_EQ(vec(x.indices), (std::vector<std::int32_t>{0, 2, 1}));
  EXPECT_EQ(vec(x.values), (std::vector<float>{1.0f, 0.5f, 2.0f}));
  EXPECT_EQ(vec(ds.test_idx), (std::vector<NodeId>{2, 3}));
  // A trailing slash does not change the name.
  EXPECT_EQ(read_directory(cpu(), dir.string() + "/").name, "mini");
  EXPECT_EQ(read_directory(cpu(), dir / ".").name, "mini");
}

TEST(PlainFormat, MetaGivesCounts) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"meta.tsv",
                              "name\tfixture\nnum_nodes\t6\nnum_features\t10\n"
                              "num_classes\t5\nsomething_else\t1,2,3\n"},
                             {"labels.txt", "0\n1\n0\n1\n4\n0\n"}});
  const Dataset ds = read_directory(cpu(), tmp.path());
  EXPECT_EQ(ds.name, "fixture");
  EXPECT_EQ(ds.num_nodes(), 6);
  EXPECT_EQ(ds.num_features(), 10);
  EXPECT_EQ(ds.num_classes, 5);
  EXPECT_EQ(ds.graph.indptr(6), 5);
}

TEST(PlainFormat, NumNodesCoversLabelsAndEdges) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"labels.txt", "0\n1\n0\n1\n1\n"}});  // node 4 has no edge
  EXPECT_EQ(read_directory(cpu(), tmp.path()).num_nodes(), 5);
}

TEST(PlainFormat, ReadsDenseFeatures) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"features.coo.tsv", std::nullopt},
                             {"features.tsv", "1\t2\n-0.5\t1e-3\n0\t0\n3.25\t7\n"}});
  const Dataset ds = read_directory(cpu(), tmp.path());
  ASSERT_TRUE(std::holds_alternative<kernels::Tensor<float>>(ds.features));
  const auto& x = std::get<kernels::Tensor<float>>(ds.features);
  EXPECT_EQ(x.rows(), 4);
  EXPECT_EQ(x.cols(), 2);
  EXPECT_EQ(vec(x), (std::vector<float>{1, 2, -0.5f, 1e-3f, 0, 0, 3.25f, 7}));
}

TEST(PlainFormat, AcceptsCrlfAndMissingFinalNewline) {
  TempDir tmp;
  write_fixture(tmp.path(),
                {{"edges.tsv", "0\t1\r\n1\t0\r\n3\t2"}, {"labels.txt", "0\r\n1\r\n0\r\n1"}});
  const Dataset ds = read_directory(cpu(), tmp.path());
  EXPECT_EQ(ds.graph.num_edges(), 3);
  EXPECT_EQ(vec(ds.labels), (std::vector<std::int32_t>{0, 1, 0, 1}));
}

TEST(PlainFormat, RemovesDuplicateEdgesAndKeepsDirection) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"edges.tsv", "2\t0\n2\t0\n1\t1\n3\t0\n2\t0\n"}});
  const Dataset ds = read_directory(cpu(), tmp.path());
  EXPECT_EQ(rows_of(ds.graph), (std::vector<Row>{{{2, 1.0}, {3, 1.0}}, {{1, 1.0}}, {}, {}}));
}

TEST(PlainFormat, SortsUnsortedSparseFeaturesAndSplits) {
  TempDir tmp;
  write_fixture(tmp.path(),
                {{"features.coo.tsv", "3\t1\t2\n0\t2\t1\n0\t0\t4\n"}, {"test_idx.txt", "3\n2\n"}});
  const Dataset ds = read_directory(cpu(), tmp.path());
  const auto& x = std::get<SparseFeatures>(ds.features);
  EXPECT_EQ(vec(x.indptr), (std::vector<std::int64_t>{0, 2, 2, 2, 3}));
  EXPECT_EQ(vec(x.indices), (std::vector<std::int32_t>{0, 2, 1}));
  EXPECT_EQ(vec(x.values), (std::vector<float>{4, 1, 2}));
  EXPECT_EQ(vec(ds.test_idx), (std::vector<NodeId>{2, 3}));
}

// ---- malformed input ----------------------------------------------------------------------------

TEST(PlainFormat, ReportsMissingFiles) {
  for (const char* name : {"edges.tsv", "labels.txt", "train_idx.txt", "val_idx.txt",
                           "test_idx.txt", "features.coo.tsv"}) {
    TempDir tmp;
    write_fixture(tmp.path(), {{name, std::nullopt}});
    expect_read_error(tmp.path(), {(tmp.path() / name).string(), "missing required file"});
  }
  TempDir tmp;
  expect_read_error(tmp.path() / "nope", {"nope: not a directory"});
  write_fixture(tmp.path());
  fs::remove(tmp.path() / "labels.txt");
  fs::create_directory(tmp.path() / "labels.txt");
  expect_read_error(tmp.path(), {"labels.txt: not a regular file"});
}

// A directory holding only edges.tsv (and meta.tsv) is a bare graph: graph-only, as a web or
// collaboration graph comes; one with some of the other files still names the first missing.
TEST(PlainFormat, ABareEdgeListIsAGraphOnlyDataset) {
  TempDir tmp;
  write_text(tmp.path() / "edges.tsv", "0\t1\n2\t1\n0\t1\n3\t3\n");
  Dataset ds = read_directory(cpu(), tmp.path());
  EXPECT_EQ(ds.num_nodes(), 4);
  EXPECT_EQ(ds.num_features(), 0);
  EXPECT_EQ(ds.num_classes, 1);
  EXPECT_EQ(ds.train_idx.numel() + ds.val_idx.numel() + ds.test_idx.numel(), 0);
  EXPECT_EQ(rows_of(ds.graph), (std::vector<Row>{{}, {{0, 1.0}, {2, 1.0}}, {}, {{3, 1.0}}}));
  EXPECT_EQ(ds.name, tmp.path().filename().string());
  write_text(tmp.path() / "meta.tsv", "name\tweb\nnum_nodes\t6\n");
  ds = read_directory(cpu(), tmp.path());
  EXPECT_EQ(ds.num_nodes(), 6);  // isolated nodes 4 and 5
  EXPECT_EQ(ds.name, "web");
  write_text(tmp.path() / "labels.txt", "0\n0\n0\n0\n0\n0\n");
  expect_read_error(tmp.path(), {"features.coo.tsv: missing required file"});
}

TEST(PlainFormat, ReportsNonNumericTokens) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"edges.tsv", "0\t1\n1\t0\n12 x\n"}});
  expect_read_error(tmp.path(), {(tmp.path() / "edges.tsv").string() +
                                 ":3: expected two non-negative integer node ids separated by a "
                                 "tab, got \"12 x\""});

  write_fixture(tmp.path(), {{"labels.txt", "0\nfoo\n0\n1\n"}});
  expect_read_error(tmp.path(), {"labels.txt:2: expected one non-negative integer class id, got "
                                 "\"foo\""});

  write_fixture(tmp.path(), {{"val_idx.txt", "1.5\n"}});
  expect_read_error(tmp.path(), {"val_idx.txt:1: expected one non-negative integer node id"});

  write_fixture(tmp.path(), {{"features.coo.tsv", "0\t0\t1\n1\t2\tabc\n"}});
  expect_read_error(tmp.path(), {"features.coo.tsv:2: expected a node id, a feature index and a "
                                 "finite value separated by tabs, got \"1\\t2\\tabc\""});

  write_fixture(tmp.path(), {{"features.coo.tsv", "0\t0\tnan\n"}});
  expect_read_error(tmp.path(), {"features.coo.tsv:1: expected"});

  write_fixture(tmp.path(), {{"meta.tsv", "name\tx\nnum_nodes\tmany\n"}});
  expect_read_error(tmp.path(), {"meta.tsv:2: expected an integer in [0, 2147483647] as the "
                                 "value of num_nodes, got \"many\""});
}

TEST(PlainFormat, ReportsWrongColumnCounts) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"edges.tsv", "0\t1\n1\t0\t7\n"}});
  expect_read_error(
      tmp.path(), {"edges.tsv:2: expected two non-negative integer node ids", "got \"1\\t0\\t7\""});

  write_fixture(tmp.path(), {{"edges.tsv", "0\t1\n\n1\t0\n"}});
  expect_read_error(tmp.path(), {"edges.tsv:2: expected", "got \"\""});

  write_fixture(tmp.path(), {{"edges.tsv", "0\t1\n"}, {"features.coo.tsv", "0\t1\n"}});
  expect_read_error(tmp.path(), {"features.coo.tsv:1: expected a node id, a feature index"});

  write_fixture(tmp.path(), {{"features.coo.tsv", std::nullopt},
                             {"features.tsv", "1\t2\t3\n4\t5\n0\t0\t0\n1\t1\t1\n"}});
  expect_read_error(tmp.path(), {"features.tsv:2: expected 3 tab-separated finite numbers (the "
                                 "features of node 1), got \"4\\t5\""});

  write_fixture(tmp.path(), {{"features.coo.tsv", std::nullopt},
                             {"features.tsv", "1\t2\t3\n4\t5\t6\t7\n0\t0\t0\n1\t1\t1\n"}});
  expect_read_error(tmp.path(), {"features.tsv:2: expected 3 tab-separated"});

  write_fixture(tmp.path(), {{"features.coo.tsv", std::nullopt}, {"features.tsv", "1\n2\n3\n"}});
  expect_read_error(tmp.path(), {"features.tsv:4: expected the features of node 3 (the dataset "
                                 "has 4 nodes), got end of file"});

  write_fixture(tmp.path(), {{"features.tsv", std::nullopt}, {"labels.txt", "0\n1\t1\n0\n1\n"}});
  expect_read_error(tmp.path(), {"labels.txt:2: expected one non-negative integer class id"});

  write_fixture(tmp.path(), {{"labels.txt", "0\n1\n0\n1\n"}, {"meta.tsv", "num_nodes 4\n"}});
  expect_read_error(tmp.path(), {"meta.tsv:1: expected a key and a value separated by a tab"});
}

TEST(PlainFormat, ReportsIdsOutOfRange) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"meta.tsv", "num_nodes\t4\n"}, {"edges.tsv", "0\t1\n2\t3\n0\t4\n"}});
  expect_read_error(tmp.path(), {"edges.tsv:3: node id 4 is out of range: meta.tsv:1 gives "
                                 "num_nodes = 4"});

  write_fixture(tmp.path(), {{"edges.tsv", "0\t1\n-1\t0\n"}});
  expect_read_error(tmp.path(), {"edges.tsv:2: expected two non-negative integer node ids"});

  write_fixture(tmp.path(), {{"edges.tsv", "0\t1\n"}, {"test_idx.txt", "2\n9\n"}});
  expect_read_error(tmp.path(), {"test_idx.txt:2: node id 9 is out of range: the dataset has 4 "
                                 "nodes"});

  write_fixture(tmp.path(),
                {{"test_idx.txt", "2\n3\n"}, {"features.coo.tsv", "0\t0\t1\n7\t0\t1\n"}});
  expect_read_error(tmp.path(), {"features.coo.tsv:2: node id 7 is out of range"});

  write_fixture(tmp.path(),
                {{"features.coo.tsv", "0\t0\t1\n1\t12\t1\n"}, {"meta.tsv", "num_features\t12\n"}});
  expect_read_error(tmp.path(), {"features.coo.tsv:2: feature index 12 is out of range: "
                                 "meta.tsv:1 gives num_features = 12"});
}

TEST(PlainFormat, ReportsLabelOutOfRange) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"meta.tsv", "num_classes\t2\n"}, {"labels.txt", "0\n1\n2\n1\n"}});
  expect_read_error(tmp.path(), {(tmp.path() / "labels.txt").string() +
                                 ":3: class id 2 is out of "
                                 "range: meta.tsv:1 gives num_classes = 2"});
}

// One stray class id used to become num_classes = 2^31 - 1, and std::bad_alloc when a model was
// sized from it. An inferred count is limited to max(1024, nodes) (at most 2^20).
TEST(PlainFormat, RefusesAbsurdInferredClassCount) {
  TempDir tmp;
  const std::string labels = (tmp.path() / "labels.txt").string();
  write_fixture(tmp.path(), {{"labels.txt", "0\n2147483646\n1\n2147483646\n"}});
  expect_read_error(tmp.path(),
                    {labels + ":2: class id 2147483646 would make 2147483647 classes",
                     "more than the 1024 allowed for 4 nodes", "num_classes in meta.tsv"});

  // The floor: 4 nodes may still use class ids up to 1023.
  write_fixture(tmp.path(), {{"labels.txt", "0\n1023\n1\n0\n"}});
  EXPECT_EQ(read_directory(cpu(), tmp.path()).num_classes, 1024);
  write_fixture(tmp.path(), {{"labels.txt", "0\n1\n1024\n0\n"}});
  expect_read_error(tmp.path(), {labels + ":3: class id 1024 would make 1025 classes"});

  // An explicit num_classes is the user's statement and is not second-guessed.
  write_fixture(tmp.path(),
                {{"meta.tsv", "num_classes\t5000\n"}, {"labels.txt", "0\n4999\n1\n0\n"}});
  EXPECT_EQ(read_directory(cpu(), tmp.path()).num_classes, 5000);
}

TEST(PlainFormat, ReportsLabelCountMismatch) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"labels.txt", "0\n1\n0\n"}});
  expect_read_error(tmp.path(), {"labels.txt:4: expected the class id of node 3 (edges.tsv:5 "
                                 "mentions node 3), got end of file"});

  write_fixture(tmp.path(), {{"meta.tsv", "num_nodes\t4\n"}, {"labels.txt", "0\n1\n0\n1\n1\n"}});
  expect_read_error(tmp.path(), {"labels.txt:5: expected end of file (meta.tsv:1 gives num_nodes "
                                 "= 4), got \"1\""});
}

TEST(PlainFormat, ReportsDuplicateSplitIds) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"test_idx.txt", "2\n3\n2\n"}});
  expect_read_error(tmp.path(),
                    {(tmp.path() / "test_idx.txt").string() + ":3: node 2 is listed "
                                                              "again (first on test_idx.txt:1)"});

  write_fixture(tmp.path(), {{"test_idx.txt", "2\n3\n"}, {"val_idx.txt", "1\n0\n"}});
  expect_read_error(tmp.path(), {"val_idx.txt:2: node 0 is listed again (first on "
                                 "train_idx.txt:1)"});
}

TEST(PlainFormat, ReportsDuplicateFeatureEntries) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"features.coo.tsv", "0\t0\t1\n0\t0\t2\n"}});
  expect_read_error(tmp.path(), {"features.coo.tsv:2: node 0, feature 0 is listed twice (also on "
                                 "line 1)"});

  write_fixture(tmp.path(), {{"features.coo.tsv", "1\t0\t1\n0\t0\t2\n1\t0\t3\n"}});
  expect_read_error(tmp.path(), {"features.coo.tsv:3: node 1, feature 0 is listed twice (also on "
                                 "line 1)"});
}

TEST(PlainFormat, ReportsAmbiguousFeatures) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"features.tsv", "1\n1\n1\n1\n"}});
  expect_read_error(tmp.path(), {"both features.coo.tsv and features.tsv are present"});
}

TEST(PlainFormat, ReportsRepeatedMetaKey) {
  TempDir tmp;
  write_fixture(tmp.path(), {{"meta.tsv", "num_nodes\t4\nname\tx\nnum_nodes\t5\n"}});
  expect_read_error(tmp.path(), {"meta.tsv:3: key \"num_nodes\" is given twice"});
}

// ---- reading in small blocks -------------------------------------------------------------------

/// Asserts that reading `dir` in blocks of `chunk` bytes throws an IoError whose message contains
/// every fragment.
void expect_chunked_read_error(const fs::path& dir, std::size_t chunk,
                               const std::vector<std::string>& fragments) {
  try {
    detail::read_directory(cpu(), dir, chunk);
    ADD_FAILURE() << "read_directory accepted the input (chunk " << chunk << ")";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos)
          << "chunk " << chunk << ", message: " << msg << "\nmissing: " << f;
    }
  }
}

void expect_same(const Dataset& a, const Dataset& b);

TEST(PlainFormat, LinesCrossingBlockBoundariesReadTheSame) {
  TempDir tmp;
  // CRLF endings, a missing final newline and dense rows longer than the smaller blocks, so that
  // lines, "\r\n" pairs and numbers are cut at every possible place by some block size.
  write_fixture(tmp.path(),
                {{"features.coo.tsv", std::nullopt},
                 {"features.tsv", "1.5\t-2.25e-3\t3\r\n0\t0\t0\n123.125\t4\t5\n6\t7\t8.5"},
                 {"edges.tsv", "0\t1\r\n1\t0\r\n1\t2\n2\t1\n3\t2"},
                 {"meta.tsv", "name\tblocks\r\nnum_classes\t3\n"},
                 {"labels.txt", "0\n1\n2\n1"}});
  const Dataset whole = read_directory(cpu(), tmp.path());
  EXPECT_EQ(whole.name, "blocks");
  EXPECT_EQ(vec(std::get<kernels::Tensor<float>>(whole.features)),
            (std::vector<float>{1.5f, -2.25e-3f, 3, 0, 0, 0, 123.125f, 4, 5, 6, 7, 8.5f}));
  for (const std::size_t chunk : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 64}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    expect_same(whole, detail::read_directory(cpu(), tmp.path(), chunk));
  }
  // Sparse features and a multi-block Cora.
  write_fixture(tmp.path(), {{"features.tsv", std::nullopt}, {"meta.tsv", std::nullopt}});
  expect_same(read_directory(cpu(), tmp.path()), detail::read_directory(cpu(), tmp.path(), 7));
  expect_same(cora(), detail::read_directory(cpu(), cora_dir(), 7));
}

TEST(PlainFormat, ErrorsNameTheRightLineAcrossBlocks) {
  // Each case: fixture files and the expected message fragments, read in blocks of 1, 3, 7 and 8
  // bytes, so that the bad line, or lines before it, cross block boundaries.
  const auto check = [](const Files& files, const std::vector<std::string>& fragments) {
    for (const std::size_t chunk : {1, 3, 7, 8}) {
      TempDir tmp;
      write_fixture(tmp.path(), files);
      expect_chunked_read_error(tmp.path(), chunk, fragments);
    }
  };
  // Line 3 spans bytes 8-12: cut by 3- and 7-byte blocks, line 2 (bytes 4-7) by 3 and 7 too.
  check({{"edges.tsv", "0\t1\n1\t0\n12 x\n3\t2\n"}},
        {"edges.tsv:3: expected two non-negative integer node ids separated by a tab, got "
         "\"12 x\""});
  check({{"edges.tsv", "0\t1\r\n\r\n1\t0\n"}}, {"edges.tsv:2: expected", "got \"\""});
  check({{"features.coo.tsv", "0\t0\t1\n1\t2\t0.5\n3\t1\t2\n1\t2\tabc\n"}},
        {"features.coo.tsv:4: expected a node id, a feature index and a finite value separated "
         "by tabs, got \"1\\t2\\tabc\""});
  check({{"features.coo.tsv", "1\t0\t1\n0\t0\t2\n1\t0\t3\n"}},
        {"features.coo.tsv:3: node 1, feature 0 is listed twice (also on line 1)"});
  check({{"labels.txt", "0\r\n1\r\n0\r\n1\r\n1"}, {"meta.tsv", "name\tx\r\nnum_nodes\t4\n"}},
        {"labels.txt:5: expected end of file (meta.tsv:2 gives num_nodes = 4), got \"1\""});
  check({{"features.coo.tsv", std::nullopt},
         {"features.tsv", "1.25\t2\t3\n4\t5.5\t6\n7\t8\n1\t1\t1\n"}},
        {"features.tsv:3: expected 3 tab-separated finite numbers (the features of node 2), got "
         "\"7\\t8\""});
  check({{"features.coo.tsv", std::nullopt}, {"features.tsv", "1\t2\n3\t4\n"}},
        {"features.tsv:3: expected the features of node 2 (the dataset has 4 nodes), got end of "
         "file"});
  check({{"test_idx.txt", "2\n3\n2\n"}},
        {"test_idx.txt:3: node 2 is listed again (first on test_idx.txt:1)"});
  check({{"val_idx.txt", "1\n3\n"}, {"test_idx.txt", "2\n3\n"}},
        {"test_idx.txt:2: node 3 is listed again (first on val_idx.txt:2)"});
}

// ---- writing and round trips --------------------------------------------------------------------

void expect_same(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.num_classes, b.num_classes);
  EXPECT_EQ(rows_of(a.graph), rows_of(b.graph));
  ASSERT_EQ(a.features.index(), b.features.index());
  if (const auto* x = std::get_if<kernels::Tensor<float>>(&a.features)) {
    const auto& y = std::get<kernels::Tensor<float>>(b.features);
    EXPECT_EQ(x->rows(), y.rows());
    EXPECT_EQ(x->cols(), y.cols());
    EXPECT_EQ(vec(*x), vec(y));  // exact: floats are written in shortest round-trip form
  } else {
    const auto& sa = std::get<SparseFeatures>(a.features);
    const auto& sb = std::get<SparseFeatures>(b.features);
    EXPECT_EQ(sa.num_cols, sb.num_cols);
    EXPECT_EQ(vec(sa.indptr), vec(sb.indptr));
    EXPECT_EQ(vec(sa.indices), vec(sb.indices));
    EXPECT_EQ(vec(sa.values), vec(sb.values));
  }
  EXPECT_EQ(vec(a.labels), vec(b.labels));
  EXPECT_EQ(vec(a.train_idx), vec(b.train_idx));
  EXPECT_EQ(vec(a.val_idx), vec(b.val_idx));
  EXPECT_EQ(vec(a.test_idx), vec(b.test_idx));
}

TEST(PlainFormat, RoundTripsDenseDataset) {
  TempDir tmp;
  const Dataset ds = tiny_dataset();
  write_directory(cpu(), ds, tmp.path() / "out");
  EXPECT_TRUE(fs::exists(tmp.path() / "out" / "features.tsv"));
  expect_same(ds, read_directory(cpu(), tmp.path() / "out"));
}

TEST(PlainFormat, RoundTripsSparseDataset) {
  TempDir tmp;
  Dataset ds = tiny_dataset();
  ds.features = make_csr(5, 40, {{0, 39}, {0, 3}, {3, 0}}, {0.1f, -2.5f, 1e-7f});
  write_directory(cpu(), ds, tmp.path() / "out");
  const Dataset back = read_directory(cpu(), tmp.path() / "out");
  // Rows come back sorted by feature index.
  const auto& x = std::get<SparseFeatures>(back.features);
  EXPECT_EQ(vec(x.indices), (std::vector<std::int32_t>{3, 39, 0}));
  EXPECT_EQ(vec(x.values), (std::vector<float>{-2.5f, 0.1f, 1e-7f}));
  EXPECT_EQ(x.num_cols, 40);
  EXPECT_EQ(rows_of(back.graph), rows_of(ds.graph));
}

TEST(PlainFormat, RoundTripsSyntheticDataset) {
  TempDir tmp;
  SyntheticConfig config;
  config.num_nodes = 300;
  config.num_features = 7;
  const Dataset ds = make_synthetic(cpu(), config);
  write_directory(cpu(), ds, tmp.path() / "synthetic");
  expect_same(ds, read_directory(cpu(), tmp.path() / "synthetic"));
}

TEST(PlainFormat, RoundTripsCora) {
  TempDir tmp;
  write_directory(cpu(), cora(), tmp.path() / "cora");
  expect_same(cora(), read_directory(cpu(), tmp.path() / "cora"));
  // Same edge list text as the original, which is sorted by (src, dst) too.
  std::ifstream original(cora_dir() / "edges.tsv");
  std::ifstream copy(tmp.path() / "cora" / "edges.tsv");
  const std::string a((std::istreambuf_iterator<char>(original)), std::istreambuf_iterator<char>());
  const std::string b((std::istreambuf_iterator<char>(copy)), std::istreambuf_iterator<char>());
  EXPECT_EQ(a, b);
}

TEST(PlainFormat, WriteReplacesOnlyEmptyDirectories) {
  TempDir tmp;
  fs::create_directory(tmp.path() / "empty");
  write_directory(cpu(), tiny_dataset(), tmp.path() / "empty");
  EXPECT_TRUE(fs::exists(tmp.path() / "empty" / "edges.tsv"));
  try {
    write_directory(cpu(), tiny_dataset(), tmp.path() / "empty");
    ADD_FAILURE() << "overwrote a non-empty directory";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("not an empty directory"), std::string::npos) << e.what();
  }
  // No temporary directory is left beside the output.
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(PlainFormat, WriteCreatesParents) {
  TempDir tmp;
  write_directory(cpu(), tiny_dataset(), tmp.path() / "a" / "b" / "c");
  EXPECT_EQ(read_directory(cpu(), tmp.path() / "a" / "b" / "c").num_nodes(), 5);
}

TEST(PlainFormat, WriteRejectsInvalidDatasets) {
  TempDir tmp;
  Dataset ds = tiny_dataset();
  ds.graph.values = tensor<float>(std::vector<float>(6, 2.0f));
  EXPECT_THROW(write_directory(cpu(), ds, tmp.path() / "w"), LogicError);
  ds = tiny_dataset();
  ds.labels.data()[0] = 5;
  EXPECT_THROW(write_directory(cpu(), ds, tmp.path() / "w"), IoError);
  EXPECT_FALSE(fs::exists(tmp.path() / "w"));
}

}  // namespace
}  // namespace halo::datasets::test
