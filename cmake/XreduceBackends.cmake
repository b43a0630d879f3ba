# Built-in backends are compiled into the core library and registered explicitly (no static
# initialisers, which static linking drops). A backend folder calls
#
#   xreduce_add_builtin_backend(NAME REGISTER <function> SOURCES <files> [LIBRARIES <targets>] [PACKAGES <names>])
#
# where <function> is `void <function>(xreduce::Registry&)` in namespace xreduce::backends.
# xreduce_generate_builtin_registry() then writes the one function that calls them all.
#
# Each backend is an object library that sees the public headers only (xreduce/ and its
# backend/ toolkit), exactly as an out-of-tree plugin does: the core's private sources are not
# on its include path.

function(xreduce_add_builtin_backend name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "REGISTER" "SOURCES;LIBRARIES;PACKAGES")
  if(NOT arg_REGISTER OR NOT arg_SOURCES)
    message(FATAL_ERROR "xreduce_add_builtin_backend(${name}): REGISTER and SOURCES are required")
  endif()
  set(objects xreduce_backend_${name})
  add_library(${objects} OBJECT ${arg_SOURCES})
  target_include_directories(${objects} PRIVATE $<TARGET_PROPERTY:xreduce,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_features(${objects} PRIVATE cxx_std_20)
  target_compile_options(${objects} PRIVATE -Wall -Wextra -Wpedantic)
  set_target_properties(${objects} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(arg_LIBRARIES)
    target_link_libraries(${objects} PRIVATE ${arg_LIBRARIES})
    target_link_libraries(xreduce PRIVATE ${arg_LIBRARIES})
  endif()
  target_sources(xreduce PRIVATE $<TARGET_OBJECTS:${objects}>)
  set_property(GLOBAL APPEND PROPERTY XREDUCE_BUILTIN_REGISTRARS ${arg_REGISTER})
  set_property(GLOBAL APPEND PROPERTY XREDUCE_BUILTIN_BACKENDS ${name})
  set_property(GLOBAL APPEND PROPERTY XREDUCE_PACKAGE_DEPENDENCIES ${arg_PACKAGES})
endfunction()

function(xreduce_generate_builtin_registry)
  get_property(registrars GLOBAL PROPERTY XREDUCE_BUILTIN_REGISTRARS)
  get_property(backends GLOBAL PROPERTY XREDUCE_BUILTIN_BACKENDS)
  set(XREDUCE_REGISTRAR_DECLARATIONS "")
  set(XREDUCE_REGISTRAR_CALLS "")
  foreach(fn IN LISTS registrars)
    string(APPEND XREDUCE_REGISTRAR_DECLARATIONS "void ${fn}(Registry&);\n")
    string(APPEND XREDUCE_REGISTRAR_CALLS "  backends::${fn}(registry);\n")
  endforeach()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/builtin_backends.cpp.in
                 ${PROJECT_BINARY_DIR}/generated/builtin_backends.cpp @ONLY)
  target_sources(xreduce PRIVATE ${PROJECT_BINARY_DIR}/generated/builtin_backends.cpp)
  message(STATUS "xreduce: built-in backends: ${backends}")
endfunction()
