# Finds Z3 (Debian's libz3-dev ships no CMake package) and defines the imported target
# rlflow_z3 and RLFLOW_HAS_Z3. Shared by the build and by the installed rlflowConfig.cmake.
find_path(RLFLOW_Z3_INCLUDE_DIR z3++.h)
find_library(RLFLOW_Z3_LIBRARY z3)
if(RLFLOW_Z3_INCLUDE_DIR AND RLFLOW_Z3_LIBRARY)
  set(RLFLOW_HAS_Z3 TRUE)
  if(NOT TARGET rlflow_z3)
    add_library(rlflow_z3 UNKNOWN IMPORTED)
    set_target_properties(rlflow_z3 PROPERTIES IMPORTED_LOCATION "${RLFLOW_Z3_LIBRARY}"
                                               INTERFACE_INCLUDE_DIRECTORIES "${RLFLOW_Z3_INCLUDE_DIR}")
  endif()
else()
  set(RLFLOW_HAS_Z3 FALSE)
endif()
