#pragma once
// Learnable embeddings of a featureless node type spread over the ranks: each rank owns its
// nodes' rows and their SparseAdam state; a pass fetches the rows it reads from their owners,
// and its backward returns their gradients to the owners, which sum them over the ranks and
// update only their own rows.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/nn/embedding.hpp>
#include <halo/nn/hetero_model.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/data/typed_batches.hpp>

namespace halo::runtime {

/// nn::EmbeddingRows over `comm`: lookup and set_gradient are collective (every rank calls
/// each once per pass, with its own ids or none). A row's gradient is the sum over the ranks of
/// their rows' gradients (this rank's first, then by rank), so P ranks compute one process's
/// update up to the order of that sum; the table counts a SparseAdam step whenever any rank's
/// pass read one of its rows (as one process counts a pass that read any row). Host memory.
class DistributedEmbedding final : public nn::EmbeddingRows<float> {
 public:
  /// `owned`: this rank's rows (nn::HeteroModel::embedding_part, in the order of its nodes'
  /// rows here); owner[v] and row[v]: the rank owning node v of the type and v's row there.
  DistributedEmbedding(Comm& comm, std::unique_ptr<nn::SparseEmbedding<float>> owned,
                       std::vector<std::int32_t> owner, std::vector<kernels::NodeId> row);

  void lookup(const kernels::Resources& res, kernels::Span<const kernels::NodeId> ids,
              kernels::Tensor<float>& out) override;
  void set_gradient(const kernels::Resources& res, kernels::Span<const kernels::NodeId> ids,
                    const kernels::Tensor<float>& grad) override;

  /// The whole table on every rank (collective): every rank's rows in node order.
  std::unique_ptr<nn::SparseEmbedding<float>> gather(const kernels::Resources& res);
  /// This rank's rows (its SparseAdam table and checkpoint state).
  nn::SparseEmbedding<float>& owned() { return *m_owned; }
  /// Bytes sent by this rank (ids, rows and gradients) since construction.
  std::int64_t bytes_sent() const { return m_bytes_sent; }

 private:
  Comm& m_comm;
  std::unique_ptr<nn::SparseEmbedding<float>> m_owned;
  std::vector<std::int32_t> m_owner;
  std::vector<kernels::NodeId> m_row;
  // The last lookup: per rank the positions (in ids) of the rows asked of it, and the nodes
  // the other ranks asked of this one (their lists concatenated by rank, offsets in m_asked_at).
  std::vector<std::vector<std::int64_t>> m_want;
  std::vector<kernels::NodeId> m_asked;
  std::vector<std::int64_t> m_asked_at;
  // set_gradient's sums: per owned row its slot in m_sum (-1: not touched), the rows touched.
  std::vector<std::int64_t> m_slot;
  std::vector<kernels::NodeId> m_touched;
  std::vector<float> m_sum;
  std::int64_t m_bytes_sent = 0;
};

/// The learnable embeddings of `model`'s featureless types spread over the ranks of `comm`: per
/// such type (ascending) a DistributedEmbedding of the rows this rank owns (`layout`; `owners`,
/// gathered here when empty: gather_type_owners), which the model reads from then on
/// (nn::HeteroModel::spread_embedding). One rank owns every row: none are made, and the model's
/// own tables serve (on any device). Several ranks train them on the CPU (halo::LogicError
/// otherwise). Collective.
struct SpreadEmbeddings {
  std::vector<std::unique_ptr<DistributedEmbedding>> tables;
  std::vector<std::int32_t> types;  // the type of each
};
SpreadEmbeddings spread_embeddings(const kernels::Resources& res, Comm& comm,
                                   nn::HeteroModel<float>& model,
                                   const partition::HeteroPartLayout& layout, TypeOwners& owners);

}  // namespace halo::runtime
