#pragma once
// A generated dataset in the typed directory format (docs/formats.md), unlike heco_acm: four
// node types, the target type second ("item"), dense features on the target, sparse ones on
// another type, two featureless types, a relation within one type. Its labels follow the
// items' features and tags, so a model can learn them.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/rng.hpp>

namespace halo::testing {

struct HeteroFixture {
  static constexpr int kUsers = 30, kItems = 45, kTags = 9, kShops = 4, kClasses = 3;
  /// (src, dst) per stored relation, in edge_types.tsv order: buys (user -> item), tagged
  /// (item -> tag), sells (shop -> item), follows (user -> user).
  std::vector<std::vector<std::pair<int, int>>> edges;
  std::vector<int> labels;            // per item
  std::vector<int> train, val, test;  // split 4, in file order (not sorted)
};

/// Writes the fixture into `dir` (which must exist) and returns what it wrote.
inline HeteroFixture write_hetero_fixture(const std::filesystem::path& dir) {
  namespace rng = kernels::rng;
  HeteroFixture f;
  const auto put = [&](const std::string& name, const std::string& text) {
    std::filesystem::create_directories((dir / name).parent_path());
    std::ofstream(dir / name, std::ios::binary) << text;
  };
  const auto u = [](std::uint64_t stream, std::uint64_t i) {
    return rng::uniform_double(99, rng::stream_id(rng::kStreamSynthetic, 99, stream), i);
  };
  put("node_types.tsv",
      "# type\tnum_nodes\tfeature_file\tfeature_dim\tfeature_kind\n"
      "user\t30\t-\t0\tnone\n"
      "item\t45\tfeatures_item.dense.tsv\t4\tembedding\n"
      "tag\t9\tfeatures_tag.coo.tsv\t5\tbinary\n"
      "shop\t4\t-\t0\tnone\n");
  f.edges.resize(4);
  std::string items, labels, tags;
  for (int i = 0; i < HeteroFixture::kItems; ++i) {
    const int c = i % HeteroFixture::kClasses;
    f.labels.push_back(c);
    labels += std::to_string(c) + "\n";
    for (int k = 0; k < 4; ++k) {
      const double noise = u(1, static_cast<std::uint64_t>(i * 4 + k)) - 0.5;
      // Appended piece by piece (GCC 12's -Wrestrict false positive on "literal" + string).
      items.append(k ? "\t" : "").append(std::to_string((k == c ? 1.0 : 0.0) + 0.6 * noise));
    }
    items += "\n";
    f.edges[1].emplace_back(i, c * 3 + i % 3);  // tags 3c..3c+2 belong to class c
    f.edges[2].emplace_back(i % HeteroFixture::kShops, i);
  }
  for (int t = 0; t < HeteroFixture::kTags; ++t)
    tags += std::to_string(t) + "\t" + std::to_string(t % 5) + "\t1\n";
  for (int a = 0; a < HeteroFixture::kUsers; ++a) {
    for (int i = 0; i < HeteroFixture::kItems; ++i)
      if (u(2, static_cast<std::uint64_t>(a * 64 + i)) < 0.08) f.edges[0].emplace_back(a, i);
    if (a % 7 != 3) f.edges[3].emplace_back(a, (a * 11 + 5) % HeteroFixture::kUsers);
  }
  put("features_item.dense.tsv", items);
  put("features_tag.coo.tsv", tags);
  put("labels_item.txt", labels);
  const char* files[] = {"edges_buys.tsv", "edges_tagged.tsv", "edges_sells.tsv",
                         "edges_follows.tsv"};
  for (int r = 0; r < 4; ++r) {
    std::string text;
    for (const auto& [s, d] : f.edges[static_cast<std::size_t>(r)])
      text += std::to_string(s) + "\t" + std::to_string(d) + "\n";
    put(files[r], text);
  }
  put("edge_types.tsv",
      "# relation\tsrc_type\tdst_type\tfile\tnum_edges\n"
      "buys\tuser\titem\tedges_buys.tsv\t" +
          std::to_string(f.edges[0].size()) + "\n" + "tagged\titem\ttag\tedges_tagged.tsv\t" +
          std::to_string(f.edges[1].size()) + "\n" + "sells\tshop\titem\tedges_sells.tsv\t" +
          std::to_string(f.edges[2].size()) + "\n" + "follows\tuser\tuser\tedges_follows.tsv\t" +
          std::to_string(f.edges[3].size()) + "\n");
  // Split 4: 4 items per class for training (listed in descending order), 9 for validation,
  // the rest for testing; split 2: 2 per class, the same validation and test items.
  std::string train4, train2, val, test;
  for (int i = HeteroFixture::kItems - 1; i >= 0; --i)
    if (i >= HeteroFixture::kItems - 12) {
      f.train.push_back(i);
      train4 += std::to_string(i) + "\n";
      if (i >= HeteroFixture::kItems - 6) train2 += std::to_string(i) + "\n";
    }
  for (int i = 0; i < HeteroFixture::kItems - 12; ++i) {
    (i < 9 ? f.val : f.test).push_back(i);
    (i < 9 ? val : test) += std::to_string(i) + "\n";
  }
  put("splits/train_4.txt", train4);
  put("splits/val_4.txt", val);
  put("splits/test_4.txt", test);
  put("splits/train_2.txt", train2);
  put("splits/val_2.txt", val);
  put("splits/test_2.txt", test);
  return f;
}

}  // namespace halo::testing
