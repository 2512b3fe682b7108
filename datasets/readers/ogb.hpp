#pragma once
// OGB node-property prediction datasets in their raw CSV layout (ogbn-arxiv, -products, ...),
// homogeneous and heterogeneous (ogbn-mag).

#include <filesystem>
#include <string>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/hetero.hpp>
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

/// Reads the OGB heterogeneous node-property raw layout under `root` (ogbn-mag):
/// - `raw/num-node-dict.csv.gz`: a header line of node type names, then one line of their node
///   counts (a single graph); the types are taken in sorted name order, as OGB does;
/// - `raw/triplet-type-list.csv.gz`: one `src_type,relation,dst_type` per line (sorted on load);
/// - `raw/relations/<src>___<relation>___<dst>/edge.csv.gz`: `src,dst` per line, ids local to
///   the types, and `num-edge-list.csv.gz` there: one line, the edge count (checked). The
///   relation is named `<relation>` (`<src>___<relation>___<dst>` when two triplets share it);
///   duplicate edges are removed and the reverses (`rev_<name>`) added (add_reverse_relations);
/// - `raw/node-feat/<type>/node-feat.csv.gz` (optional per type): dense features;
/// - `raw/node-label/<type>/node-label.csv.gz`: present for exactly one type, the target;
/// - `split/<scheme>/<target type>/{train,valid,test}.csv.gz`, `scheme` as for
///   read_ogb_node_raw (empty: the only one).
/// Other files (node_year, edge_reltype, ...) are not read. Host; validated. halo::IoError
/// "<file>:<line>: expected ..., got ..." for malformed content.
HeteroGraph read_ogb_hetero_raw(const kernels::Resources& res, const std::filesystem::path& root,
                                const std::string& split_scheme = "");

}  // namespace halo::datasets
