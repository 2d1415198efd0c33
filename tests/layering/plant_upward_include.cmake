# Plants one include in a scratch copy of src/ and include/ and runs the layering check on it.
#   cmake -DSRC=<project source> -DWORK=<scratch dir> -DCASE=<case> -P plant_upward_include.cmake
# Each case but "clean" must make the check fail with the planted file, its line and the forbidden edge;
# "clean" (nothing planted) must pass, so that the failures come from the plant and not from the copy.
cmake_minimum_required(VERSION 3.25)

if(CASE STREQUAL "trace_to_analysis")        # an importer reaching up into the analyzers
  set(file "src/trace/model.cpp")
  set(include_line "#include \"profile_train/analysis/analyze.h\"")
  set(edge "trace -> analysis")
elseif(CASE STREQUAL "private_header")       # a private header of a higher room, by relative path
  set(file "src/common/utf8.cpp")
  set(include_line "#include \"../cli/pipeline.h\"")
  set(edge "common -> cli")
elseif(CASE STREQUAL "rules_to_writers")     # rules may use the model's JSON, not the writers
  set(file "src/rules/metric_paths.cpp")
  set(include_line "#include \"profile_train/report/writers.h\"")
  set(edge "rules -> report")
elseif(CASE STREQUAL "debt_is_one_file")     # a debt line allows its one file, not the rest of its room
  set(file "src/report/escape.cpp")
  set(include_line "  #  include <profile_train/tuner/tuner.h>")
  set(edge "report -> tuner")
elseif(CASE STREQUAL "header_climbs")        # a public header of a lower room including a higher one
  set(file "include/profile_train/common/status.h")
  set(include_line "#include \"profile_train/tuner/tuner.h\"")
  set(edge "common -> tuner")
elseif(NOT CASE STREQUAL "clean")
  message(FATAL_ERROR "unknown case ${CASE}")
endif()

set(root "${WORK}/${CASE}")
file(REMOVE_RECURSE "${root}")
file(MAKE_DIRECTORY "${root}")
file(COPY "${SRC}/src" "${SRC}/include" DESTINATION "${root}")

if(CASE STREQUAL "debt_is_one_file")  # the table has no debt today: the case adds one to the copy, and its use
  file(APPEND "${root}/src/layers.txt"
       "debt report -> include/profile_train/tuner/knobs.h  # planted by tests/layering: one file only\n")
  file(APPEND "${root}/src/report/timeline.cpp" "#include \"profile_train/tuner/knobs.h\"\n")
endif()

set(expect_line 0)
if(NOT CASE STREQUAL "clean")
  file(READ "${root}/${file}" content)
  if(NOT content MATCHES "\n$")
    string(APPEND content "\n")
  endif()
  string(REGEX MATCHALL "\n" newlines "${content}")
  list(LENGTH newlines n)
  math(EXPR expect_line "${n} + 1")
  file(WRITE "${root}/${file}" "${content}${include_line}\n")
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" -DROOT=${root} -P "${SRC}/src/check_layers.cmake"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(CASE STREQUAL "clean")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the check fails on an unmodified copy:\n${all}")
  endif()
  message(STATUS "clean copy passes")
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the check passed with ${include_line} planted in ${file}:\n${all}")
endif()
string(FIND "${all}" "${file}:${expect_line}: forbidden include" at_place)
string(FIND "${all}" ": ${edge} is not an allowed edge" at_edge)
if(at_place LESS 0 OR at_edge LESS 0)
  message(FATAL_ERROR "the check failed without naming ${file}:${expect_line} and the edge ${edge}:\n${all}")
endif()
string(REGEX MATCH "failed: ([0-9]+) problem" m "${all}")
if(NOT CMAKE_MATCH_1 EQUAL 1)
  message(FATAL_ERROR "expected exactly the planted problem, got:\n${all}")
endif()
message(STATUS "rejected as expected: ${file}:${expect_line}: ${edge}")
