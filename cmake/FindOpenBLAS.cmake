# Finds OpenBLAS's CBLAS interface -> OpenBLAS::OpenBLAS.
# Prefers Debian's OpenMP build (libopenblas0-openmp): it shares libgomp's thread pool with our
# OpenMP loops instead of spinning its own pthreads next to them.
find_path(OpenBLAS_INCLUDE_DIR cblas.h
  HINTS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/aarch64-linux-gnu/openblas-openmp
        /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas)
find_library(OpenBLAS_LIBRARY NAMES openblas
  HINTS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLAS REQUIRED_VARS OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR)
if(OpenBLAS_FOUND AND NOT TARGET OpenBLAS::OpenBLAS)
  add_library(OpenBLAS::OpenBLAS UNKNOWN IMPORTED)
  set_target_properties(OpenBLAS::OpenBLAS PROPERTIES IMPORTED_LOCATION ${OpenBLAS_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${OpenBLAS_INCLUDE_DIR})
endif()
