# Builds the Jupyter kernel's precompiled header: cmake -DCLANGXX=... -DFLAGS_FILE=... -DHEADER=... -DOUTPUT=... -P
# The interpreter (fluxion_kernel_host) reads the same flags file, and clang::Interpreter adds
# -fincremental-extensions to them; a precompiled header built with other language options is rejected.
file(STRINGS ${FLAGS_FILE} flags)
execute_process(
  COMMAND ${CLANGXX} ${flags} -Xclang -fincremental-extensions -xc++-header ${HEADER} -o ${OUTPUT}.tmp
          -MD -MF ${OUTPUT}.d -MT ${OUTPUT}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "building ${OUTPUT} failed (${result})")
endif()
file(RENAME ${OUTPUT}.tmp ${OUTPUT})
