#pragma once
// A tiny dataset in OGB's heterogeneous raw layout (ogbn-mag's files and names): four node
// types, four relations (one duplicate edge), 3-d paper features, a time split of the papers.

#include <string>
#include <utility>
#include <vector>

namespace halo::datasets::test {

/// One relation of the fixture: its triplet and its edges (src, dst) as listed.
struct MagFixtureRelation {
  std::string src, name, dst;
  std::vector<std::pair<int, int>> edges;
};

inline std::vector<MagFixtureRelation> mag_fixture_relations() {
  return {{"paper", "cites", "paper", {{0, 1}, {1, 2}, {3, 0}, {2, 1}}},
          {"author", "writes", "paper", {{0, 0}, {0, 1}, {1, 1}, {2, 3}, {0, 0}}},
          {"paper", "has_topic", "field_of_study", {{0, 0}, {1, 0}, {2, 1}, {3, 1}, {3, 0}}},
          {"author", "affiliated_with", "institution", {{0, 0}, {1, 0}, {2, 1}}}};
}

/// (path under the dataset root, uncompressed text) of every file; each is gzipped as OGB
/// ships it. The header of num-node-dict and the triplet list are deliberately unsorted.
inline std::vector<std::pair<std::string, std::string>> mag_fixture_files() {
  std::vector<std::pair<std::string, std::string>> f = {
      {"raw/num-node-dict.csv.gz", "paper,author,institution,field_of_study\n4,3,2,2\n"},
      {"raw/node-feat/paper/node-feat.csv.gz", "1,0,0.5\n0,1,0\n-1,2,0\n0,0,3\n"},
      {"raw/node-feat/paper/node_year.csv.gz", "2010\n2011\n2018\n2019\n"},
      {"raw/node-label/paper/node-label.csv.gz", "0\n1\n2\n1\n"},
      {"raw/nodetype-has-label.csv.gz",
       "author,field_of_study,institution,paper\nFalse,False,False,True\n"},
      {"split/time/nodetype-has-split.csv.gz",
       "author,field_of_study,institution,paper\nFalse,False,False,True\n"},
      {"split/time/paper/train.csv.gz", "2\n0\n"},
      {"split/time/paper/valid.csv.gz", "1\n"},
      {"split/time/paper/test.csv.gz", "3\n"}};
  std::string triplets;
  for (const MagFixtureRelation& r : mag_fixture_relations()) {
    triplets += r.src + "," + r.name + "," + r.dst + "\n";
    const std::string dir = "raw/relations/" + r.src + "___" + r.name + "___" + r.dst + "/";
    std::string edges;
    for (const auto& [s, d] : r.edges) edges += std::to_string(s) + "," + std::to_string(d) + "\n";
    f.emplace_back(dir + "edge.csv.gz", edges);
    f.emplace_back(dir + "num-edge-list.csv.gz", std::to_string(r.edges.size()) + "\n");
    f.emplace_back(dir + "edge_reltype.csv.gz", std::string(r.edges.size(), '0'));
  }
  f.emplace_back("raw/triplet-type-list.csv.gz", triplets);
  return f;
}

}  // namespace halo::datasets::test
