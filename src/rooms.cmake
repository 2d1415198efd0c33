# Include folders per room, so that the compiler enforces the layers: a target of room R is compiled with one
# folder, <build>/rooms/R, holding symbolic links to include/profile_train/X for R itself and each room X that
# src/layers.txt lets R include, directly or through the rooms it includes (a header of an allowed room includes
# that room's allowed rooms). Nothing else of include/ is on its path, so an #include of a higher room's header
# fails to compile ("No such file or directory"). No product target exports include/ as a whole; tests and
# benchmarks add it themselves (they are not a room).
#
# The compiler sees the closure of the table; the exact, direct edges (and relative includes such as
# "../cli/x.h", which no include path can stop) stay with src/check_layers.cmake, which every product target
# also waits for. A debt line of the table ("debt R -> include/profile_train/X/f.h") puts that one file, not its
# room, into R's folder.
#
#   pt_room(<target> <room>)   compile <target> with <room>'s folder (PRIVATE; call once per target)
#   pt_room_folder(<room> <var>)   the folder of <room>, made on first use

set(PT_ROOMS_TABLE "${PROJECT_SOURCE_DIR}/src/layers.txt")
set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${PT_ROOMS_TABLE}")

include("${CMAKE_CURRENT_LIST_DIR}/layers_table.cmake")
# The table's rooms (PT_ROOMS), their edges (_pt_room_allow_<ROOM>) and debt lines (_pt_room_debt_keys,
# "ROOM|PATH"), read by the layering check's own reader; a malformed table stops the configure with its errors.
function(_pt_rooms_read_table)
  set(TABLE "${PT_ROOMS_TABLE}")
  file(RELATIVE_PATH table_rel "${PROJECT_SOURCE_DIR}" "${TABLE}")
  pt_read_layers_table()
  set(PT_ROOMS "${rooms}" PARENT_SCOPE)
  foreach(room IN LISTS rooms)
    set(_pt_room_allow_${room} "${allow_${room}}" PARENT_SCOPE)
  endforeach()
  set(_pt_room_debt_keys "${debt_keys}" PARENT_SCOPE)
endfunction()
_pt_rooms_read_table()

# The rooms <room> may include, itself first, then the table's edges followed transitively.
function(pt_room_closure room out)
  set(seen "${room}")
  set(todo "${room}")
  while(todo)
    list(POP_FRONT todo r)
    foreach(t IN LISTS _pt_room_allow_${r})
      if(NOT t IN_LIST seen)
        list(APPEND seen "${t}")
        list(APPEND todo "${t}")
      endif()
    endforeach()
  endwhile()
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

function(pt_room_folder room out)
  if(NOT room IN_LIST PT_ROOMS)
    message(FATAL_ERROR "rooms: ${room} is not a room of ${PT_ROOMS_TABLE} (rooms: ${PT_ROOMS})")
  endif()
  set(folder "${PROJECT_BINARY_DIR}/rooms/${room}")
  get_property(made GLOBAL PROPERTY _pt_room_folder_${room})
  if(NOT made)
    file(REMOVE_RECURSE "${folder}")
    file(MAKE_DIRECTORY "${folder}/profile_train")
    pt_room_closure("${room}" rooms)
    foreach(r IN LISTS rooms)
      if(IS_DIRECTORY "${PROJECT_SOURCE_DIR}/include/profile_train/${r}")
        file(CREATE_LINK "${PROJECT_SOURCE_DIR}/include/profile_train/${r}" "${folder}/profile_train/${r}" SYMBOLIC)
      endif()
    endforeach()
    foreach(key IN LISTS _pt_room_debt_keys)
      if(NOT key MATCHES "^${room}\\|(.+)$")
        continue()
      endif()
      set(path "${CMAKE_MATCH_1}")
      if(path MATCHES "^include/(profile_train/([a-z_]+)/.+)$" AND NOT CMAKE_MATCH_2 IN_LIST rooms)
        set(link "${folder}/${CMAKE_MATCH_1}")
        get_filename_component(dir "${link}" DIRECTORY)
        file(MAKE_DIRECTORY "${dir}")
        file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${path}" "${link}" SYMBOLIC)
      endif()
    endforeach()
    set_property(GLOBAL PROPERTY _pt_room_folder_${room} TRUE)
  endif()
  set(${out} "${folder}" PARENT_SCOPE)
endfunction()

function(pt_room target room)
  pt_room_folder("${room}" folder)
  target_include_directories(${target} PRIVATE "${folder}")
  set_property(TARGET ${target} PROPERTY PT_ROOM "${room}")
endfunction()
