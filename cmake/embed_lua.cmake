# Generates a header that embeds each .lua file as `inline constexpr std::string_view <name>_lua`.
# Invoked at build time: cmake -DOUT=<header> -DSOURCES=<a.lua|b.lua> -P embed_lua.cmake
#
# A line `--!include <file>.lua` is replaced by that file's text (from the same folder), so that
# scripts share helper functions without repeating them. Files named *_prelude.lua exist only to
# be included and get no constant of their own.
set(content "// Generated from src/lua/*.lua by cmake/embed_lua.cmake. Do not edit.\n#pragma once\n#include <string_view>\n\nnamespace rlock::detail::lua {\n")
string(REPLACE "|" ";" SOURCES "${SOURCES}")
foreach(src IN LISTS SOURCES)
  get_filename_component(name "${src}" NAME_WE)
  if(name MATCHES "_prelude$")
    continue()
  endif()
  get_filename_component(dir "${src}" DIRECTORY)
  file(READ "${src}" text)
  string(REGEX MATCHALL "--!include [a-z_]+\\.lua" includes "${text}")
  foreach(inc IN LISTS includes)
    string(REPLACE "--!include " "" inc_file "${inc}")
    if(NOT EXISTS "${dir}/${inc_file}")
      message(FATAL_ERROR "${src}: ${inc_file} not found")
    endif()
    file(READ "${dir}/${inc_file}" inc_text)
    string(REPLACE "${inc}\n" "${inc_text}" text "${text}")
  endforeach()
  string(FIND "${text}" ")lua_\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${src} contains the raw-string delimiter )lua_\"")
  endif()
  string(APPEND content "inline constexpr std::string_view ${name}_lua = R\"lua_(${text})lua_\";\n")
endforeach()
string(APPEND content "}  // namespace rlock::detail::lua\n")
file(WRITE "${OUT}.tmp" "${content}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
