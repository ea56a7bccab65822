# AclInstallTree test (cmake -P): installs the build tree into WORK_DIR/prefix, checks the layout, builds the
# GroupNormalizationGrad example against it (cmake/install_test) and runs both builds.
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER; for a cross build (preset arm64) also
# TOOLCHAIN_FILE (the consumer is configured with it) and EMULATOR (runs the two programs); both may be empty.
set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

foreach(f include/acl/acl.h include/acl/acl_base.h include/acl/acl_rt.h include/aclnn/aclnn_base.h
          include/aclnnop/aclnn_group_normalization_grad.h include/aclnnop/aclnn_inplace_apply_power_sign.h
          include/aclnn_group_normalization_grad.h include/nnops/nnops.hpp lib/libnnops.so
          lib/cmake/nnops/nnopsConfig.cmake lib/cmake/nnops/nnopsConfigVersion.cmake set_env.sh)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "missing from the install tree: ${f}")
  endif()
endforeach()
foreach(name ascendcl nnopbase opapi opapi_nn opapi_math)
  file(READ_SYMLINK "${prefix}/lib/lib${name}.so" target)
  if(NOT target STREQUAL "libnnops.so")
    message(FATAL_ERROR "lib/lib${name}.so should link to libnnops.so, links to '${target}'")
  endif()
endforeach()
if(EXISTS "${prefix}/include/src" OR EXISTS "${prefix}/include/nnops/../../src")
  message(FATAL_ERROR "internal headers leaked into the install tree")
endif()

set(toolchain_arg "")
if(TOOLCHAIN_FILE)
  set(toolchain_arg "-DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN_FILE}")
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/cmake/install_test" -B "${WORK_DIR}/build" -G "${GENERATOR}" ${toolchain_arg}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
    -DASCEND_PATH=${prefix} -DEXAMPLE=${SOURCE_DIR}/src/ops/norm/group_normalization_grad/examples/aclnn_group_normalization_grad_example.cpp)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")

run(${EMULATOR} "${WORK_DIR}/build/example_find_package")
if(NOT last_output MATCHES "\\[PASS\\]")
  message(FATAL_ERROR "example_find_package did not pass:\n${last_output}")
endif()
run(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${prefix}/lib" ${EMULATOR} "${WORK_DIR}/build/example_cann_style")
if(NOT last_output MATCHES "\\[PASS\\]")
  message(FATAL_ERROR "example_cann_style did not pass:\n${last_output}")
endif()
message(STATUS "install tree OK: ${prefix}")
