# Finds CBC's C interface (Debian's coinor-libcbc-dev: headers under /usr/include/coin, no
# CMake package) and defines the imported target rlflow_cbc and RLFLOW_HAS_CBC, which ILP
# extraction (search/extract_ilp.hpp) needs. Shared by the build and by the installed
# rlflowConfig.cmake.
find_path(RLFLOW_CBC_INCLUDE_DIR Cbc_C_Interface.h PATH_SUFFIXES coin)
find_library(RLFLOW_CBC_SOLVER_LIBRARY CbcSolver)
find_library(RLFLOW_CBC_LIBRARY Cbc)
if(RLFLOW_CBC_INCLUDE_DIR AND RLFLOW_CBC_SOLVER_LIBRARY AND RLFLOW_CBC_LIBRARY)
  set(RLFLOW_HAS_CBC TRUE)
  if(NOT TARGET rlflow_cbc)
    add_library(rlflow_cbc UNKNOWN IMPORTED)
    set_target_properties(rlflow_cbc PROPERTIES IMPORTED_LOCATION "${RLFLOW_CBC_SOLVER_LIBRARY}"
                                                INTERFACE_LINK_LIBRARIES "${RLFLOW_CBC_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${RLFLOW_CBC_INCLUDE_DIR}")
  endif()
else()
  set(RLFLOW_HAS_CBC FALSE)
endif()
