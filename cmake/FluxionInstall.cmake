# `cmake --install`: the public headers under <prefix>/include/fluxion, the implementation files
# (#included by the headers as "src/...", "primitives/..." in header-only mode) under
# <prefix>/include/fluxion/internal, the libraries, and a relocatable fluxionConfig.cmake that
# provides fluxion::fluxion, fluxion::headers (and fluxion::cuda, fluxion::mpi when built).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FLUXION_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/fluxion)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fluxion DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir src primitives transforms passes runtime backends/cpu backends/reference backends/cuda
            backends/distributed)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${dir})
    # backends/cuda: the kernel bodies and the emulated table that header-only mode compiles; its
    # jit/ sources are compiled into fluxion::cuda only (they include files generated at build time).
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fluxion/internal/${dir}
            FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.cpp" PATTERN "*.inc" PATTERN "*.cuh"
            PATTERN "jit" EXCLUDE)
  endif()
endforeach()

set(_fluxion_targets fluxion fluxion_headers)
if(FLUXION_WITH_CUDA)
  list(APPEND _fluxion_targets fluxion_cuda)
endif()
if(FLUXION_WITH_MPI)
  list(APPEND _fluxion_targets fluxion_mpi)
endif()
install(TARGETS ${_fluxion_targets} EXPORT fluxionTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT fluxionTargets NAMESPACE fluxion:: DESTINATION ${FLUXION_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fluxionConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fluxionConfig.cmake INSTALL_DESTINATION ${FLUXION_INSTALL_CMAKEDIR})
# 0.x: minor versions may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fluxionConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fluxionConfig.cmake
              ${PROJECT_BINARY_DIR}/fluxionConfigVersion.cmake
        DESTINATION ${FLUXION_INSTALL_CMAKEDIR})
