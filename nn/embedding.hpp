#pragma once
// Learnable node embeddings for featureless node types, updated sparsely (SparseAdam).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <halo/kernels/optim.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// A num_rows x dim table, one row per node of a type. A pass looks up some rows (`lookup`),
/// its backward hands the gradient of exactly those rows back (`set_gradient`), and SparseAdam
/// updates only them: a step costs the rows a batch touched, not the table.
template <class T>
class SparseEmbedding {
 public:
  /// Rows Glorot-uniform from (seed, param_id) as a num_rows x dim weight. On res's device.
  SparseEmbedding(const kernels::Resources& res, std::string name, std::int64_t num_rows,
                  std::int64_t dim, std::uint64_t seed, std::uint64_t param_id);
  /// The rows `rows` (in that order) of the table_rows x dim table the constructor above makes:
  /// a process's part of a table spread over processes.
  SparseEmbedding(const kernels::Resources& res, std::string name,
                  std::span<const kernels::NodeId> rows, std::int64_t table_rows, std::int64_t dim,
                  std::uint64_t seed, std::uint64_t param_id);

  /// out(i, :) = table(ids[i], :); ids empty: the whole table (out is num_rows x dim). ids on
  /// res's device, distinct, in [0, num_rows). Asynchronous on res's stream.
  void lookup(const kernels::Resources& res, kernels::Span<const kernels::NodeId> ids,
              kernels::Tensor<T>& out) const;
  /// Records dL/d(out) of the last lookup with the same ids (copied; grad is ids.size x dim,
  /// or num_rows x dim for the whole table) for the next SparseAdam step.
  void set_gradient(const kernels::Resources& res, kernels::Span<const kernels::NodeId> ids,
                    const kernels::Tensor<T>& grad);

  /// Records a gradient of no row: the next SparseAdam step counts for this table (its bias
  /// correction advances) and updates nothing. For a table of some rows of a table spread over
  /// processes, in a step whose rows were all elsewhere.
  void set_no_gradient(const kernels::Resources& res);

  const std::string& name() const { return m_name; }
  /// The gradient rows recorded by the last set_gradient (for tests and inspection).
  const kernels::Tensor<T>& gradient() const { return m_grad; }
  kernels::Tensor<T>& table() { return m_table; }
  const kernels::Tensor<T>& table() const { return m_table; }
  std::int64_t num_rows() const { return m_table.rows(); }
  std::int64_t dim() const { return m_table.cols(); }

 private:
  template <class>
  friend class SparseAdam;
  std::string m_name;
  kernels::Tensor<T> m_table;
  kernels::Tensor<T> m_grad;                // the touched rows' gradients
  kernels::Tensor<kernels::NodeId> m_rows;  // the touched rows (all: 0..n-1)
  bool m_pending = false;
  bool m_all_rows = false;  // m_rows is 0..num_rows-1
};

/// Where a model's embedding rows of one type come from when the table is spread over
/// processes (each owns some rows, SparseEmbedding, and their optimizer state): lookup fills
/// `out` with the rows of the type-local `ids` (distinct, host memory), set_gradient hands
/// dL/d(out) of the last lookup back to the rows' owners. A model calls each once per pass on
/// every process, also with no ids (the implementation may be collective).
template <class T>
class EmbeddingRows {
 public:
  virtual ~EmbeddingRows() = default;
  virtual void lookup(const kernels::Resources& res, kernels::Span<const kernels::NodeId> ids,
                      kernels::Tensor<T>& out) = 0;
  virtual void set_gradient(const kernels::Resources& res, kernels::Span<const kernels::NodeId> ids,
                            const kernels::Tensor<T>& grad) = 0;
};

/// PyTorch's torch.optim.SparseAdam over some tables: each step updates, for every table with
/// a recorded gradient, only the touched rows and their two moments (Adam's moments; eps on
/// the uncorrected root as PyTorch's SparseAdam, kernels::sparse_adam_step); rows
/// a step does not touch keep their values and moments (their moments do not decay). The bias
/// correction uses the table's own step count (the steps that had a gradient for it, PyTorch's
/// per-parameter `step`). No weight decay. Keeps pointers to the tables.
template <class T>
class SparseAdam {
 public:
  SparseAdam(const kernels::Resources& res, std::vector<SparseEmbedding<T>*> tables,
             const kernels::AdamConfig& config);
  /// Applies and clears every pending gradient.
  void step(const kernels::Resources& res);

  /// The state a checkpoint saves and restores: table i's first and second moments (its shape)
  /// and its step count.
  kernels::Tensor<T>& first_moment(std::size_t i) { return m_m[i]; }
  kernels::Tensor<T>& second_moment(std::size_t i) { return m_v[i]; }
  std::int64_t steps(std::size_t i) const { return m_steps[i]; }
  void set_steps(std::size_t i, std::int64_t steps) { m_steps[i] = steps; }

 private:
  std::vector<SparseEmbedding<T>*> m_tables;
  kernels::AdamConfig m_config;
  std::vector<kernels::Tensor<T>> m_m, m_v;
  std::vector<std::int64_t> m_steps;  // per table: the steps that had its gradient
};

}  // namespace halo::nn
