#pragma once
// An ogbn-mag-shaped heterogeneous graph, generated: paper, author, institution and
// field_of_study with ogbn-mag's node and edge counts (times a scale), for benchmarks.

#include <cstdint>

#include <halo/datasets/hetero.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// ogbn-mag's published counts (OGB, https://ogb.stanford.edu/docs/nodeprop/#ogbn-mag).
struct MagCounts {
  static constexpr std::int64_t kPapers = 736389, kAuthors = 1134649, kInstitutions = 8740,
                                kFields = 59965;
  static constexpr std::int64_t kAffiliatedWith = 1043998, kWrites = 7145660, kCites = 5416271,
                                kHasTopic = 7505078;
  static constexpr std::int64_t kTrain = 629571, kValid = 64879, kTest = 41939;
};

struct SyntheticMagConfig {
  /// Every node and edge count is ogbn-mag's times this (at least one node per type).
  double scale = 1.0;
  std::int64_t num_features = 128;  // dense paper features
  std::int32_t num_classes = 349;
  std::uint64_t seed = 0;
};

/// The graph: the four types in OGB's (sorted) order, the relations affiliated_with (author ->
/// institution), writes (author -> paper), cites (paper -> paper) and has_topic (paper ->
/// field_of_study) with ogbn-mag's edge counts x scale drawn before de-duplication (so a few
/// fewer are stored), then their reverses (add_reverse_relations). An edge's source is uniform
/// over its type, its destination floor(n u^2) for u uniform in [0, 1) (a few popular papers,
/// fields and institutions). Papers: a class uniform in [0, num_classes) and dense
/// features = a random centroid of the class (uniform in [-1, 1)) + uniform noise in
/// [-1, 1); the other types have none. Split by paper id, in ogbn-mag's proportions (train,
/// valid, test; ids as years). Draws keyed by (seed, kStreamSynthetic). Host; about 4 bytes per
/// feature, 16 bytes per edge while building. halo::LogicError for scale <= 0 or counts that
/// overflow 32-bit ids.
HeteroGraph make_synthetic_mag(const kernels::Resources& res, const SyntheticMagConfig& config);

}  // namespace halo::datasets
