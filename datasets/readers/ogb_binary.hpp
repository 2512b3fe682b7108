#pragma once
// OGB node-property datasets in OGB's binary layout (ogbn-papers100M, `papers100M-bin.zip`).

#include <filesystem>
#include <string>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// Reads OGB's binary node-property layout under `root` (the unzipped dataset directory):
/// - `raw/data.npz`: `edge_index` (2 x E integers; edge src -> dst becomes column src of row
///   dst, duplicates removed, not symmetrised), `num_nodes_list` (one entry, n) and optionally
///   `node_feat` (n x f floats -> dense features; n x 0 when absent);
/// - `raw/node-label.npz`: `node_label` (n or n x 1 numbers; NaN marks an unlabeled node, which
///   gets class 0 and must not be in any split);
/// - `split/<scheme>/{train,valid,test}.csv.gz`: one node id per line (sorted on load); with an
///   empty `split_scheme`, `split/` must hold exactly one sub-directory.
/// `ds.name` is root's directory name. Host; validated. halo::IoError naming the file and key
/// (or file and line) on any problem.
Dataset read_ogb_node_binary(const kernels::Resources& res, const std::filesystem::path& root,
                             const std::string& split_scheme = "");

/// The same dataset written as a store in `out` in bounded memory (what preparing
/// ogbn-papers100M takes: its 1.6B edges and 57 GB of features do not fit a machine's memory):
/// `edge_index` is read front to back from the archive (two NpyStreams, one per row) into a
/// temporary edge file, the graph is built from it row block by row block (build_csr), the
/// training graph's statistics by a second build that writes nothing, `node_feat` is converted
/// `memory_budget / 2` bytes at a time (to options.feature_dtype), `node_label` likewise.
/// open_store of the result equals read_ogb_node_binary(root, split_scheme), bit for bit (f32),
/// whatever the budget. Memory: the budget plus about 25 bytes a node (counts, offsets, labels)
/// and the splits; disk: 8 bytes an edge of temporary space, then the store. Same errors.
PrepareReport prepare_ogb_node_binary(const kernels::Resources& res,
                                      const std::filesystem::path& root,
                                      const std::filesystem::path& out,
                                      const PrepareOptions& options,
                                      const std::string& split_scheme = "");

}  // namespace halo::datasets
