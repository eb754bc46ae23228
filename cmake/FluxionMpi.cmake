# FLUXION_MPI=AUTO|ON|OFF -> FLUXION_WITH_MPI. AUTO uses MPI when find_package(MPI) finds a C++ (or C)
# binding (Open MPI from Debian: libopenmpi-dev, openmpi-bin); ON requires it; OFF never looks. Without
# MPI, fx::distributed::init() throws an error saying how to get it (src/distributed.cpp).
set(FLUXION_MPI "AUTO" CACHE STRING "Build the MPI transport of fx::distributed: AUTO (when MPI is found), ON or OFF")
set_property(CACHE FLUXION_MPI PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${FLUXION_MPI}" _fluxion_mpi)
set(FLUXION_WITH_MPI OFF)
set(FLUXION_MPI_TARGET "")
if(_fluxion_mpi STREQUAL "ON" OR _fluxion_mpi STREQUAL "AUTO")
  # The engine calls MPI's C API from C++ (the project enables no C language, which FindMPI's C
  # component would need). MPI_CXX_SKIP_MPICXX: the deprecated C++ bindings (libmpi_cxx) are not used.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(FLUXION_WITH_MPI ON)
    set(FLUXION_MPI_TARGET MPI::MPI_CXX)
    message(STATUS "Fluxion: MPI ${MPI_CXX_VERSION} standard, mpiexec ${MPIEXEC_EXECUTABLE}")
  elseif(_fluxion_mpi STREQUAL "ON")
    message(FATAL_ERROR "FLUXION_MPI=ON but MPI was not found (apt-get install libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "Fluxion: no MPI found; fx::distributed::init() will say so (FLUXION_MPI=AUTO)")
  endif()
elseif(NOT _fluxion_mpi STREQUAL "OFF")
  message(FATAL_ERROR "FLUXION_MPI must be AUTO, ON or OFF, not '${FLUXION_MPI}'")
endif()

# NCCL moves CUDA tensors (backends/distributed/nccl_*.cpp): looked up in the CUDA toolkit's
# directories when both CUDA and MPI are built (MPI bootstraps the NCCL communicators).
set(FLUXION_WITH_NCCL OFF)
if(FLUXION_WITH_MPI AND FLUXION_WITH_CUDA)
  include(${CMAKE_CURRENT_LIST_DIR}/FluxionFindLibraries.cmake)
  fluxion_find_nccl(_fluxion_nccl_found)  # fluxion_deps::nccl
  if(_fluxion_nccl_found)
    set(FLUXION_WITH_NCCL ON)
    message(STATUS "Fluxion: NCCL ${FLUXION_NCCL_LIBRARY}")
  else()
    message(STATUS "Fluxion: NCCL not found; collectives on CUDA tensors will throw DeviceError")
  endif()
endif()
