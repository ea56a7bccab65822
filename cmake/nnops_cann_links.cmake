# Install-time script (install(SCRIPT) from src/acl/CMakeLists.txt): CANN's library names as links to
# libnnops.so, and optionally lib64 -> lib and a set_env.sh like a CANN toolkit's.
# Expects NNOPS_LIBDIR (relative library dir) and NNOPS_CANN_LAYOUT, set by the install(CODE) before it.
set(_root "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
set(_libdir "${_root}/${NNOPS_LIBDIR}")
foreach(_name ascendcl nnopbase opapi opapi_nn opapi_math)
  message(STATUS "Installing: ${_libdir}/lib${_name}.so -> libnnops.so")
  file(CREATE_LINK libnnops.so "${_libdir}/lib${_name}.so" SYMBOLIC)
endforeach()

if(NNOPS_CANN_LAYOUT)
  if(NNOPS_LIBDIR STREQUAL "lib" AND NOT EXISTS "${_root}/lib64" AND NOT IS_SYMLINK "${_root}/lib64")
    message(STATUS "Installing: ${_root}/lib64 -> lib")
    file(CREATE_LINK lib "${_root}/lib64" SYMBOLIC)
  endif()
  message(STATUS "Installing: ${_root}/set_env.sh")
  file(WRITE "${_root}/set_env.sh"
"# Source this file to build and run CANN programs against nnops, as with a CANN toolkit's set_env.sh.
export ASCEND_CUSTOM_PATH=\"${CMAKE_INSTALL_PREFIX}\"
export ASCEND_HOME_PATH=\"${CMAKE_INSTALL_PREFIX}\"
export LD_LIBRARY_PATH=\"${CMAKE_INSTALL_PREFIX}/${NNOPS_LIBDIR}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\"
")
endif()
