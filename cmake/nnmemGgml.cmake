# nnmem_ggml_alloc(<target>): builds ggml's <target> (ggml-base, which holds
# ggml-alloc.c) with nnmem's ggml-alloc.c in place of ggml's and links it with
# nnmem (nnmem::static, or nnmem::shared with the SHARED option):
#
#   add_subdirectory(ggml)        # or llama.cpp, which adds ggml
#   find_package(nnmem 0.1 REQUIRED)
#   nnmem_ggml_alloc(ggml-base)
#
# The replacement is compiled with the target's own flags and include paths
# (ggml's include/ and src/), as ggml's file is. Included by
# nnmemConfig.cmake and by nnmem's own CMakeLists.txt (add_subdirectory),
# each setting NNMEM_GGML_ALLOC_SOURCE first (the file's path); kept in a
# global property so that the function finds it from any directory.

set_property(GLOBAL PROPERTY NNMEM_GGML_ALLOC_SOURCE "${NNMEM_GGML_ALLOC_SOURCE}")

function(nnmem_ggml_alloc target)
  cmake_parse_arguments(PARSE_ARGV 1 _nnmem "SHARED" "" "")
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "nnmem_ggml_alloc: no target named '${target}' (ggml's is ggml-base)")
  endif()
  get_property(_nnmem_source GLOBAL PROPERTY NNMEM_GGML_ALLOC_SOURCE)
  get_target_property(_sources "${target}" SOURCES)
  set(_replaced)
  set(_found FALSE)
  foreach(_source IN LISTS _sources)
    get_filename_component(_name "${_source}" NAME)
    if(_name STREQUAL "ggml-alloc.c")
      list(APPEND _replaced "${_nnmem_source}")
      set(_found TRUE)
    else()
      list(APPEND _replaced "${_source}")
    endif()
  endforeach()
  if(NOT _found)
    message(FATAL_ERROR "nnmem_ggml_alloc: target '${target}' has no source named ggml-alloc.c")
  endif()
  set_property(TARGET "${target}" PROPERTY SOURCES "${_replaced}")
  if(_nnmem_SHARED)
    target_link_libraries("${target}" PRIVATE nnmem::shared)
  else()
    target_link_libraries("${target}" PRIVATE nnmem::static)
  endif()
endfunction()
