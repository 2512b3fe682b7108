// EvolveGCN-O, the GCRN-style model and the pair scorer: forward and backward through time.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <tuple>
#include <utility>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/nn/detail/products.hpp>
#include <halo/nn/evolvegcn.hpp>

namespace halo::nn {

using kernels::NodeId;
using kernels::Tensor;
using kernels::Trans;

std::string to_string(TemporalKind k) { return k == TemporalKind::Gcrn ? "gcrn" : "evolvegcn-o"; }

TemporalKind parse_temporal_kind(const std::string& s) {
  if (s == "evolvegcn-o") return TemporalKind::EvolveGcnO;
  if (s == "gcrn") return TemporalKind::Gcrn;
  HALO_FAIL("temporal model '" + s + "': expected evolvegcn-o or gcrn");
}

namespace {

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

/// c = alpha op(a) op(b) + beta c.
template <class T>
void mm(const kernels::Resources& res, Trans ta, Trans tb, const Tensor<T>& a, const Tensor<T>& b,
        T beta, Tensor<T>& c, T alpha = T(1)) {
  kernels::gemm<T>(res, ta, tb, alpha, a.view(), b.view(), beta, c.view());
}

/// t[i] = f(t[i]) for every element.
template <class T, class F>
void apply(Tensor<T>& t, F f) {
  T* d = t.data();
  for (std::int64_t i = 0; i < t.numel(); ++i) d[i] = f(d[i]);
}

template <class T>
Tensor<T> zeros_like(const kernels::Resources& res, const Tensor<T>& t) {
  return Tensor<T>::zeros(res, t.rows(), t.cols());
}

template <class T>
Parameter<T> glorot(const kernels::Resources& res, std::string name, std::int64_t rows,
                    std::int64_t cols, std::uint64_t seed, std::uint64_t id) {
  Parameter<T> p{std::move(name), Tensor<T>(res, rows, cols), Tensor<T>::zeros(res, rows, cols)};
  detail::glorot_uniform(res, p.value, seed, id);
  return p;
}

template <class T>
Parameter<T> zero_param(const kernels::Resources& res, std::string name, std::int64_t rows,
                        std::int64_t cols) {
  return {std::move(name), Tensor<T>::zeros(res, rows, cols), Tensor<T>::zeros(res, rows, cols)};
}

/// w . relu(p + q) over `n` columns: a pair's score before its bias. Summed in vector lanes
/// (`omp simd`): a fixed order for a given build, and the columns vectorise.
template <class T>
T hidden_dot(const T* p, const T* q, const T* w, std::int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t k = 0; k < n; ++k) {
    const T z = p[k] + q[k];
    s += w[k] * (z > T(0) ? z : T(0));
  }
  return s;
}

/// The work (kernels::kSerialWork's elements) of one exp or tanh: a libm call of ~5-10 ns
/// against a plain element's 0.3 ns, so that a GRU step's gates (rows x hidden, 10k-17k
/// elements on CollegeMsg) run on the run's threads.
constexpr std::int64_t kTranscendentalWork = 32;

/// Parameter ids keying the initialisation (distinct from the static models' ids).
constexpr std::uint64_t kTemporalIdBase = 0x7e30;

// The GRU parameters' order within a group: W_z, U_z, W_r, U_r, W_h, U_h, B_z, B_r, B_h.
enum Gate { kWz, kUz, kWr, kUr, kWh, kUh, kBz, kBr, kBh, kGateParams };
/// One gate's parameters and the tensor it writes or reads.
template <class T>
struct GateRef {
  int w, u, b;
  Tensor<T>* t;
};

const char* const kGateNames[kGateParams] = {"w_z", "u_z", "w_r", "u_r", "w_h",
                                             "u_h", "b_z", "b_r", "b_h"};

}  // namespace

namespace {

/// out = A x over the step's graph: a local CSR or a rank's owned rows (Propagation).
template <class T>
void aggregate(const kernels::Resources& res, const Adjacency<T>& a, const Tensor<T>& x,
               Tensor<T>& out) {
  if (a.propagation != nullptr)
    return a.propagation->forward(res, kernels::Aggregate::Sum, x.view(), out.view());
  kernels::spmm<NodeId, T>(res, a.csr, x.view(), out.view());
}

/// out = A^T dy (the Propagation sends the halo rows' share back to their owners).
template <class T>
void aggregate_adjoint(const kernels::Resources& res, const Adjacency<T>& a, const Tensor<T>& dy,
                       Tensor<T>& out) {
  if (a.propagation != nullptr)
    return a.propagation->backward(res, kernels::Aggregate::Sum, dy.view(), out.view());
  kernels::spmm_transposed<NodeId, T>(res, a.csr, dy.view(), out.view());
}

/// Two GCN layers on one step: h2 = relu(A relu(A X w1) w2), X one-hot by `feature`.
template <class T>
void gcn_forward(const kernels::Resources& res, const TemporalStep<T>& step, const Tensor<T>& w1,
                 const Tensor<T>& w2, Tensor<T>& z1, Tensor<T>& ah1, Tensor<T>& z2, Tensor<T>& h2) {
  const std::int64_t n = step.adj.num_rows, h = w1.cols();
  HALO_EXPECTS(static_cast<std::int64_t>(step.feature.size()) == n && step.adj.num_cols == n,
               "TemporalModel: a step's matrix must be square with one feature per row");
  Tensor<T> xw(res, n, h);
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int32_t f = step.feature[static_cast<std::size_t>(v)];
    HALO_EXPECTS(f >= 0 && f < w1.rows(), "TemporalModel: a feature column outside the input");
    std::copy_n(&w1(f, 0), h, &xw(v, 0));
  }
  z1 = Tensor<T>(res, n, h);
  aggregate(res, step.adj, xw, z1);
  Tensor<T> h1 = z1.clone(res);
  apply(h1, [](T x) { return std::max(x, T(0)); });
  ah1 = Tensor<T>(res, n, h);
  aggregate(res, step.adj, h1, ah1);
  z2 = Tensor<T>(res, n, w2.cols());
  mm(res, Trans::No, Trans::No, ah1, w2, T(0), z2);
  h2 = z2.clone(res);
  apply(h2, [](T x) { return std::max(x, T(0)); });
}

/// `sum` (an in-place reduction) over the values of `parts`, concatenated: one call for all.
template <class T>
void sum_in_one(const std::function<void(std::span<T>)>& sum,
                const std::vector<Tensor<T>*>& parts) {
  std::vector<T> flat;
  for (const Tensor<T>* t : parts) flat.insert(flat.end(), t->data(), t->data() + t->numel());
  sum(flat);
  std::size_t at = 0;
  for (Tensor<T>* t : parts) {
    std::copy_n(flat.data() + at, t->numel(), t->data());
    at += static_cast<std::size_t>(t->numel());
  }
}

/// Adds the gradients of gcn_forward's w1, w2 for dL/dh2 `dh2`.
template <class T>
void gcn_backward(const kernels::Resources& res, const TemporalStep<T>& step, const Tensor<T>& w2,
                  const Tensor<T>& z1, const Tensor<T>& ah1, const Tensor<T>& z2,
                  const Tensor<T>& dh2, Tensor<T>& dw1, Tensor<T>& dw2) {
  const std::int64_t n = z1.rows(), h = z1.cols();
  Tensor<T> dz2 = dh2.clone(res);
  for (std::int64_t i = 0; i < dz2.numel(); ++i)
    if (!(z2.data()[i] > 0)) dz2.data()[i] = 0;
  mm(res, Trans::Yes, Trans::No, ah1, dz2, T(1), dw2);
  Tensor<T> dah1(res, n, h);
  mm(res, Trans::No, Trans::Yes, dz2, w2, T(0), dah1);
  Tensor<T> dz1(res, n, h);
  aggregate_adjoint(res, step.adj, dah1, dz1);
  for (std::int64_t i = 0; i < dz1.numel(); ++i)
    if (!(z1.data()[i] > 0)) dz1.data()[i] = 0;
  Tensor<T> dxw(res, n, h);
  aggregate_adjoint(res, step.adj, dz1, dxw);
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int32_t f = step.feature[static_cast<std::size_t>(v)];
    for (std::int64_t j = 0; j < h; ++j) dw1(f, j) += dxw(v, j);
  }
}

}  // namespace

template <class T>
TemporalModel<T>::TemporalModel(const kernels::Resources& res, const TemporalModelConfig& config,
                                std::uint64_t seed)
    : m_res(res), m_config(config) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu, "TemporalModel: runs on the CPU");
  HALO_EXPECTS(config.in_features >= 1 && config.hidden >= 1,
               "TemporalModel: in_features and hidden must be >= 1");
  const std::int64_t f = config.in_features, h = config.hidden;
  std::uint64_t id = kTemporalIdBase;
  // A group of GRU parameters: square gate matrices of `rows`, biases rows x cols.
  const auto gru = [&](const std::string& prefix, std::int64_t w_rows, std::int64_t w_cols,
                       std::int64_t b_rows, std::int64_t b_cols) {
    for (int g = 0; g < kGateParams; ++g) {
      const std::string name = prefix + kGateNames[g];
      if (g < kBz)
        m_params.push_back(glorot<T>(res, name, w_rows, w_cols, seed, id++));
      else
        m_params.push_back(zero_param<T>(res, name, b_rows, b_cols));
    }
  };
  if (config.kind == TemporalKind::EvolveGcnO) {
    // Per layer: Q_0, then the GRU's gates acting on the rows of Q.
    for (int l = 0; l < 2; ++l) {
      const std::int64_t rows = l == 0 ? f : h;
      const std::string prefix = "layer" + std::to_string(l) + ".";
      m_params.push_back(glorot<T>(res, prefix + "q0", rows, h, seed, id++));
      gru(prefix, rows, rows, rows, h);
    }
  } else {
    m_params.push_back(glorot<T>(res, "gcn0.weight", f, h, seed, id++));
    m_params.push_back(glorot<T>(res, "gcn1.weight", h, h, seed, id++));
    gru("gru.", h, h, 1, h);
  }
}

template <class T>
std::vector<Parameter<T>*> TemporalModel<T>::parameters() {
  std::vector<Parameter<T>*> v;
  for (Parameter<T>& p : m_params) v.push_back(&p);
  return v;
}

template <class T>
const Tensor<T>& TemporalModel<T>::forward(std::span<const TemporalStep<T>> window) {
  HALO_EXPECTS(!window.empty(), "TemporalModel: an empty window");
  const kernels::Resources& res = m_res;
  m_window.assign(window.begin(), window.end());
  const auto steps = static_cast<std::int64_t>(window.size());
  const std::int64_t n = window.back().adj.num_rows, h = m_config.hidden;
  m_gru.clear();
  m_gcn.clear();
  if (m_config.kind == TemporalKind::EvolveGcnO) {
    Tensor<T> q[2];
    for (int l = 0; l < 2; ++l) {
      Parameter<T>* g = &m_params[static_cast<std::size_t>(l * (1 + kGateParams) + 1)];
      q[l] = m_params[static_cast<std::size_t>(l * (1 + kGateParams))].value.clone(res);
      const std::int64_t rows = q[l].rows();
      // The input and the state are both Q, so W Q + U Q = (W + U) Q: the gates' products of
      // a step are one GEMM with S = [W_z + U_z; W_r + U_r; W_h] (3 rows x rows), and U_h (r * Q)
      // the other (4 rows^2 h multiply-adds a step instead of 6).
      Tensor<T>& stack = m_stack[l];
      kernels::ensure_shape(res, stack, 3 * rows, rows);
      const std::int64_t sq = rows * rows;
      for (std::int64_t i = 0; i < sq; ++i) {
        stack.data()[i] = g[kWz].value.data()[i] + g[kUz].value.data()[i];
        stack.data()[sq + i] = g[kWr].value.data()[i] + g[kUr].value.data()[i];
        stack.data()[2 * sq + i] = g[kWh].value.data()[i];
      }
      Tensor<T> pre(res, 3 * rows, h);
      const std::int64_t block = rows * h;
      for (std::int64_t s = 0; s < steps; ++s) {
        GruCache c;
        c.prev = q[l].clone(res);
        mm(res, Trans::No, Trans::No, stack, c.prev, T(0), pre);
        c.z = Tensor<T>(res, rows, h);
        c.r = Tensor<T>(res, rows, h);
        c.h = Tensor<T>(res, rows, h);
        Tensor<T> rq(res, rows, h);
        // The gates, a row of Q per index on the run's threads (two exps an element).
        T *z = c.z.data(), *r = c.r.data(), *hp = c.h.data(), *rqp = rq.data();
        const T *pz = pre.data(), *bz = g[kBz].value.data(), *br = g[kBr].value.data();
        const T *bh = g[kBh].value.data(), *prev = c.prev.data();
        kernels::for_each_index(
            res.cpu_exec(), rows,
            [=](std::int64_t row) {
              for (std::int64_t i = row * h; i < (row + 1) * h; ++i) {
                z[i] = sigmoid(pz[i] + bz[i]);
                r[i] = sigmoid(pz[block + i] + br[i]);
                rqp[i] = r[i] * prev[i];
                hp[i] = pz[2 * block + i] + bh[i];
              }
            },
            2 * kTranscendentalWork * block);
        mm(res, Trans::No, Trans::No, g[kUh].value, rq, T(1), c.h);
        T* qn = q[l].data();
        kernels::for_each_index(
            res.cpu_exec(), rows,
            [=](std::int64_t row) {
              for (std::int64_t i = row * h; i < (row + 1) * h; ++i) {
                const T hh = std::tanh(hp[i]);
                hp[i] = hh;
                qn[i] = (T(1) - z[i]) * prev[i] + z[i] * hh;
              }
            },
            kTranscendentalWork * block);
        m_gru.push_back(std::move(c));
      }
      // The evolved weight of the last step, kept for the backward of the GCN.
      GruCache last;
      last.input = std::move(q[l]);
      m_gru.push_back(std::move(last));
    }
    GcnCache c;
    const Tensor<T>& w1 = m_gru[static_cast<std::size_t>(steps)].input;
    const Tensor<T>& w2 = m_gru[static_cast<std::size_t>(2 * steps + 1)].input;
    gcn_forward(res, window.back(), w1, w2, c.z1, c.ah1, c.z2, c.h2);
    m_out = c.h2.clone(res);
    m_gcn.push_back(std::move(c));
    return m_out;
  }
  // GCRN.
  const Tensor<T>& w1 = m_params[0].value;
  const Tensor<T>& w2 = m_params[1].value;
  Parameter<T>* g = &m_params[2];
  Tensor<T> state = Tensor<T>::zeros(res, n, h);
  for (std::int64_t s = 0; s < steps; ++s) {
    HALO_EXPECTS(window[static_cast<std::size_t>(s)].adj.num_rows == n,
                 "TemporalModel: the steps of a window must have the same nodes");
    GcnCache gc;
    gcn_forward(res, window[static_cast<std::size_t>(s)], w1, w2, gc.z1, gc.ah1, gc.z2, gc.h2);
    GruCache c;
    c.prev = std::move(state);
    c.input = gc.h2.clone(res);
    Tensor<T> az(res, n, h), ar(res, n, h), ah(res, n, h);
    for (const GateRef<T> gr : {GateRef<T>{kWz, kUz, kBz, &az}, GateRef<T>{kWr, kUr, kBr, &ar}}) {
      mm(res, Trans::No, Trans::No, c.input, g[gr.w].value, T(0), *gr.t);
      mm(res, Trans::No, Trans::No, c.prev, g[gr.u].value, T(1), *gr.t);
      for (std::int64_t v = 0; v < n; ++v)
        for (std::int64_t j = 0; j < h; ++j) (*gr.t)(v, j) += g[gr.b].value(0, j);
    }
    c.z = std::move(az);
    c.r = std::move(ar);
    apply(c.z, [](T x) { return sigmoid(x); });
    apply(c.r, [](T x) { return sigmoid(x); });
    Tensor<T> rh(res, n, h);
    for (std::int64_t i = 0; i < rh.numel(); ++i) rh.data()[i] = c.r.data()[i] * c.prev.data()[i];
    mm(res, Trans::No, Trans::No, c.input, g[kWh].value, T(0), ah);
    mm(res, Trans::No, Trans::No, rh, g[kUh].value, T(1), ah);
    for (std::int64_t v = 0; v < n; ++v)
      for (std::int64_t j = 0; j < h; ++j) ah(v, j) = std::tanh(ah(v, j) + g[kBh].value(0, j));
    c.h = std::move(ah);
    state = Tensor<T>(res, n, h);
    for (std::int64_t i = 0; i < state.numel(); ++i) {
      const T z = c.z.data()[i];
      state.data()[i] = (T(1) - z) * c.prev.data()[i] + z * c.h.data()[i];
    }
    m_gru.push_back(std::move(c));
    m_gcn.push_back(std::move(gc));
  }
  m_out = std::move(state);
  return m_out;
}

template <class T>
void TemporalModel<T>::backward(const Tensor<T>& d_out) {
  const kernels::Resources& res = m_res;
  HALO_EXPECTS(!m_window.empty(), "TemporalModel::backward: no forward pass to go back through");
  HALO_EXPECTS(d_out.rows() == m_out.rows() && d_out.cols() == m_out.cols(),
               "TemporalModel::backward: the gradient's shape differs from the output's");
  for (Parameter<T>& p : m_params) p.grad = Tensor<T>::zeros(res, p.value.rows(), p.value.cols());
  const auto steps = static_cast<std::int64_t>(m_window.size());
  if (m_config.kind == TemporalKind::EvolveGcnO) {
    const Tensor<T>& w1 = m_gru[static_cast<std::size_t>(steps)].input;
    const Tensor<T>& w2 = m_gru[static_cast<std::size_t>(2 * steps + 1)].input;
    Tensor<T> dq[2] = {zeros_like(res, w1), zeros_like(res, w2)};
    const GcnCache& gc = m_gcn.front();
    gcn_backward(res, m_window.back(), w2, gc.z1, gc.ah1, gc.z2, d_out, dq[0], dq[1]);
    if (m_sum) sum_in_one(m_sum, {&dq[0], &dq[1]});  // the ranks' partial sums
    for (int l = 0; l < 2; ++l) {
      Parameter<T>* g = &m_params[static_cast<std::size_t>(l * (1 + kGateParams) + 1)];
      Tensor<T>& d = dq[l];
      const std::int64_t rows = d.rows(), h = d.cols(), block = rows * h;
      const Tensor<T>& stack = m_stack[l];  // the forward's [W_z + U_z; W_r + U_r; W_h]
      // Per step the gates' pre-activation gradients stacked as the forward's products,
      // [dz; dr; dh] (3 rows x h): S^T of it is their share of dQ, and their sum over the
      // steps of it times Q^T is the gradient of [W_z and U_z; W_r and U_r; W_h].
      Tensor<T> da(res, 3 * rows, h), drq(res, rows, h), rq(res, rows, h);
      Tensor<T> dstack = Tensor<T>::zeros(res, 3 * rows, rows);
      const kernels::MatrixView<const T> dah{da.data() + 2 * block, rows, h};
      for (std::int64_t s = steps - 1; s >= 0; --s) {
        const GruCache& c = m_gru[static_cast<std::size_t>(l * (steps + 1) + s)];
        Tensor<T> dprev(res, rows, h);
        for (std::int64_t i = 0; i < block; ++i) {
          const T z = c.z.data()[i], hh = c.h.data()[i], q = c.prev.data()[i];
          dprev.data()[i] = d.data()[i] * (T(1) - z);
          da.data()[i] = d.data()[i] * (hh - q) * z * (T(1) - z);
          da.data()[2 * block + i] = d.data()[i] * z * (T(1) - hh * hh);
          rq.data()[i] = c.r.data()[i] * q;
        }
        kernels::gemm<T>(res, Trans::No, Trans::Yes, T(1), dah, rq.view(), T(1),
                         g[kUh].grad.view());
        kernels::gemm<T>(res, Trans::Yes, Trans::No, T(1), g[kUh].value.view(), dah, T(0),
                         drq.view());
        for (std::int64_t i = 0; i < block; ++i) {
          const T r = c.r.data()[i];
          dprev.data()[i] += drq.data()[i] * r;
          da.data()[block + i] = drq.data()[i] * c.prev.data()[i] * r * (T(1) - r);
        }
        mm(res, Trans::No, Trans::Yes, da, c.prev, T(1), dstack);
        mm(res, Trans::Yes, Trans::No, stack, da, T(1), dprev);
        for (int k = 0; k < 3; ++k) {
          T* b = g[kBz + k].grad.data();
          const T* a = da.data() + k * block;
          for (std::int64_t i = 0; i < block; ++i) b[i] += a[i];
        }
        d = std::move(dprev);
      }
      const std::int64_t sq = rows * rows;
      for (int k = 0; k < 3; ++k) {  // W_z and U_z see the same gradient, W_r and U_r too
        const T* src = dstack.data() + k * sq;
        std::copy_n(src, sq, g[2 * k].grad.data());
        if (k < 2) std::copy_n(src, sq, g[2 * k + 1].grad.data());
      }
      kernels::copy(res, m_params[static_cast<std::size_t>(l * (1 + kGateParams))].grad, d);
    }
    return;
  }
  // GCRN.
  Parameter<T>* g = &m_params[2];
  const std::int64_t n = d_out.rows(), h = d_out.cols();
  Tensor<T> d = d_out.clone(res);
  for (std::int64_t s = steps - 1; s >= 0; --s) {
    const GruCache& c = m_gru[static_cast<std::size_t>(s)];
    Tensor<T> dprev(res, n, h), daz(res, n, h), dar(res, n, h), dah(res, n, h), rh(res, n, h);
    for (std::int64_t i = 0; i < d.numel(); ++i) {
      const T z = c.z.data()[i], hh = c.h.data()[i], q = c.prev.data()[i];
      dprev.data()[i] = d.data()[i] * (T(1) - z);
      daz.data()[i] = d.data()[i] * (hh - q) * z * (T(1) - z);
      dah.data()[i] = d.data()[i] * z * (T(1) - hh * hh);
      rh.data()[i] = c.r.data()[i] * q;
    }
    Tensor<T> dinput(res, n, h), drh(res, n, h);
    mm(res, Trans::Yes, Trans::No, c.input, dah, T(1), g[kWh].grad);
    mm(res, Trans::Yes, Trans::No, rh, dah, T(1), g[kUh].grad);
    mm(res, Trans::No, Trans::Yes, dah, g[kWh].value, T(0), dinput);
    mm(res, Trans::No, Trans::Yes, dah, g[kUh].value, T(0), drh);
    for (std::int64_t i = 0; i < d.numel(); ++i) {
      const T r = c.r.data()[i];
      dprev.data()[i] += drh.data()[i] * r;
      dar.data()[i] = drh.data()[i] * c.prev.data()[i] * r * (T(1) - r);
    }
    for (const GateRef<T> gr : {GateRef<T>{kWz, kUz, kBz, &daz}, GateRef<T>{kWr, kUr, kBr, &dar}}) {
      mm(res, Trans::Yes, Trans::No, c.input, *gr.t, T(1), g[gr.w].grad);
      mm(res, Trans::Yes, Trans::No, c.prev, *gr.t, T(1), g[gr.u].grad);
      mm(res, Trans::No, Trans::Yes, *gr.t, g[gr.w].value, T(1), dinput);
      mm(res, Trans::No, Trans::Yes, *gr.t, g[gr.u].value, T(1), dprev);
    }
    for (const GateRef<T> gr : {GateRef<T>{kWz, kUz, kBz, &daz}, GateRef<T>{kWr, kUr, kBr, &dar},
                                GateRef<T>{kWh, kUh, kBh, &dah}})
      for (std::int64_t v = 0; v < n; ++v)
        for (std::int64_t j = 0; j < h; ++j) g[gr.b].grad(0, j) += (*gr.t)(v, j);
    const GcnCache& gc = m_gcn[static_cast<std::size_t>(s)];
    gcn_backward(res, m_window[static_cast<std::size_t>(s)], m_params[1].value, gc.z1, gc.ah1,
                 gc.z2, dinput, m_params[0].grad, m_params[1].grad);
    d = std::move(dprev);
  }
  if (m_sum) {  // every parameter's partial sums
    std::vector<Tensor<T>*> grads;
    for (Parameter<T>& p : m_params) grads.push_back(&p.grad);
    sum_in_one(m_sum, grads);
  }
}

// ---- the pair scorer ---------------------------------------------------------------------------

template <class T>
PairScorer<T>::PairScorer(const kernels::Resources& res, std::int64_t in, std::int64_t hidden,
                          std::uint64_t seed)
    : m_res(res),
      m_hidden(hidden),
      // Glorot over the concatenated input 2 in -> hidden, split into its two halves.
      m_a(glorot<T>(res, "scorer.a", in, hidden, seed, kTemporalIdBase + 100)),
      m_b(glorot<T>(res, "scorer.b", in, hidden, seed, kTemporalIdBase + 101)),
      m_b1(zero_param<T>(res, "scorer.b1", 1, hidden)),
      m_w2(glorot<T>(res, "scorer.w2", hidden, 1, seed, kTemporalIdBase + 102)),
      m_b2(zero_param<T>(res, "scorer.b2", 1, 1)) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu, "PairScorer: runs on the CPU");
  HALO_EXPECTS(in >= 1 && hidden >= 1, "PairScorer: widths must be >= 1");
}

template <class T>
std::vector<Parameter<T>*> PairScorer<T>::parameters() {
  return {&m_a, &m_b, &m_b1, &m_w2, &m_b2};
}

template <class T>
void PairScorer<T>::prepare(const Tensor<T>& e) {
  HALO_EXPECTS(e.cols() == m_a.value.rows(), "PairScorer: embeddings of the wrong width");
  m_e = &e;
  m_p = Tensor<T>(m_res, e.rows(), m_hidden);
  m_q = Tensor<T>(m_res, e.rows(), m_hidden);
  mm(m_res, Trans::No, Trans::No, e, m_a.value, T(0), m_p);
  mm(m_res, Trans::No, Trans::No, e, m_b.value, T(0), m_q);
  for (std::int64_t v = 0; v < e.rows(); ++v)
    for (std::int64_t k = 0; k < m_hidden; ++k) m_p(v, k) += m_b1.value(0, k);
}

template <class T>
void PairScorer<T>::score(std::span<const NodeId> src, std::span<const NodeId> dst,
                          std::span<T> logits) const {
  HALO_EXPECTS(m_e != nullptr, "PairScorer: prepare() first");
  HALO_EXPECTS(src.size() == dst.size() && logits.size() == src.size(),
               "PairScorer::score: one source, destination and logit per pair");
  const T* w2 = m_w2.value.data();
  const T b2 = m_b2.value(0, 0);
  for (std::size_t i = 0; i < src.size(); ++i)
    logits[i] = b2 + hidden_dot(m_p.data() + src[i] * m_hidden, m_q.data() + dst[i] * m_hidden, w2,
                                m_hidden);
}

template <class T>
void PairScorer<T>::score_row(NodeId u, std::span<T> out) const {
  HALO_EXPECTS(m_e != nullptr && static_cast<std::int64_t>(out.size()) == m_p.rows(),
               "PairScorer::score_row: prepare() first, one output per node");
  const T* w2 = m_w2.value.data();
  const T* p = m_p.data() + u * m_hidden;
  const T b2 = m_b2.value(0, 0);
  for (std::int64_t v = 0; v < m_q.rows(); ++v)
    out[static_cast<std::size_t>(v)] = b2 + hidden_dot(p, m_q.data() + v * m_hidden, w2, m_hidden);
}

template <class T>
const Tensor<T>& PairScorer<T>::backward(std::span<const NodeId> src, std::span<const NodeId> dst,
                                         std::span<const T> d_logits) {
  HALO_EXPECTS(m_e != nullptr, "PairScorer: prepare() first");
  const kernels::Resources& res = m_res;
  const Tensor<T>& e = *m_e;
  m_dp = Tensor<T>::zeros(res, e.rows(), m_hidden);
  m_dq = Tensor<T>::zeros(res, e.rows(), m_hidden);
  for (Parameter<T>* p : parameters())
    p->grad = Tensor<T>::zeros(res, p->value.rows(), p->value.cols());
  const T* w2 = m_w2.value.data();
  T* dw2 = m_w2.grad.data();
  const std::int64_t hidden = m_hidden;
  T db2 = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    const T d = d_logits[i];
    const T* p = m_p.data() + src[i] * hidden;
    const T* q = m_q.data() + dst[i] * hidden;
    T* dp = m_dp.data() + src[i] * hidden;
    T* dq = m_dq.data() + dst[i] * hidden;
    db2 += d;
    // Without a branch, so that the columns vectorise: a unit off (pre <= 0) adds zeros. The
    // columns are independent (dp, dq and dw2 are rows of three tensors).
#pragma omp simd
    for (std::int64_t k = 0; k < hidden; ++k) {
      const T pre = p[k] + q[k];
      const T g = pre > T(0) ? d : T(0);
      dw2[k] += g * pre;
      dp[k] += g * w2[k];
      dq[k] += g * w2[k];
    }
  }
  m_b2.grad(0, 0) = db2;
  mm(res, Trans::Yes, Trans::No, e, m_dp, T(0), m_a.grad);
  mm(res, Trans::Yes, Trans::No, e, m_dq, T(0), m_b.grad);
  for (std::int64_t v = 0; v < e.rows(); ++v)
    for (std::int64_t k = 0; k < m_hidden; ++k) m_b1.grad(0, k) += m_dp(v, k);
  m_de = Tensor<T>(res, e.rows(), e.cols());
  mm(res, Trans::No, Trans::Yes, m_dp, m_a.value, T(0), m_de);
  mm(res, Trans::No, Trans::Yes, m_dq, m_b.value, T(1), m_de);
  return m_de;
}

template <class T>
double weighted_logistic_loss(std::span<const T> logits, std::span<const std::int8_t> positive,
                              double pos_weight, double neg_weight, std::span<T> d_logits,
                              double total_weight) {
  HALO_EXPECTS(logits.size() == positive.size() && d_logits.size() == logits.size(),
               "weighted_logistic_loss: one label and one gradient per logit");
  HALO_EXPECTS(pos_weight > 0 && neg_weight > 0, "weighted_logistic_loss: weights must be > 0");
  if (logits.empty()) return 0;
  double loss = 0;
  if (!(total_weight > 0)) {
    total_weight = 0;
    for (const std::int8_t p : positive) total_weight += p != 0 ? pos_weight : neg_weight;
  }
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double y = positive[i] != 0 ? 1.0 : -1.0;
    const double w = (positive[i] != 0 ? pos_weight : neg_weight) / total_weight;
    const double m = -y * static_cast<double>(logits[i]);  // softplus(m) = log(1 + e^m)
    loss += w * (std::max(m, 0.0) + std::log1p(std::exp(-std::abs(m))));
    const double sig = m >= 0 ? 1.0 / (1.0 + std::exp(-m)) : std::exp(m) / (1.0 + std::exp(m));
    d_logits[i] = static_cast<T>(-y * w * sig);
  }
  return loss;
}

template class TemporalModel<float>;
template class TemporalModel<double>;
template class PairScorer<float>;
template class PairScorer<double>;
template double weighted_logistic_loss<float>(std::span<const float>, std::span<const std::int8_t>,
                                              double, double, std::span<float>, double);
template double weighted_logistic_loss<double>(std::span<const double>,
                                               std::span<const std::int8_t>, double, double,
                                               std::span<double>, double);

}  // namespace halo::nn
