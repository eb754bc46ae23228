# Compiles one snippet of tests/compile_errors/ with the project's compiler and flags (the front end
# only) and checks what a user would see. The snippet's first line says what to expect:
#   // expect: compiles            it must compile;
#   // expect: <text>              it must fail, and the FIRST line the compiler prints with "error:"
#                                  must be a static_assert ("static assertion failed") containing <text>
#                                  (<text> has no ';': CMake reads it as a list separator).
# Arguments: -DCXX=<compiler> -DSNIPPET=<file> and, joined with '|', -DFLAGS, -DINCLUDES, -DDEFINES and
# -DIMPLICIT (the compiler's own include directories, left out of -I: as -I they would break #include_next).
foreach(var CXX SNIPPET)
  if(NOT ${var})
    message(FATAL_ERROR "check_snippet.cmake: pass -D${var}=...")
  endif()
endforeach()
string(REPLACE "|" ";" flags "${FLAGS}")
string(REPLACE "|" ";" includes "${INCLUDES}")
string(REPLACE "|" ";" defines "${DEFINES}")
string(REPLACE "|" ";" implicit "${IMPLICIT}")
foreach(dir ${implicit})
  list(REMOVE_ITEM includes ${dir} ${dir}/)
endforeach()
list(TRANSFORM includes PREPEND "-I")
list(TRANSFORM defines PREPEND "-D")

file(STRINGS ${SNIPPET} first_line LIMIT_COUNT 1)
if(NOT first_line MATCHES "^// expect: (.+)$")
  message(FATAL_ERROR "${SNIPPET}: the first line must be `// expect: compiles` or `// expect: <message text>`")
endif()
set(expect "${CMAKE_MATCH_1}")

execute_process(COMMAND ${CXX} ${flags} ${includes} ${defines} -fsyntax-only ${SNIPPET}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)

if(expect STREQUAL "compiles")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SNIPPET} must compile, but the compiler said:\n${out}")
  endif()
  message(STATUS "compiles, as it should")
  return()
endif()

if(rc EQUAL 0)
  message(FATAL_ERROR "${SNIPPET} compiled, but it must fail with: ${expect}")
endif()
# The first line holding "error:" (the output is C++ text: string operations only, no list operations).
string(FIND "${out}" "error:" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SNIPPET} failed without an error line:\n${out}")
endif()
string(SUBSTRING "${out}" 0 ${at} before)
string(FIND "${before}" "\n" line_start REVERSE)
math(EXPR line_start "${line_start} + 1")
string(SUBSTRING "${out}" ${line_start} -1 rest)
string(FIND "${rest}" "\n" line_end)
string(SUBSTRING "${rest}" 0 ${line_end} first_error)
string(FIND "${first_error}" "static assertion failed" is_static_assert)
string(FIND "${first_error}" "${expect}" has_text)
if(is_static_assert EQUAL -1 OR has_text EQUAL -1)
  message(FATAL_ERROR "${SNIPPET}: the first error line should be the static_assert `${expect}`, but it is:\n"
                      "${first_error}\n\nThe whole output:\n${out}")
endif()
message(STATUS "first error line: ${first_error}")
