# The allowed-edges table (src/layers.txt; its header says how room, edge and debt lines are written), read in
# one place for the layering check (check_layers.cmake, script mode) and the include folders per room
# (rooms.cmake, at configure time).
#
#   pt_read_layers_table()   reads ${TABLE} (named ${table_rel} in messages) and sets, in the caller's scope:
#     rooms                      the rooms, in table order
#     allow_<ROOM>               the rooms ROOM may include (besides itself)
#     assign_paths, assign_rooms room lines: path i belongs to room i
#     debt_keys, debt_reasons    debt lines: "ROOM|PATH" and why
#   A malformed table stops with every error, one line each (FILE:LINE: ...).
macro(pt_read_layers_table)
  set(rooms "")          # in table order
  set(assign_paths "")   # room lines: path i belongs to room i
  set(assign_rooms "")
  set(debt_keys "")      # "ROOM|PATH"
  set(debt_reasons "")
  set(table_errors "")
  file(STRINGS "${TABLE}" table_lines)
  set(lineno 0)
  foreach(line IN LISTS table_lines)
    math(EXPR lineno "${lineno} + 1")
    string(STRIP "${line}" line)
    string(REPLACE ";" "," line "${line}")  # file(STRINGS) would split a line at ";": it reads as ","
    if(line STREQUAL "" OR line MATCHES "^#")
      continue()
    endif()
    if(line MATCHES "^room +([a-z_]+): *(.*)$")
      set(room "${CMAKE_MATCH_1}")
      string(REGEX REPLACE " +" ";" paths "${CMAKE_MATCH_2}")
      foreach(p IN LISTS paths)
        list(APPEND assign_paths "${p}")
        list(APPEND assign_rooms "${room}")
      endforeach()
    elseif(line MATCHES "^debt +([a-z_]+) *-> *([^ #]+) *# *(.+)$")
      list(APPEND debt_keys "${CMAKE_MATCH_1}|${CMAKE_MATCH_2}")
      list(APPEND debt_reasons "${CMAKE_MATCH_3}")
    elseif(line MATCHES "^([a-z_]+) *->(.*)$")
      set(room "${CMAKE_MATCH_1}")
      string(STRIP "${CMAKE_MATCH_2}" targets)
      if(room IN_LIST rooms)
        list(APPEND table_errors "${table_rel}:${lineno}: room ${room} has a second edge line")
      endif()
      list(APPEND rooms "${room}")
      if(targets STREQUAL "")
        set(allow_${room} "")
      else()
        string(REGEX REPLACE " +" ";" allow_${room} "${targets}")
      endif()
    else()
      list(APPEND table_errors "${table_rel}:${lineno}: not a room, edge or debt line: ${line}")
    endif()
  endforeach()
  foreach(room IN LISTS rooms)
    foreach(t IN LISTS allow_${room})
      if(NOT t IN_LIST rooms)
        list(APPEND table_errors "${table_rel}: ${room} -> ${t}: ${t} is not a room of the table")
      endif()
    endforeach()
  endforeach()
  if(table_errors)
    list(JOIN table_errors "\n" text)
    message(NOTICE "${text}")
    message(FATAL_ERROR "layering check: the table ${table_rel} has errors, listed above")
  endif()
endmacro()
