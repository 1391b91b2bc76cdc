# gradsweep_add_plugin(<target> SOURCES <src>...)
#
# Builds a gradsweep plugin: a shared library with hidden visibility (only the `gradsweep_plugin` entry
# point is exported), linked to the SDK, no "lib" prefix. In-tree plugins also reuse the shared LibTorch
# precompiled header and land in the build's plugin directory; out-of-tree plugins (which include this
# file through find_package(GradSweepSDK)) build as ordinary shared libraries.
function(gradsweep_add_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT TARGET GradSweep::sdk)
    message(FATAL_ERROR "gradsweep_add_plugin: GradSweep::sdk not found; call find_package(GradSweepSDK) first")
  endif()
  target_link_libraries(${target} PRIVATE GradSweep::sdk)
  # The C++ standard comes from GradSweep::sdk (the one its LibTorch needs).
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(TARGET gradsweep_pch)
    target_precompile_headers(${target} REUSE_FROM gradsweep_pch)
  elseif(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # Out of tree: GCC 12's false positives inside std::string in C++20, as the host's build silences them
    # (its top-level CMakeLists.txt says why), so that a plugin built with -Werror builds.
    target_compile_options(${target} PRIVATE -Wno-restrict -Wno-stringop-overflow -Wno-stringop-overread
                                             -Wno-array-bounds)
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED GRADSWEEP_PLUGIN_BUILD_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${GRADSWEEP_PLUGIN_BUILD_DIR})
    install(TARGETS ${target} LIBRARY DESTINATION ${GRADSWEEP_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
