# CTest driver for consumer_find_package / consumer_add_subdirectory (see tests/CMakeLists.txt):
# builds tests/consumer against Fluxion and checks what it prints.
#   cmake -DMODE=find_package|add_subdirectory -DSOURCE_DIR=... -DBUILD_DIR=... -DWORK_DIR=...
#         [-DGENERATOR=... -DCXX_COMPILER=... -DLAUNCHER=... -DBUILD_TYPE=... -DCONFIG_FLAGS=...
#          -DFLUXION_CUDA=... -DSANITIZE=... -DNATIVE=... -DJOBS=<build jobs, default: logical cores>] -P RunConsumer.cmake
cmake_minimum_required(VERSION 3.21)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer (${MODE}): ${what} failed (${rc}):\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()
# The same language level and per-configuration flags as this build, so that ccache serves the
# add_subdirectory copy of the library.
string(TOUPPER "${BUILD_TYPE}" config)
set(args -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
         -DFLUXION_CONSUMER_MODE=${MODE} -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF
         "-DCMAKE_CXX_FLAGS_${config}=${CONFIG_FLAGS}")
if(GENERATOR)
  list(APPEND args -G ${GENERATOR})
endif()
if(CXX_COMPILER)
  list(APPEND args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(LAUNCHER)
  list(APPEND args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER} -DCMAKE_CUDA_COMPILER_LAUNCHER=${LAUNCHER})
endif()

if(MODE STREQUAL "find_package")
  # A fresh prefix every run, so a file missing from the install rules cannot hide behind an old one.
  set(prefix ${WORK_DIR}/prefix)
  file(REMOVE_RECURSE ${prefix})
  run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${BUILD_TYPE})
  list(APPEND args -DCMAKE_PREFIX_PATH=${prefix})
  # Header-only use of the installed tree: every quoted #include of every installed file must
  # resolve inside it (beside the file, or under include/ or include/fluxion/internal/).
  file(GLOB_RECURSE installed RELATIVE ${prefix}/include ${prefix}/include/*)
  set(unresolved "")
  foreach(f ${installed})
    file(STRINGS ${prefix}/include/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    get_filename_component(dir ${prefix}/include/${f} DIRECTORY)
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
      if(NOT EXISTS ${dir}/${inc} AND NOT EXISTS ${prefix}/include/${inc}
         AND NOT EXISTS ${prefix}/include/fluxion/internal/${inc})
        string(APPEND unresolved "\n  ${f}: #include \"${inc}\"")
      endif()
    endforeach()
  endforeach()
  if(unresolved)
    message(FATAL_ERROR "consumer (${MODE}): installed files include files that were not "
                        "installed (add their folder to cmake/FluxionInstall.cmake):${unresolved}")
  endif()
  list(LENGTH installed n_installed)
  message("consumer (${MODE}): ${n_installed} installed headers, every quoted #include resolves")
elseif(MODE STREQUAL "add_subdirectory")
  # The consumer's own copy of the library: same flags as this build, so ccache serves it.
  # FLUXION_NATIVE too: it defaults to OFF below the top level, and without it every object of the
  # copy missed the cache (the whole library compiled again: 268 s of the CI's 2 cores).
  list(APPEND args -DFLUXION_SOURCE_DIR=${SOURCE_DIR} -DFLUXION_CUDA=${FLUXION_CUDA}
                   -DFLUXION_SANITIZE=${SANITIZE})
  if(DEFINED NATIVE AND NOT NATIVE STREQUAL "")
    list(APPEND args -DFLUXION_NATIVE=${NATIVE})
  endif()
else()
  message(FATAL_ERROR "MODE must be find_package or add_subdirectory, not '${MODE}'")
endif()

run("configure" ${CMAKE_COMMAND} ${args})
# In parallel: the add_subdirectory copy compiles the whole library when ccache cannot serve it
# (no ccache, or other flags): 268-373 s on the 2-core CI machine.
if(NOT JOBS)
  cmake_host_system_information(RESULT JOBS QUERY NUMBER_OF_LOGICAL_CORES)
endif()
run("build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build --config ${BUILD_TYPE} --parallel ${JOBS})
find_program(consumer_exe consumer PATHS ${WORK_DIR}/build ${WORK_DIR}/build/${BUILD_TYPE}
             NO_DEFAULT_PATH NO_CACHE REQUIRED)
run("running the consumer" ${consumer_exe})
message("${run_output}")
# sin([0, 1, 2]) + 1, summed: 1 + 1.84147098 + 1.90929743 = 4.75076841
if(NOT run_output MATCHES "consumer: 4\\.750768")
  message(FATAL_ERROR "consumer (${MODE}): unexpected output:\n${run_output}")
endif()
message("consumer (${MODE}): OK")
