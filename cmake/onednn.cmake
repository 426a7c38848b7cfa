# oneDNN >= 3, the CPU GEMM library (src/ops/cpu). scripts/setup_onednn.sh installs Intel's PyPI
# build (3.2.0, GNU OpenMP) into .deps/onednn, searched first; -Ddnnl_DIR=<prefix>/lib/cmake/dnnl
# picks another install. Debian 12's libdnnl-dev (2.6) has another API and is refused.
# A build folder configured before the move to oneDNN 3 holds Debian's 2.6 in its cached
# dnnl_DIR: forget an older cached one, so the search (.deps first) runs again.
if(dnnl_DIR AND EXISTS "${dnnl_DIR}/dnnl-config-version.cmake")
  set(PACKAGE_FIND_VERSION 3.0)
  include("${dnnl_DIR}/dnnl-config-version.cmake")
  if(PACKAGE_VERSION VERSION_LESS 3)
    message(STATUS "oneDNN: the cached dnnl_DIR (${dnnl_DIR}) is ${PACKAGE_VERSION}: looking for oneDNN 3")
    unset(dnnl_DIR CACHE)
  endif()
endif()
find_package(dnnl CONFIG HINTS ${CMAKE_SOURCE_DIR}/.deps/onednn)
set(oc_dnnl_help "run scripts/setup.sh (it installs oneDNN 3.2 from PyPI into .deps/onednn), or \
point CMake at an installed oneDNN 3: cmake -Ddnnl_DIR=<its prefix>/lib/cmake/dnnl")
if(NOT dnnl_FOUND)
  message(FATAL_ERROR "oneDNN 3 not found: ${oc_dnnl_help}")
endif()
if(dnnl_VERSION VERSION_LESS 3)
  message(FATAL_ERROR "oneDNN ${dnnl_VERSION} (${dnnl_DIR}) is older than 3, whose API openclip uses: ${oc_dnnl_help}")
endif()
if(NOT DNNL_CPU_THREADING_RUNTIME STREQUAL "OMP")
  # Our kernels use GNU OpenMP; a TBB or Intel-OpenMP oneDNN adds a second thread pool.
  message(WARNING "oneDNN ${dnnl_VERSION} (${dnnl_DIR}) is threaded with ${DNNL_CPU_THREADING_RUNTIME}, "
    "not OpenMP: expect oversubscribed cores (test ops OpenMpRuntime)")
endif()
get_target_property(oc_dnnl_lib DNNL::dnnl LOCATION)
get_filename_component(OC_DNNL_LIBDIR ${oc_dnnl_lib} DIRECTORY)
message(STATUS "oneDNN ${dnnl_VERSION}: ${oc_dnnl_lib}")
# The shared library lives outside the system's search path: binaries in the build tree get
# it in their RUNPATH (CMake's default); installed ones keep it too.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
