// The main() of every Halo test executable: GoogleTest plus the failing log sink. An executable
// that needs its own main() (MPI initialisation) defines one; the linker then never pulls this
// object out of the halo_test_support archive.
#include <gtest/gtest.h>

#include "support/testing.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  halo::testing::install_log_sink();
  return RUN_ALL_TESTS();
}
