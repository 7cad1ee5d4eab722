# vgpu_add_subdirs(<name>...): add the named sub-folders of the current source folder, in the
# order given. Both directions are hard failures, so a folder can neither vanish nor be left out
# silently:
#  - a named folder without a CMakeLists.txt (renamed, deleted, misspelled);
#  - a sub-folder with a CMakeLists.txt that the list does not name (a new part nobody wired in).
# Order matters where a folder tests `if(TARGET ...)` of an earlier one; links between targets
# resolve at generate time and need no order.
function(vgpu_add_subdirs)
  foreach(name IN LISTS ARGN)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/CMakeLists.txt)
      message(FATAL_ERROR "vgpu_add_subdirs: ${CMAKE_CURRENT_SOURCE_DIR}/${name} has no "
                          "CMakeLists.txt (renamed or removed? update the list in "
                          "${CMAKE_CURRENT_LIST_FILE})")
    endif()
  endforeach()
  file(GLOB entries LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
       ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(entry IN LISTS entries)
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${entry}
       AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${entry}/CMakeLists.txt
       AND NOT entry IN_LIST ARGN)
      message(FATAL_ERROR "vgpu_add_subdirs: ${CMAKE_CURRENT_SOURCE_DIR}/${entry} has a "
                          "CMakeLists.txt but is not listed in ${CMAKE_CURRENT_LIST_FILE}")
    endif()
  endforeach()
  foreach(name IN LISTS ARGN)
    add_subdirectory(${name})
  endforeach()
endfunction()
