// SNAP edge lists and Matrix Market files: the shared CollegeMsg and 1138_bus files, plus errors.

#include <string>

#include <halo/datasets/readers/edge_list.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

fs::path shared_datasets() { return halo::testing::datasets_dir(); }

std::string error_of(Graph (*read)(const Resources&, const fs::path&), const fs::path& path) {
  try {
    read(cpu(), path);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(EdgeList, ReadsCollegeMsg) {
  const EdgeList el =
      read_edge_list_with_ids(cpu(), shared_datasets() / "collegemsg" / "events.tsv");
  // PROVENANCE.md: 1899 nodes (ids 1..1899), 59835 events, 20296 distinct directed pairs.
  EXPECT_EQ(el.graph.num_rows(), 1899);
  EXPECT_EQ(el.graph.num_edges(), 20296);
  ASSERT_EQ(el.original_ids.size(), 1899u);
  EXPECT_EQ(el.original_ids.front(), 1);
  EXPECT_EQ(el.original_ids.back(), 1899);
  // The first event 1 -> 2 is column 0 of row 1.
  const auto rows = rows_of(el.graph);
  EXPECT_NE(std::find(rows[1].begin(), rows[1].end(), std::make_pair(0, 1.0)), rows[1].end());
  for (std::int64_t v = 0; v < el.graph.num_rows(); ++v) {
    for (const auto& [c, w] : rows[static_cast<std::size_t>(v)]) EXPECT_NE(c, v);  // no loops
  }
}

TEST(EdgeList, RenumbersSparseIdsAndSkipsComments) {
  TempDir tmp;
  write_text(tmp.path() / "g.txt",
             "# Directed graph\n% other comment\n\n100\t7 1.5 extra\n7 100\n  7   5000  \n7 100\n");
  const EdgeList el = read_edge_list_with_ids(cpu(), tmp.path() / "g.txt");
  EXPECT_EQ(el.original_ids, (std::vector<std::int64_t>{7, 100, 5000}));
  EXPECT_EQ(rows_of(el.graph), (std::vector<Row>{{{1, 1.0}}, {{0, 1.0}}, {{0, 1.0}}}));
  write_text(tmp.path() / "bad.txt", "1 2\n3\n");
  const std::string msg = error_of(read_edge_list, tmp.path() / "bad.txt");
  EXPECT_NE(msg.find("bad.txt:2: expected two non-negative integer node ids"), std::string::npos)
      << msg;
  write_text(tmp.path() / "neg.txt", "1 -2\n");
  EXPECT_NE(error_of(read_edge_list, tmp.path() / "neg.txt").find("neg.txt:1:"), std::string::npos);
}

TEST(MatrixMarket, Reads1138Bus) {
  const Graph g = read_matrix_market(cpu(), shared_datasets() / "matrix_market" / "1138_bus.mtx");
  // PROVENANCE.md: 1138 x 1138, 2596 stored entries, 4054 nonzeros once expanded.
  EXPECT_EQ(g.num_rows(), 1138);
  EXPECT_EQ(g.num_cols, 1138);
  EXPECT_EQ(g.num_edges(), 4054);
  EXPECT_TRUE(g.symmetric);
  ASSERT_EQ(g.values.numel(), 4054);
  // First entries of the file: (1,1) 1474.779, (5,1) -9.017133 mirrored to (1,5).
  const auto rows = rows_of(g);
  ASSERT_GE(rows[0].size(), 2u);
  EXPECT_EQ(rows[0][0].first, 0);
  EXPECT_NEAR(rows[0][0].second, 1474.779, 1e-3);
  EXPECT_EQ(rows[0][1].first, 4);
  EXPECT_NEAR(rows[0][1].second, -9.017133, 1e-5);
  EXPECT_EQ(rows[4][0].first, 0);
  EXPECT_NEAR(rows[4][0].second, -9.017133, 1e-5);
  Dataset ds;  // validate() checks the symmetric flag against the transpose
  ds.graph = g.clone(cpu());
  ds.features = tensor<float>(std::vector<float>(1138, 0.f), 1138, 1);
  ds.labels = tensor<std::int32_t>(std::vector<std::int32_t>(1138, 0));
  ds.num_classes = 1;
  EXPECT_NO_THROW(validate(ds));
}

TEST(MatrixMarket, PatternGeneralAndErrors) {
  TempDir tmp;
  write_text(tmp.path() / "p.mtx",
             "%%MatrixMarket matrix coordinate pattern general\n% c\n3 3 3\n1 2\n3 1\n2 2\n");
  const Graph g = read_matrix_market(cpu(), tmp.path() / "p.mtx");
  EXPECT_FALSE(g.symmetric);
  EXPECT_TRUE(g.values.empty());
  EXPECT_EQ(rows_of(g), (std::vector<Row>{{{1, 1.0}}, {{1, 1.0}}, {{0, 1.0}}}));

  const auto check = [&](const std::string& text, const std::string& want) {
    write_text(tmp.path() / "e.mtx", text);
    const std::string msg = error_of(read_matrix_market, tmp.path() / "e.mtx");
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  };
  check("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
        "e.mtx:1: only the coordinate");
  check("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", "e.mtx:1: field");
  check("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", "e.mtx:1: symmetry");
  check("%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 1\n",
        "e.mtx:2: the matrix is 2 x 3");
  check("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n", "e.mtx:3: entry (3, 1)");
  check("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n",
        "e.mtx:4: expected 2 entries");
  check("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 1\n",
        "e.mtx:4: more entries");
  check("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 x\n",
        "e.mtx:3: expected an entry");
  check("hello\n", "e.mtx:1: expected \"%%MatrixMarket");
}

}  // namespace
}  // namespace halo::datasets::test
