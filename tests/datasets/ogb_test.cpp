// The OGB node-property raw readers (homogeneous and heterogeneous) on fixtures written in
// that layout.

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <variant>

#include <halo/datasets/readers/ogb.hpp>
#include <halo/kernels/error.hpp>

#include "archive_test_util.hpp"
#include "datasets_test_util.hpp"
#include "ogb_mag_fixture.hpp"

namespace halo::datasets::test {
namespace {

/// A 5-node OGB dataset: node 4 unlabeled (nan) and in no split, a duplicate edge.
void write_ogb(const fs::path& root, const std::string& scheme = "time") {
  fs::create_directories(root / "raw");
  fs::create_directories(root / "split" / scheme);
  write_gz(root / "raw" / "num-node-list.csv.gz", "5\n");
  write_gz(root / "raw" / "edge.csv.gz", "0,1\n1,2\n3,1\n0,1\n4,0\n");
  write_gz(root / "raw" / "node-feat.csv.gz", "0.5,-1.0,2\n1e-3,0,0\n-0.25,3.5,1\n0,0,0\n7,8,9\n");
  write_gz(root / "raw" / "node-label.csv.gz", "2\n0\n1.0\n2\nnan\n");
  write_gz(root / "split" / scheme / "train.csv.gz", "3\n0\n");
  write_gz(root / "split" / scheme / "valid.csv.gz", "1\n");
  write_gz(root / "split" / scheme / "test.csv.gz", "2\n");
}

std::string error_of(const fs::path& root, const std::string& scheme = "") {
  try {
    read_ogb_node_raw(cpu(), root, scheme);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(OgbReader, ReadsTheRawLayout) {
  TempDir tmp;
  const fs::path root = tmp.path() / "ogbn_tiny";
  write_ogb(root);
  const Dataset ds = read_ogb_node_raw(cpu(), root);
  EXPECT_EQ(ds.name, "ogbn_tiny");
  EXPECT_EQ(ds.num_nodes(), 5);
  // Edge src -> dst is column src of row dst; the duplicate 0 -> 1 is gone.
  EXPECT_EQ(rows_of(ds.graph),
            (std::vector<Row>{{{4, 1.0}}, {{0, 1.0}, {3, 1.0}}, {{1, 1.0}}, {}, {}}));
  EXPECT_FALSE(ds.graph.symmetric);
  const auto& x = std::get<kernels::Tensor<float>>(ds.features);
  EXPECT_EQ(x.rows(), 5);
  EXPECT_EQ(x.cols(), 3);
  EXPECT_EQ(vec(x),
            (std::vector<float>{0.5f, -1, 2, 1e-3f, 0, 0, -0.25f, 3.5f, 1, 0, 0, 0, 7, 8, 9}));
  EXPECT_EQ(vec(ds.labels), (std::vector<std::int32_t>{2, 0, 1, 2, 0}));
  EXPECT_EQ(ds.num_classes, 3);
  EXPECT_EQ(vec(ds.train_idx), (std::vector<NodeId>{0, 3}));
  EXPECT_EQ(vec(ds.val_idx), (std::vector<NodeId>{1}));
  EXPECT_EQ(vec(ds.test_idx), (std::vector<NodeId>{2}));
  // The same scheme named explicitly.
  EXPECT_EQ(read_ogb_node_raw(cpu(), root, "time").num_nodes(), 5);
}

TEST(OgbReader, ErrorsNameFileAndLine) {
  TempDir tmp;
  const fs::path root = tmp.path() / "d";
  write_ogb(root);
  write_gz(root / "raw" / "edge.csv.gz", "0,1\n1;2\n");
  std::string msg = error_of(root);
  EXPECT_NE(msg.find("edge.csv.gz:2: expected two node ids separated by a comma, got \"1;2\""),
            std::string::npos)
      << msg;
  write_gz(root / "raw" / "edge.csv.gz", "0,1\n1,5\n");
  msg = error_of(root);
  EXPECT_NE(msg.find("edge.csv.gz:2: node id 5 is outside [0, 5)"), std::string::npos) << msg;
  write_gz(root / "raw" / "edge.csv.gz", "0,1\n");
  write_gz(root / "raw" / "node-feat.csv.gz", "1,2,3\n1,2\n");
  msg = error_of(root);
  EXPECT_NE(msg.find("node-feat.csv.gz:2: expected 3 values"), std::string::npos) << msg;
  write_gz(root / "raw" / "node-feat.csv.gz", "1,2,3\n1,x,3\n");
  msg = error_of(root);
  EXPECT_NE(msg.find("node-feat.csv.gz:2: expected comma-separated finite numbers"),
            std::string::npos)
      << msg;
  write_gz(root / "raw" / "node-feat.csv.gz", "1\n2\n3\n4\n5\n");
  write_gz(root / "split" / "time" / "test.csv.gz", "2\n4\n");
  msg = error_of(root);
  EXPECT_NE(msg.find("test.csv.gz:2: node 4 has no label"), std::string::npos) << msg;
  write_gz(root / "split" / "time" / "test.csv.gz", "2\n");
  write_gz(root / "raw" / "node-label.csv.gz", "0,1\n");
  msg = error_of(root);
  EXPECT_NE(msg.find("node-label.csv.gz:1: several labels"), std::string::npos) << msg;
  write_gz(root / "raw" / "node-label.csv.gz", "0\n1\n");
  msg = error_of(root);
  EXPECT_NE(msg.find("node-label.csv.gz:3: expected the label of node 2"), std::string::npos)
      << msg;
}

TEST(OgbReader, RefusesAbsurdInferredClassCount) {
  TempDir tmp;
  const fs::path root = tmp.path() / "d";
  write_ogb(root);
  write_gz(root / "raw" / "node-label.csv.gz", "2\n0\n2147483646\n2\nnan\n");
  const std::string msg = error_of(root);
  EXPECT_NE(msg.find("node-label.csv.gz:3: class id 2147483646 would make 2147483647 classes"),
            std::string::npos)
      << msg;
}

TEST(OgbReader, SplitSchemeChoice) {
  TempDir tmp;
  const fs::path root = tmp.path() / "d";
  write_ogb(root, "a");
  write_ogb(root, "b");
  EXPECT_NE(error_of(root).find("exactly one split scheme"), std::string::npos);
  EXPECT_EQ(read_ogb_node_raw(cpu(), root, "b").num_nodes(), 5);
  EXPECT_NE(error_of(root, "c").find("no such split scheme"), std::string::npos);
}

TEST(OgbReader, FeaturesAreOptional) {
  TempDir tmp;
  const fs::path root = tmp.path() / "d";
  write_ogb(root);
  fs::remove(root / "raw" / "node-feat.csv.gz");
  const Dataset ds = read_ogb_node_raw(cpu(), root);
  EXPECT_EQ(ds.num_features(), 0);
  EXPECT_EQ(ds.num_nodes(), 5);
}

void write_mag(const fs::path& root) {
  for (const auto& [path, text] : mag_fixture_files()) {
    fs::create_directories((root / path).parent_path());
    write_gz(root / path, text);
  }
}

std::string mag_error_of(const fs::path& root) {
  try {
    read_ogb_hetero_raw(cpu(), root);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

std::set<std::pair<int, int>> src_dst_pairs(const Relation& r) {
  std::set<std::pair<int, int>> s;
  for (std::int64_t d = 0; d < r.adj.num_rows(); ++d)
    for (std::int64_t e = r.adj.indptr.data()[d]; e < r.adj.indptr.data()[d + 1]; ++e)
      s.emplace(r.adj.indices.data()[e], static_cast<int>(d));
  return s;
}

TEST(OgbHeteroReader, ReadsTheMagLayout) {
  TempDir tmp;
  const fs::path root = tmp.path() / "mag";
  write_mag(root);
  const HeteroGraph g = read_ogb_hetero_raw(cpu(), root);
  EXPECT_EQ(g.name, "mag");
  // Types in sorted name order, as OGB takes them.
  ASSERT_EQ(g.num_types(), 4);
  const std::vector<std::pair<std::string, std::int64_t>> types = {
      {"author", 3}, {"field_of_study", 2}, {"institution", 2}, {"paper", 4}};
  for (std::size_t t = 0; t < types.size(); ++t) {
    EXPECT_EQ(g.node_types[t].name, types[t].first);
    EXPECT_EQ(g.node_types[t].num_nodes, types[t].second);
    EXPECT_EQ(g.node_types[t].has_features(), types[t].first == "paper");
  }
  const std::int32_t paper = g.find_type("paper");
  EXPECT_EQ(g.target_type, paper);
  const auto& x = std::get<kernels::Tensor<float>>(g.node_types[3].features);
  EXPECT_EQ(vec(x), (std::vector<float>{1, 0, 0.5f, 0, 1, 0, -1, 2, 0, 0, 0, 3}));
  // The triplets sorted, then their reverses in the same order; duplicates removed.
  std::vector<MagFixtureRelation> rels = mag_fixture_relations();
  std::sort(rels.begin(), rels.end(), [](const auto& a, const auto& b) {
    return std::tie(a.src, a.name, a.dst) < std::tie(b.src, b.name, b.dst);
  });
  ASSERT_EQ(g.relations.size(), 2 * rels.size());
  for (std::size_t i = 0; i < rels.size(); ++i) {
    const Relation& r = g.relations[i];
    const Relation& rev = g.relations[i + rels.size()];
    EXPECT_EQ(r.name, rels[i].name);
    EXPECT_EQ(rev.name, "rev_" + rels[i].name);
    EXPECT_EQ(r.src_type, g.find_type(rels[i].src));
    EXPECT_EQ(r.dst_type, g.find_type(rels[i].dst));
    EXPECT_EQ(rev.src_type, r.dst_type);
    EXPECT_EQ(rev.dst_type, r.src_type);
    const std::set<std::pair<int, int>> want(rels[i].edges.begin(), rels[i].edges.end());
    EXPECT_EQ(src_dst_pairs(r), want) << r.name;
    std::set<std::pair<int, int>> swapped;
    for (const auto& [s, d] : want) swapped.emplace(d, s);
    EXPECT_EQ(src_dst_pairs(rev), swapped) << rev.name;
    EXPECT_EQ(r.adj.num_edges(), static_cast<std::int64_t>(want.size()));
  }
  EXPECT_EQ(vec(g.labels), (std::vector<std::int32_t>{0, 1, 2, 1}));
  EXPECT_EQ(g.num_classes, 3);
  EXPECT_EQ(vec(g.train_idx), (std::vector<NodeId>{0, 2}));
  EXPECT_EQ(vec(g.val_idx), (std::vector<NodeId>{1}));
  EXPECT_EQ(vec(g.test_idx), (std::vector<NodeId>{3}));
}

TEST(OgbHeteroReader, ErrorsNameFileAndLine) {
  TempDir tmp;
  const fs::path root = tmp.path() / "mag";
  write_mag(root);
  const fs::path cites = root / "raw" / "relations" / "paper___cites___paper";
  write_gz(cites / "edge.csv.gz", "0,1\n0,4\n");
  std::string msg = mag_error_of(root);
  EXPECT_NE(msg.find("edge.csv.gz:2: edge 0 -> 4 outside the types' ranges"), std::string::npos)
      << msg;
  write_gz(cites / "edge.csv.gz", "0,1\n");
  msg = mag_error_of(root);
  EXPECT_NE(msg.find("1 edges, but num-edge-list.csv.gz says 4"), std::string::npos) << msg;
  write_mag(root);
  write_gz(root / "raw" / "triplet-type-list.csv.gz", "paper,cites,venue\n");
  msg = mag_error_of(root);
  EXPECT_NE(msg.find("triplet-type-list.csv.gz:1: unknown node type 'venue'"), std::string::npos)
      << msg;
  write_mag(root);
  write_gz(root / "raw" / "num-node-dict.csv.gz", "paper,author\n4\n");
  msg = mag_error_of(root);
  EXPECT_NE(msg.find("num-node-dict.csv.gz:2: expected 2 comma-separated node counts"),
            std::string::npos)
      << msg;
  write_mag(root);
  fs::create_directories(root / "raw" / "node-label" / "author");
  write_gz(root / "raw" / "node-label" / "author" / "node-label.csv.gz", "0\n0\n0\n");
  msg = mag_error_of(root);
  EXPECT_NE(msg.find("one labelled (target) type expected"), std::string::npos) << msg;
  fs::remove_all(root / "raw" / "node-label");
  msg = mag_error_of(root);
  EXPECT_NE(msg.find("no <type>/node-label.csv.gz"), std::string::npos) << msg;
}

}  // namespace
}  // namespace halo::datasets::test
