#pragma once
// The Planetoid citation datasets (Cora, CiteSeer, PubMed) from their original ind.* pickles.

#include <filesystem>
#include <string>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// Reads `dir/ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}` (Yang et al. 2016) through the
/// restricted unpickler (see pickle.hpp) and applies the standard Kipf / PyG processing:
/// - features = vstack(allx, tx'), labels = argmax of vstack(ally, ty'), then row
///   test_index[i] takes row sorted(test_index)[i] (the files list test rows out of order);
/// - tx' / ty' are tx / ty padded, as PyG does for CiteSeer, to cover every id in
///   [min(test_index), max(test_index)]: ids missing from test.index (CiteSeer's isolated
///   test nodes) get an all-zero feature row and an all-zero label row, hence class 0 (argmax of
///   zeros, as in PyG), and are in no split;
/// - train = [0, len(y)), val = [len(y), len(y) + 500), test = sorted(test_index);
/// - the graph has k -> v and v -> k for every `graph[k]` entry v, without self-loops and
///   duplicates, rows sorted, flagged symmetric.
/// Features stay sparse (CSR with float values; stored zeros are dropped) and are not
/// row-normalised. `ds.name` is `name`. Everything is on the host; the result is validated.
/// halo::IoError names the file on any problem, including refused pickle globals.
Dataset read_planetoid(const kernels::Resources& res, const std::filesystem::path& dir,
                       const std::string& name);

}  // namespace halo::datasets
