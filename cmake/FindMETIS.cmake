# Finds METIS 5 (Debian: libmetis-dev) and provides the imported target METIS::METIS.
# Sets METIS_FOUND, METIS_INCLUDE_DIR, METIS_LIBRARY and METIS_IDXTYPEWIDTH (32 or 64, read
# from metis.h: the width of idx_t, which bounds the graphs METIS can take).
find_path(METIS_INCLUDE_DIR metis.h PATH_SUFFIXES metis)
find_library(METIS_LIBRARY NAMES metis)

if(METIS_INCLUDE_DIR AND EXISTS "${METIS_INCLUDE_DIR}/metis.h")
  file(STRINGS "${METIS_INCLUDE_DIR}/metis.h" _metis_width REGEX "^#define IDXTYPEWIDTH [0-9]+")
  string(REGEX REPLACE ".*IDXTYPEWIDTH ([0-9]+).*" "\\1" METIS_IDXTYPEWIDTH "${_metis_width}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(METIS REQUIRED_VARS METIS_LIBRARY METIS_INCLUDE_DIR
                                                      METIS_IDXTYPEWIDTH)
mark_as_advanced(METIS_INCLUDE_DIR METIS_LIBRARY)

if(METIS_FOUND AND NOT TARGET METIS::METIS)
  add_library(METIS::METIS UNKNOWN IMPORTED)
  set_target_properties(METIS::METIS PROPERTIES IMPORTED_LOCATION "${METIS_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${METIS_INCLUDE_DIR}")
endif()
