# FLUXION_CUDA=AUTO|ON|OFF -> FLUXION_WITH_CUDA. AUTO enables the CUDA language only when
# check_language(CUDA) finds nvcc; ON requires it; OFF never looks. The CPU build never needs CUDA.
string(TOUPPER "${FLUXION_CUDA}" _fluxion_cuda)
set(FLUXION_WITH_CUDA OFF)
if(_fluxion_cuda STREQUAL "ON")
  set(FLUXION_WITH_CUDA ON)
elseif(_fluxion_cuda STREQUAL "AUTO")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(FLUXION_WITH_CUDA ON)
  else()
    message(STATUS "Fluxion: no CUDA compiler found; building the CPU backends only "
                   "(FLUXION_CUDA=AUTO)")
  endif()
elseif(NOT _fluxion_cuda STREQUAL "OFF")
  message(FATAL_ERROR "FLUXION_CUDA must be AUTO, ON or OFF, not '${FLUXION_CUDA}'")
endif()

if(FLUXION_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Native code for Ampere (sm_80: A100; also runs on sm_86/sm_89 desktop and L40 GPUs) and
    # Hopper (sm_90: H100/H200), plus compute_90 PTX that the driver compiles for newer GPUs
    # (Blackwell). Override with -DCMAKE_CUDA_ARCHITECTURES=native (or a list) for faster builds.
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "Fluxion: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}), "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}")
endif()
