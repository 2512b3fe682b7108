// runtime::score, argmax_rows and softmax_rows against values worked out by hand.

#include <cmath>
#include <gtest/gtest.h>
#include <vector>

#include <halo/runtime/data/inference.hpp>

namespace {

namespace rt = halo::runtime;

TEST(Scores, AccuracyAndMacroF1MatchAHandCount) {
  // Node 4 has no label (-1) and is skipped. Per class: 0: TP 1, FP 1, FN 1 -> F1 1/2;
  // 1: TP 1, FP 1, FN 1 -> 1/2; 2: TP 1 -> 1; class 3 occurs nowhere and is not averaged.
  const std::vector<std::int32_t> predicted = {0, 0, 1, 2, 2, 1};
  const std::vector<std::int32_t> labels = {0, 1, 1, 2, -1, 0};
  for (const std::int32_t classes : {3, 4}) {
    const rt::Scores s = rt::score(predicted, labels, classes);
    EXPECT_EQ(s.labelled, 5);
    EXPECT_DOUBLE_EQ(s.accuracy, 3.0 / 5.0);
    EXPECT_DOUBLE_EQ(s.macro_f1, 2.0 / 3.0);
  }
  const rt::Scores none = rt::score({1}, {-1}, 2);
  EXPECT_EQ(none.labelled, 0);
  EXPECT_TRUE(std::isnan(none.accuracy));
  EXPECT_TRUE(std::isnan(none.macro_f1));
}

TEST(Scores, ArgmaxTakesTheFirstMaximumAndSoftmaxRowsSumToOne) {
  std::vector<float> m = {1, 3, 3, 0, -2, -1, -1, -5};  // 2 rows x 4
  EXPECT_EQ(rt::argmax_rows(m, 4), (std::vector<std::int32_t>{1, 1}));
  rt::softmax_rows(m, 4);
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int j = 0; j < 4; ++j) sum += m[static_cast<std::size_t>(r * 4 + j)];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  // exp(1) / (exp(1) + 2 exp(3) + exp(0))
  EXPECT_NEAR(m[0], std::exp(1.0) / (std::exp(1.0) + 2 * std::exp(3.0) + 1.0), 1e-6);
  EXPECT_EQ(m[1], m[2]);
}

}  // namespace
