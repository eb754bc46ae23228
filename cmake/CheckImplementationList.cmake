# CTest implementation_list: include/fluxion/implementation.hpp (the header-only switch) must
# #include every implementation file that the fluxion library compiles, and only existing ones.
#   cmake -DSOURCE_DIR=<repo> -P CheckImplementationList.cmake
cmake_minimum_required(VERSION 3.21)
set(list_file ${SOURCE_DIR}/include/fluxion/implementation.hpp)
file(STRINGS ${list_file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
set(listed "")
foreach(line ${lines})
  string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
  list(APPEND listed ${inc})
endforeach()

# The same globs as the fluxion target in the top-level CMakeLists.txt.
file(GLOB sources RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/src/*.cpp ${SOURCE_DIR}/primitives/*.cpp ${SOURCE_DIR}/transforms/*.cpp
     ${SOURCE_DIR}/passes/*.cpp ${SOURCE_DIR}/runtime/*.cpp
     ${SOURCE_DIR}/backends/cpu/*.cpp ${SOURCE_DIR}/backends/reference/*.cpp)
set(problems "")
foreach(s ${sources})
  if(NOT s IN_LIST listed)
    string(APPEND problems "\n  missing: #include \"${s}\"")
  endif()
endforeach()
foreach(inc ${listed})
  if(inc MATCHES "\\.cpp$" AND NOT EXISTS ${SOURCE_DIR}/${inc})
    string(APPEND problems "\n  no such file: #include \"${inc}\"")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "include/fluxion/implementation.hpp is out of step with the sources the "
                      "fluxion library compiles:${problems}")
endif()
list(LENGTH sources n)
message("implementation.hpp lists all ${n} implementation files")
