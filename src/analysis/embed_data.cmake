# Writes a .cpp that embeds a data file (data/gpu_specs.json, data/kernel_names.json) as a raw string, so the
# binary works from any folder.
# Usage: cmake -DOUT=<file.cpp> -DIN=<file> -DSYMBOL=<C++ name> -DDELIM=<raw-string delimiter> -P embed_data.cmake
file(READ "${IN}" text)
string(FIND "${text}" ")${DELIM}" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )${DELIM}")
endif()
get_filename_component(name "${IN}" NAME)
set(content "// Generated from data/${name} by src/analysis/embed_data.cmake at build time. Do not edit.\n")
string(APPEND content "namespace profile_train::analysis::detail {\n")
string(APPEND content "extern const char* const ${SYMBOL};\n")
string(APPEND content "const char* const ${SYMBOL} = R\"${DELIM}(${text})${DELIM}\";\n")
string(APPEND content "}  // namespace profile_train::analysis::detail\n")
file(WRITE "${OUT}.tmp" "${content}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
