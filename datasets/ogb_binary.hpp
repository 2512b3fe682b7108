#pragma once
// OGB node-property datasets in OGB's binary layout (ogbn-papers100M, `papers100M-bin.zip`).

#include <filesystem>
#include <string>

#include <halo/datasets/dataset.hpp>
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

}  // namespace halo::datasets
