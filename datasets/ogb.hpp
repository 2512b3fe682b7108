#pragma once
// OGB node-property prediction datasets in their raw CSV layout (ogbn-arxiv, -products, ...).

#include <filesystem>
#include <string>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// Reads the OGB node-property raw layout under `root` (the unzipped dataset directory):
/// - `raw/num-node-list.csv.gz`: one line, the number of nodes n (a single graph);
/// - `raw/edge.csv.gz`: `src,dst` per line, 0-based. Edge src -> dst becomes column src of row
///   dst; duplicates are removed; the graph is NOT symmetrised (OGB adds inverse edges at load
///   time only for datasets whose metadata says add_inverse_edge, e.g. ogbn-products: call
///   `symmetrize` for those);
/// - `raw/node-feat.csv.gz` (optional): n lines of comma-separated floats -> dense features
///   (n x 0 when the file is absent);
/// - `raw/node-label.csv.gz`: n lines with one class id each. `nan` marks an unlabeled node
///   (ogbn-papers100M): Dataset labels must be valid classes, so such nodes get class 0 and
///   must not appear in any split (checked). Several labels per line (multi-task, e.g.
///   ogbn-proteins) are refused;
/// - `split/<scheme>/{train,valid,test}.csv.gz`: one node id per line (sorted on load). When
///   `split_scheme` is empty, `split/` must hold exactly one sub-directory, which is used.
/// Files are streamed (GzLineReader). `ds.name` is root's directory name. Host; validated.
/// halo::IoError "<file>:<line>: expected ..., got ..." for malformed content.
Dataset read_ogb_node_raw(const kernels::Resources& res, const std::filesystem::path& root,
                          const std::string& split_scheme = "");

}  // namespace halo::datasets
