#pragma once
// Graphs from text: SNAP-style edge lists and Matrix Market coordinate files.

#include <cstdint>
#include <filesystem>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// An edge-list graph and the file's id of each node.
struct EdgeList {
  Graph graph;
  /// original_ids[v]: the id that node v has in the file (ascending).
  std::vector<std::int64_t> original_ids;
};

/// Reads a SNAP-style edge list: lines `src dst [more columns...]` separated by spaces or tabs;
/// lines starting with '#' or '%' and blank lines are skipped; extra columns (timestamps,
/// weights) are ignored. Ids are non-negative integers that may be sparse or start at 1, so they
/// are renumbered densely in ascending order: node v is the v-th smallest id that appears in the
/// file (CollegeMsg's 1..1899 become 0..1898); isolated ids that never appear get no node. The
/// graph is directed as listed (edge src -> dst is column src of row dst), with repeated edges
/// (e.g. repeated temporal events) merged and self-loops kept; rows sorted; unweighted. Host.
/// halo::IoError "<file>:<line>: expected ..., got ..." on malformed lines.
EdgeList read_edge_list_with_ids(const kernels::Resources& res, const std::filesystem::path& path);

/// `read_edge_list_with_ids(res, path).graph`.
Graph read_edge_list(const kernels::Resources& res, const std::filesystem::path& path);

/// Reads a Matrix Market file `%%MatrixMarket matrix coordinate <field> <symmetry>` with field
/// real, integer or pattern and symmetry general or symmetric ('%' comment lines; 1-based
/// indices). The matrix must be square. Entry (i, j, v) is stored in row i-1, column j-1 with
/// value v (no values for pattern files); a symmetric file's off-diagonal entries are mirrored,
/// and the result is flagged symmetric. Rows are sorted; duplicate entries are kept, as stored.
/// halo::IoError "<file>:<line>: ..." on a bad header, size line or entry, and when the number
/// of entries differs from the size line. Host.
Graph read_matrix_market(const kernels::Resources& res, const std::filesystem::path& path);

}  // namespace halo::datasets
