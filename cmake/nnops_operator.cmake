# One operator = one folder src/ops/<category>/<op>/ plus one line in src/ops/op_list.inc. The top-level
# CMakeLists.txt reads the list and adds each folder; the folder's CMakeLists.txt calls nnops_operator():
#
#   nnops_operator(SOURCES <library sources...> [TESTS <gtest sources...>])
#
# Conventions (files found by name in the folder):
#   <op>.hpp              the C++ API header, public as <nnops/ops/<op>.hpp>
#   aclnn_<op>.h          the CANN C API header, public as <aclnnop/aclnn_<op>.h> and <aclnn_<op>.h>
#   examples/*.cpp|*.c    example programs; each is built, and run as a test that must print [PASS]
# Public headers reach the build tree through forwarding headers in ${NNOPS_GEN_INCLUDE}, and the install
# tree as copies. ${NNOPS_GEN_INCLUDE}/nnops/ops/all.hpp (included by nnops/nnops.hpp) includes every
# operator's header; nnops_finish_operators() writes it once every folder is added.

set(NNOPS_GEN_INCLUDE ${CMAKE_BINARY_DIR}/include)

# Writes a file only when its content changes, so that regenerating does not trigger rebuilds.
function(nnops_write_if_changed path content)
  file(CONFIGURE OUTPUT ${path} CONTENT "${content}" @ONLY)
endfunction()

function(nnops_operator)
  cmake_parse_arguments(ARG "" "" "SOURCES;TESTS" ${ARGN})
  get_filename_component(op ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})
  target_sources(nnops PRIVATE ${ARG_SOURCES})
  if(TARGET nnops_tests AND ARG_TESTS)
    target_sources(nnops_tests PRIVATE ${ARG_TESTS})
  endif()

  set(gen ${NNOPS_GEN_INCLUDE})
  if(EXISTS ${dir}/${op}.hpp)
    nnops_write_if_changed(${gen}/nnops/ops/${op}.hpp "// Generated: forwards to the operator folder.\n#include \"${dir}/${op}.hpp\"\n")
    install(FILES ${dir}/${op}.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nnops/ops)
    set_property(GLOBAL APPEND PROPERTY NNOPS_CPP_HEADERS ${op})
  endif()
  if(EXISTS ${dir}/aclnn_${op}.h)
    nnops_write_if_changed(${gen}/aclnnop/aclnn_${op}.h "/* Generated: forwards to the operator folder. */\n#include \"${dir}/aclnn_${op}.h\"\n")
    # CANN's samples include the header both as <aclnnop/aclnn_x.h> and, for some operators, as <aclnn_x.h>.
    set(top "/* nnops: CANN samples include this header without its folder. */\n#include \"aclnnop/aclnn_${op}.h\"\n")
    nnops_write_if_changed(${gen}/aclnn_${op}.h "${top}")
    install(FILES ${dir}/aclnn_${op}.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aclnnop)
    install(FILES ${gen}/aclnn_${op}.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()

  file(GLOB examples CONFIGURE_DEPENDS ${dir}/examples/*.cpp ${dir}/examples/*.c)
  foreach(src ${examples})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE nnops)
    if(src MATCHES "\\.c$")
      set_target_properties(${name} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
      target_compile_options(${name} PRIVATE -Wall -Wextra -Wpedantic -Werror)
      target_link_libraries(${name} PRIVATE m)
    endif()
    if(NNOPS_BUILD_TESTS)
      add_test(NAME example_${name} COMMAND ${name})
      set_tests_properties(example_${name} PROPERTIES PASS_REGULAR_EXPRESSION "\\[PASS\\]"
                                                      FAIL_REGULAR_EXPRESSION "\\[FAIL\\]")
    endif()
  endforeach()
endfunction()

# After every operator folder: the header that includes every operator's C++ API.
function(nnops_finish_operators)
  get_property(ops GLOBAL PROPERTY NNOPS_CPP_HEADERS)
  set(body "// Generated from src/ops/op_list.inc: every operator's C++ API.\n#pragma once\n")
  foreach(op ${ops})
    string(APPEND body "#include \"nnops/ops/${op}.hpp\"\n")
  endforeach()
  nnops_write_if_changed(${NNOPS_GEN_INCLUDE}/nnops/ops/all.hpp "${body}")
  install(FILES ${NNOPS_GEN_INCLUDE}/nnops/ops/all.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nnops/ops)
endfunction()

# Adds the folder of every operator in src/ops/op_list.inc.
function(nnops_add_operators)
  set(list ${PROJECT_SOURCE_DIR}/src/ops/op_list.inc)
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${list})
  file(STRINGS ${list} lines REGEX "^NNOPS_OP\\(")
  foreach(line ${lines})
    if(NOT line MATCHES "^NNOPS_OP\\(([a-z0-9_]+), *([a-z0-9_]+), *([A-Za-z0-9_]+)\\)")
      message(FATAL_ERROR "src/ops/op_list.inc: cannot read '${line}'")
    endif()
    add_subdirectory(${PROJECT_SOURCE_DIR}/src/ops/${CMAKE_MATCH_2}/${CMAKE_MATCH_1})
  endforeach()
  nnops_finish_operators()
endfunction()
