#pragma once
// Zachary's karate club from a GML file (the NetworkX export with the `club` node attribute).

#include <filesystem>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// Reads Zachary's karate club from GML as NetworkX writes it: `graph [ node [ id I ... club
/// "Mr. Hi" | "Officer" ... ] ... edge [ source S target T ... ] ... ]`. Other keys (label,
/// weight, computed attributes) are skipped; `#` starts a comment line. Node ids must be 0..n-1
/// (in any order). The result:
/// - the graph lists every edge in both directions, without duplicates, unweighted (Zachary's
///   interaction counts are dropped), flagged symmetric;
/// - features: the n x n identity (sparse), the usual choice for this featureless graph;
/// - labels: 0 for "Mr. Hi", 1 for "Officer";
/// - splits: train = {0, n-1} (the instructor and the administrator, the classic
///   semi-supervised setup), then the other nodes in id order alternate between val and test.
/// halo::IoError "<file>:<line>: ..." on malformed GML, a node without a known club, ids out of
/// range or repeated, or an edge naming an unknown node. Host; validated.
Dataset read_karate_gml(const kernels::Resources& res, const std::filesystem::path& path);

}  // namespace halo::datasets
