# RLFLOW_ENABLE_MPI=AUTO|ON|OFF. AUTO turns MPI on when an MPI implementation is found
# (Debian: mpi-default-dev, Open MPI; its C API, target MPI::MPI_CXX) and leaves it off,
# quietly, otherwise. Only core/mpi_communicator.hpp and the programs that run under
# mpirun need it.
set(RLFLOW_MPI_FOUND FALSE)
if(NOT RLFLOW_ENABLE_MPI STREQUAL "OFF")
  set(MPI_CXX_SKIP_MPICXX TRUE)  # the C API from C++; not the deprecated C++ bindings
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(RLFLOW_MPI_FOUND TRUE)
  elseif(RLFLOW_ENABLE_MPI STREQUAL "ON")
    message(FATAL_ERROR "RLFLOW_ENABLE_MPI=ON but no MPI was found (apt-get install mpi-default-dev)")
  else()
    message(STATUS "rlflow: MPI not found; scale-out over processes is off (apt-get install mpi-default-dev)")
  endif()
endif()
