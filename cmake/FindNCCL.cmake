# Finds NCCL (NVIDIA's collective communication library) and provides the imported target
# NCCL::NCCL. Searches NCCL_ROOT (variable or environment) first, then the CUDA toolkit's
# include and library directories (CUDAToolkit_INCLUDE_DIRS / CUDAToolkit_LIBRARY_DIR when
# find_package(CUDAToolkit) ran, else the toolkit beside CMAKE_CUDA_COMPILER), then /usr/local
# and the system paths. Sets NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY and NCCL_VERSION
# (major.minor.patch, read from nccl.h).
set(_nccl_hints)
foreach(_root "${NCCL_ROOT}" "$ENV{NCCL_ROOT}")
  if(_root)
    list(APPEND _nccl_hints "${_root}")
  endif()
endforeach()
if(CUDAToolkit_INCLUDE_DIRS)
  list(APPEND _nccl_hints ${CUDAToolkit_INCLUDE_DIRS})
endif()
if(CUDAToolkit_LIBRARY_DIR)
  list(APPEND _nccl_hints "${CUDAToolkit_LIBRARY_DIR}")
endif()
if(CMAKE_CUDA_COMPILER)
  get_filename_component(_nccl_cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  get_filename_component(_nccl_cuda_root "${_nccl_cuda_bin}" DIRECTORY)
  list(APPEND _nccl_hints "${_nccl_cuda_root}")
endif()
list(APPEND _nccl_hints /usr/local/cuda /usr/local)

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl HINTS ${_nccl_hints} PATH_SUFFIXES lib64 lib)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _ "${_nccl_version_lines}")
    set(NCCL_VERSION_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${NCCL_VERSION_MAJOR}.${NCCL_VERSION_MINOR}.${NCCL_VERSION_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
                                       VERSION_VAR NCCL_VERSION)
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
