# One library per component; CUDA sources are compiled only when HALO_WITH_CUDA is on.
function(halo_add_component name)
  cmake_parse_arguments(ARG "" "" "SOURCES;CUDA_SOURCES;DEPS;PRIVATE_DEPS;HEADERS" ${ARGN})
  add_library(halo_${name} ${ARG_SOURCES})
  if(HALO_WITH_CUDA)
    target_sources(halo_${name} PRIVATE ${ARG_CUDA_SOURCES})
    set_target_properties(halo_${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
  add_library(halo::${name} ALIAS halo_${name})
  set_target_properties(halo_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME halo_${name})
  target_include_directories(halo_${name} PUBLIC $<BUILD_INTERFACE:${HALO_GENERATED_INCLUDE_DIR}>
                                                 $<INSTALL_INTERFACE:include>)
  # halo_options is exported; halo_build_flags (warnings, -march, sanitizers) is build-tree only.
  target_link_libraries(halo_${name} PUBLIC halo_options $<BUILD_INTERFACE:halo_build_flags>
                                            ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  install(TARGETS halo_${name} EXPORT haloTargets ARCHIVE DESTINATION lib LIBRARY DESTINATION lib)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/ DESTINATION include/halo/${name}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "detail" EXCLUDE)
endfunction()

# halo_add_test(NAME x SOURCES ... DEPS ... [LABELS ...])
# One executable; every GoogleTest case becomes one ctest entry. Cases whose full name contains
# "Cuda" (typed cases `Suite/Cuda.Name`, suites like `TrainerCuda`) get the label `cuda` and the
# others the given labels, so `ctest -L cuda` runs exactly the GPU cases (which skip without one).
function(halo_add_test)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} halo_test_support GTest::gtest)
  if(NOT ARG_LABELS)
    set(ARG_LABELS cpu)
  endif()
  # The tests find the build, the sources, the halo program and the datasets at run time
  # (tests/support/testing.hpp): no path is compiled in, so the objects do not depend on where
  # the checkout lies. The halo program is built first.
  add_dependencies(${ARG_NAME} halo)
  gtest_discover_tests(${ARG_NAME} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    TEST_FILTER "-*Cuda*"
    PROPERTIES LABELS "${ARG_LABELS}")
  gtest_discover_tests(${ARG_NAME} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    TEST_FILTER "*Cuda*"
    PROPERTIES LABELS "cuda")
endfunction()
