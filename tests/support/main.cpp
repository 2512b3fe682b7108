// The main() of every Halo test executable: GoogleTest plus the failing log sink.
#include <gtest/gtest.h>

#include "support/testing.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  halo::testing::install_log_sink();
  return RUN_ALL_TESTS();
}
