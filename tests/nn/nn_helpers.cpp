#include "nn_helpers.hpp"

#include "ref/ref.hpp"

namespace halo::nn_test {

std::vector<std::int64_t> sample_indices(std::int64_t numel, int max_count, std::uint64_t seed) {
  std::vector<std::int64_t> out;
  if (numel <= max_count) {
    for (std::int64_t i = 0; i < numel; ++i) out.push_back(i);
    return out;
  }
  namespace rng = kernels::rng;
  const auto stream = rng::stream_id(rng::kStreamSynthetic, seed, 0x5a5a);
  for (int k = 0; k < max_count; ++k)
    out.push_back(static_cast<std::int64_t>(rng::below(seed, stream, static_cast<std::uint64_t>(k),
                                                       static_cast<std::uint64_t>(numel))));
  return out;
}

void check_module_gradients(nn::Module<double>& module, const nn::Context& ctx,
                            nn::Adjacency<double> graph, Features<double>& x, std::uint64_t seed,
                            const GradCheckOptions& options) {
  SCOPED_TRACE("module " + module.name());
  const Features<double>& y0 = module.forward(ctx, graph, x);
  const Tensor<double> r =
      testing::random_matrix<double>(kernels::num_rows(y0), kernels::num_cols(y0), seed);
  const std::vector<double> r_host = to_doubles(r);

  // The parameter gradients must not depend on whether dL/dx is wanted.
  module.backward(ctx, graph, r, /*need_input_grad=*/false);
  std::vector<std::vector<double>> grads_without_dx;
  for (auto* p : module.parameters()) grads_without_dx.push_back(to_doubles(p->grad));
  const Tensor<double>& dx_tensor = module.backward(ctx, graph, r, /*need_input_grad=*/true);
  ASSERT_EQ(dx_tensor.rows(), kernels::num_rows(x)) << "dL/dx must have the input's shape";
  ASSERT_EQ(dx_tensor.cols(), kernels::num_cols(x)) << "dL/dx must have the input's shape";
  const std::vector<double> dx = to_doubles(dx_tensor);
  const auto params = module.parameters();
  std::vector<std::vector<double>> grads;
  for (std::size_t k = 0; k < params.size(); ++k) {
    grads.push_back(to_doubles(params[k]->grad));
    EXPECT_EQ(grads[k], grads_without_dx[k])
        << params[k]->name << ": gradient differs between need_input_grad true and false";
  }

  const auto objective = [&] {
    return ref::dot(dense_values(module.forward(ctx, graph, x)), r_host);
  };
  const auto central_difference = [&](double& v) {
    const double saved = v;
    v = saved + options.eps;
    const double up = objective();
    v = saved - options.eps;
    const double down = objective();
    v = saved;
    return (up - down) / (2 * options.eps);
  };

  for (std::size_t k = 0; k < params.size(); ++k) {
    SCOPED_TRACE("parameter " + params[k]->name);
    Tensor<double>& value = params[k]->value;
    std::vector<double> analytic, numeric;
    for (const std::int64_t i : sample_indices(value.numel(), options.max_samples, seed + k)) {
      analytic.push_back(grads[k][static_cast<std::size_t>(i)]);
      numeric.push_back(central_difference(value.data()[i]));
    }
    EXPECT_TRUE(testing::all_close(analytic, numeric, options.rtol, options.atol));
  }

  if (!options.check_input) return;
  SCOPED_TRACE("input");
  std::vector<double> analytic, numeric;
  if (auto* dense = std::get_if<Tensor<double>>(&x)) {
    for (const std::int64_t i : sample_indices(dense->numel(), options.max_samples, seed + 99)) {
      analytic.push_back(dx[static_cast<std::size_t>(i)]);
      numeric.push_back(central_difference(dense->data()[i]));
    }
  } else {
    auto& sparse = std::get<CsrMatrix<std::int32_t, double>>(x);
    ASSERT_EQ(sparse.values.numel(), sparse.num_edges()) << "the sparse input needs values";
    const std::int64_t cols = sparse.num_cols;
    for (const std::int64_t e : sample_indices(sparse.num_edges(), options.max_samples, seed + 7)) {
      std::int64_t row = 0;
      while (sparse.indptr(row + 1) <= e) ++row;
      analytic.push_back(dx[static_cast<std::size_t>(row * cols + sparse.indices(e))]);
      numeric.push_back(central_difference(sparse.values(e)));
    }
  }
  EXPECT_TRUE(testing::all_close(analytic, numeric, options.rtol, options.atol));
}

}  // namespace halo::nn_test
