# CTest driver for consumer_find_package / consumer_add_subdirectory (see tests/CMakeLists.txt):
# builds tests/consumer against Fluxion and checks what it prints.
#   find_package: installs this build into a fresh prefix, checks the installed files (every quoted
#     #include resolves; the exported targets record no absolute path), then builds and runs the
#     CPU-only consumer as on a machine without CUDA (env -i, a PATH without nvcc, no CUDA variables,
#     -march=x86-64-v2) and, when this build has CUDA, a consumer of fluxion::cuda.
#   add_subdirectory: checks that a parent with no build type gets an optimised library (configure
#     only), then builds and runs the consumer with Fluxion as a subdirectory.
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
set(args -S ${SOURCE_DIR}/tests/consumer -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
         -DFLUXION_CONSUMER_MODE=${MODE} -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF
         "-DCMAKE_CXX_FLAGS_${config}=${CONFIG_FLAGS}")
set(generator_args "")
if(GENERATOR)
  set(generator_args -G ${GENERATOR})
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
  # The exported targets name their dependencies (imported targets found again by fluxionConfig.cmake)
  # and locate their own files through ${_IMPORT_PREFIX}: no path of this machine.
  file(GLOB_RECURSE targets_files ${prefix}/*/fluxion*Targets*.cmake)
  if(NOT targets_files)
    message(FATAL_ERROR "consumer (${MODE}): no fluxion*Targets*.cmake installed under ${prefix}")
  endif()
  foreach(f ${targets_files})
    file(STRINGS ${f} lines REGEX "INTERFACE_|IMPORTED_LOCATION")
    foreach(line ${lines})
      if(line MATCHES "(^|[\";>:])/[A-Za-z]")
        message(FATAL_ERROR "consumer (${MODE}): ${f} records an absolute path:\n  ${line}")
      endif()
    endforeach()
  endforeach()
  # The compiled library needs only <prefix>/include (not include/fluxion/internal).
  list(FILTER targets_files INCLUDE REGEX "/fluxionTargets[.]cmake$")
  file(READ ${targets_files} targets_text)
  string(REGEX MATCH "add_library\\(fluxion::public_headers[^#]*" public_text "${targets_text}")
  if(public_text MATCHES "internal")
    message(FATAL_ERROR "consumer (${MODE}): fluxion::fluxion's include path names include/fluxion/internal")
  endif()
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

# consumer(<name> <expected cuda compiled: true|false> [ENV <env -i assignments...>] [ARGS <cmake args...>]):
# configures, builds and runs the consumer in ${WORK_DIR}/<name>, under `env -i <assignments>` when given.
if(NOT JOBS)
  cmake_host_system_information(RESULT JOBS QUERY NUMBER_OF_LOGICAL_CORES)
endif()
function(consumer name cuda_compiled)
  cmake_parse_arguments(PARSE_ARGV 2 opt "" "" "ENV;ARGS")
  set(prefix_cmd "")
  if(opt_ENV)
    set(prefix_cmd env -i ${opt_ENV})
  endif()
  set(dir ${WORK_DIR}/${name})
  file(REMOVE_RECURSE ${dir})
  run("configure (${name})" ${prefix_cmd} ${CMAKE_COMMAND} ${args} ${generator_args} -B ${dir} ${opt_ARGS})
  # In parallel: the add_subdirectory copy compiles the whole library when ccache cannot serve it
  # (no ccache, or other flags): 268-373 s on the 2-core CI machine.
  run("build (${name})" ${prefix_cmd} ${CMAKE_COMMAND} --build ${dir} --config ${BUILD_TYPE} --parallel ${JOBS})
  unset(exe)
  find_program(exe consumer PATHS ${dir} ${dir}/${BUILD_TYPE} NO_DEFAULT_PATH NO_CACHE REQUIRED)
  run("running the consumer (${name})" ${prefix_cmd} ${exe})
  message("${run_output}")
  # sin([0, 1, 2]) + 1, summed: 1 + 1.84147098 + 1.90929743 = 4.75076841
  if(NOT run_output MATCHES "consumer: 4\\.750768" OR NOT run_output MATCHES "cuda compiled: ${cuda_compiled}")
    message(FATAL_ERROR "consumer (${MODE}, ${name}): unexpected output (expected cuda compiled: "
                        "${cuda_compiled}):\n${run_output}")
  endif()
  if(run_output MATCHES "cuda available: true" AND NOT run_output MATCHES "consumer cuda eager: 4\\.750768.*consumer cuda jit: 4\\.750768")
    message(FATAL_ERROR "consumer (${MODE}, ${name}): wrong or missing results on the GPU:\n${run_output}")
  endif()
  set(consumer_exe ${exe} PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "find_package")
  # The CPU-only user on a machine without CUDA: a clean environment (no CUDA_HOME, CUDAToolkit_ROOT,
  # LIBRARY_PATH) and a PATH without nvcc, and a baseline x86-64 CPU for its own code.
  set(hidden_path "")
  foreach(dir /usr/local/bin /usr/bin /bin)
    if(EXISTS ${dir} AND NOT EXISTS ${dir}/nvcc)
      list(APPEND hidden_path ${dir})
    endif()
  endforeach()
  string(REPLACE ";" ":" hidden_path "${hidden_path}")
  set(env HOME=$ENV{HOME} PATH=${hidden_path})
  foreach(var CCACHE_DIR CCACHE_BASEDIR CCACHE_CONFIGPATH TMPDIR)
    if(DEFINED ENV{${var}})
      list(APPEND env ${var}=$ENV{${var}})
    endif()
  endforeach()
  set(march "")
  execute_process(COMMAND ${CXX_COMPILER} -march=x86-64-v2 -x c++ -E -o /dev/null /dev/null
                  RESULT_VARIABLE march_rc OUTPUT_QUIET ERROR_QUIET)
  if(CXX_COMPILER AND march_rc EQUAL 0)
    set(march -march=x86-64-v2)
  endif()
  consumer(cpu_only_no_cuda false ENV ${env} ARGS "-DCMAKE_CXX_FLAGS=${march}" -DFLUXION_CONSUMER_CUDA=OFF)
  # Nothing of CUDA in the program: no libcudart (or any CUDA library) among its needed libraries.
  find_program(readelf readelf NO_CACHE)
  if(readelf)
    execute_process(COMMAND ${readelf} -d ${consumer_exe} OUTPUT_VARIABLE needed)
    if(needed MATCHES "lib(cudart|cublas|cusolver|nvrtc|nccl|cuda)[.]")
      message(FATAL_ERROR "consumer (${MODE}): the CPU-only consumer needs a CUDA library:\n${needed}")
    endif()
  endif()
  message("consumer (${MODE}): the CPU-only consumer (${march}, no CUDA in sight) builds and runs")
  if(FLUXION_CUDA)
    consumer(cuda true ARGS -DFLUXION_CONSUMER_CUDA=ON)
  endif()
else()
  # A parent with no build type: Fluxion's library gets -O3, the parent's own target does not.
  # Configure only (Makefiles, whose flags.make files say it); CUDA off to keep it quick.
  find_program(make_program NAMES make gmake NO_CACHE)
  if(make_program)
    set(dir ${WORK_DIR}/no_build_type)
    file(REMOVE_RECURSE ${dir})
    set(no_type_args ${args})
    list(TRANSFORM no_type_args REPLACE "^-DCMAKE_BUILD_TYPE=.*" "-DCMAKE_BUILD_TYPE=")
    list(FILTER no_type_args EXCLUDE REGEX "^-DCMAKE_CXX_FLAGS_|^-DFLUXION_CUDA=")
    run("configure (no build type)" ${CMAKE_COMMAND} ${no_type_args} -G "Unix Makefiles"
        -DCMAKE_MAKE_PROGRAM=${make_program} -DFLUXION_CUDA=OFF -B ${dir})
    file(READ ${dir}/fluxion/CMakeFiles/fluxion.dir/flags.make library_flags)
    file(READ ${dir}/CMakeFiles/consumer.dir/flags.make consumer_flags)
    if(NOT run_output MATCHES "sets no CMAKE_BUILD_TYPE" OR NOT library_flags MATCHES "-O3"
       OR consumer_flags MATCHES "-O[1-3s]")
      message(FATAL_ERROR "consumer (${MODE}): with no build type the library should get -O3 and the consumer "
                          "nothing:\n${run_output}\nlibrary: ${library_flags}\nconsumer: ${consumer_flags}")
    endif()
    message("consumer (${MODE}): a parent with no build type gets an optimised library (-O3), its own flags untouched")
  endif()
  consumer(build false ARGS "")
endif()
message("consumer (${MODE}): OK")
