# Finds the sequential Scotch library (Debian: libscotch-dev) and provides the imported target
# Scotch::Scotch (libscotch plus libscotcherr, its error handler). Sets Scotch_FOUND,
# SCOTCH_INCLUDE_DIR, SCOTCH_LIBRARY, SCOTCH_ERR_LIBRARY and SCOTCH_NUM_WIDTH (the width of
# SCOTCH_Num in bits, read from scotch.h: 32 for Debian's default build).
find_path(SCOTCH_INCLUDE_DIR scotch.h PATH_SUFFIXES scotch)
find_library(SCOTCH_LIBRARY NAMES scotch)
find_library(SCOTCH_ERR_LIBRARY NAMES scotcherr)

if(SCOTCH_INCLUDE_DIR AND EXISTS "${SCOTCH_INCLUDE_DIR}/scotch.h")
  file(STRINGS "${SCOTCH_INCLUDE_DIR}/scotch.h" _scotch_num REGEX "^typedef [a-z0-9_ ]+ SCOTCH_Num;")
  if(_scotch_num MATCHES "int64|long")
    set(SCOTCH_NUM_WIDTH 64)
  elseif(_scotch_num MATCHES "int")
    set(SCOTCH_NUM_WIDTH 32)
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Scotch REQUIRED_VARS SCOTCH_LIBRARY SCOTCH_ERR_LIBRARY
                                                       SCOTCH_INCLUDE_DIR SCOTCH_NUM_WIDTH)
mark_as_advanced(SCOTCH_INCLUDE_DIR SCOTCH_LIBRARY SCOTCH_ERR_LIBRARY)

if(Scotch_FOUND AND NOT TARGET Scotch::Scotch)
  add_library(Scotch::Scotch UNKNOWN IMPORTED)
  set_target_properties(Scotch::Scotch PROPERTIES IMPORTED_LOCATION "${SCOTCH_LIBRARY}"
                                                  INTERFACE_INCLUDE_DIRECTORIES "${SCOTCH_INCLUDE_DIR}"
                                                  INTERFACE_LINK_LIBRARIES "${SCOTCH_ERR_LIBRARY}")
endif()
