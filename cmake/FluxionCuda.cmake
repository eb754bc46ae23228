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
    # Turing and up through PTX; native code for Hopper (H100/H200).
    set(CMAKE_CUDA_ARCHITECTURES 75 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "Fluxion: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}), "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}")
endif()
