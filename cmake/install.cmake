# `cmake --install build --prefix P`: the static libraries, the public headers, the `openclip`
# binary, the model configs and the data files, plus a CMake package (find_package(openclip
# CONFIG) -> openclip::openclip) and a pkg-config file (openclip.pc). Included by the root
# CMakeLists after every module target exists.
include(CMakePackageConfigHelpers)

set(OC_INSTALL_MODULES core hub ops io text image model optim step data dist download eval train report index serve)
set(oc_lib_targets openclip openclip_configs)
foreach(m ${OC_INSTALL_MODULES})
  list(APPEND oc_lib_targets openclip_${m})
endforeach()
if(OC_CUDA)
  list(APPEND OC_INSTALL_MODULES ops_cuda)
  list(APPEND oc_lib_targets openclip_ops_cuda)
endif()
set(OC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/openclip)

install(TARGETS ${oc_lib_targets} EXPORT openclipTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS openclip_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# oneDNN from .deps/onednn lies inside the source tree, which CMake leaves out of an installed
# binary's RUNPATH: its shared library is installed beside our libraries, and the binary and the
# Python module find it relative to themselves ($ORIGIN), so the installation can move.
if(OC_DNNL_LIBDIR MATCHES "^${CMAKE_SOURCE_DIR}/")
  file(GLOB oc_dnnl_so ${OC_DNNL_LIBDIR}/libdnnl.so*)
  install(FILES ${oc_dnnl_so} DESTINATION ${CMAKE_INSTALL_LIBDIR})
  file(RELATIVE_PATH oc_rel /p/${CMAKE_INSTALL_BINDIR} /p/${CMAKE_INSTALL_LIBDIR})
  set_property(TARGET openclip_cli APPEND PROPERTY INSTALL_RPATH "$ORIGIN/${oc_rel}")
  set(OC_DNNL_INSTALLED ON)  # the Python module (CMakeLists.txt) does the same
endif()
# The public header is self-contained (standard headers only).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/openclip DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Data (share/openclip): the model configs (also embedded in the library, installed for
# reading and editing), and what setup put in data/: the BPE vocabulary, imagenet_zeroshot.json,
# WordPiece vocabularies. Patterns keep downloaded datasets that may sit there out.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs/models DESTINATION ${CMAKE_INSTALL_DATADIR}/openclip/configs)
install(DIRECTORY ${OPENCLIP_DATA_DIR}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/openclip OPTIONAL
  FILES_MATCHING PATTERN "*.txt.gz" PATTERN "*.json" PATTERN "*vocab*.txt")

# The dependencies the exported targets name, for openclipConfig.cmake to find again.
set(OC_CFG_CURL 0)
if(CURL_FOUND)
  set(OC_CFG_CURL 1)
endif()
set(OC_CFG_MPI 0)
if(OPENCLIP_WITH_MPI AND MPI_CXX_FOUND)
  set(OC_CFG_MPI 1)
endif()
set(OC_CFG_CUDA 0)
if(OC_CUDA)
  set(OC_CFG_CUDA 1)
endif()

install(EXPORT openclipTargets NAMESPACE openclip:: DESTINATION ${OC_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/openclipConfig.cmake.in
  ${CMAKE_BINARY_DIR}/generated/openclipConfig.cmake INSTALL_DESTINATION ${OC_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/generated/openclipConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/generated/openclipConfig.cmake
  ${CMAKE_BINARY_DIR}/generated/openclipConfigVersion.cmake DESTINATION ${OC_CMAKE_DIR})

# pkg-config: static libraries, so Libs carries every module (in a link group: their order
# does not matter then) and the dependencies that have no .pc file of their own.
set(OC_PC_LIBS "-Wl,--start-group")
foreach(m ${OC_INSTALL_MODULES} configs)
  string(APPEND OC_PC_LIBS " -lopenclip_${m}")
endforeach()
string(APPEND OC_PC_LIBS " -Wl,--end-group -lfaiss -lsentencepiece -L${OC_DNNL_LIBDIR} -Wl,-rpath,${OC_DNNL_LIBDIR} -ldnnl ${OpenMP_CXX_FLAGS}")
if(OC_CUDA)  # the CUDA runtime, cuBLASLt (and NCCL when found), which have no .pc files
  string(APPEND OC_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcudart -lcublasLt")
  if(NCCL_LIBRARY)
    get_filename_component(oc_nccl_dir ${NCCL_LIBRARY} DIRECTORY)
    string(APPEND OC_PC_LIBS " -L${oc_nccl_dir} -lnccl")
  endif()
endif()
set(OC_PC_REQUIRES "fmt libjpeg libpng zlib libwebp snappy libcrypto")
if(ZSTD_FOUND)
  string(APPEND OC_PC_REQUIRES " libzstd")
endif()
if(CURL_FOUND)
  string(APPEND OC_PC_REQUIRES " libcurl")
endif()
if(OC_CFG_MPI)
  string(APPEND OC_PC_REQUIRES " ompi-cxx")
endif()
# The prefix relative to the .pc file, so an installation can move (lib/ or lib/<triplet>/).
file(RELATIVE_PATH OC_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${CMAKE_SOURCE_DIR}/cmake/openclip.pc.in ${CMAKE_BINARY_DIR}/generated/openclip.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/openclip.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ctest -L install: install into a scratch prefix, build examples/ against it with a fresh
# configure (find_package and pkg-config), run it.
# Not in sanitizer builds: the downstream example is built without the sanitizer runtime.
if(NOT OPENCLIP_SANITIZE)
  add_test(NAME install_package COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR}
    -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DSCRATCH=${CMAKE_BINARY_DIR}/install_test
    -DGENERATOR=${CMAKE_GENERATOR} -DCXX=${CMAKE_CXX_COMPILER} -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
    -DPYTHON=$<$<BOOL:${OPENCLIP_PYTHON}>:${Python3_EXECUTABLE}>
    -P ${CMAKE_SOURCE_DIR}/cmake/test_install.cmake)
  set_tests_properties(install_package PROPERTIES LABELS install TIMEOUT 300)
endif()
