# The CUDA backend (src/ops/cuda -> openclip_ops_cuda) and NCCL (src/dist/cuda), decided by
# OPENCLIP_CUDA: OFF, ON (nvcc must be found), AUTO (on when nvcc is found). Sets OC_CUDA.
# Without CUDA nothing here is compiled and the build is the CPU-only one.
string(TOUPPER "${OPENCLIP_CUDA}" oc_cuda_mode)
if(OPENCLIP_WITH_CUDA)
  set(oc_cuda_mode ON)
endif()
# Sanitizer and fuzz builds (clang, instrumented host code) leave CUDA out unless asked for.
if(oc_cuda_mode STREQUAL "AUTO" AND (OPENCLIP_SANITIZE OR OPENCLIP_FUZZ))
  set(oc_cuda_mode OFF)
endif()
if(NOT oc_cuda_mode MATCHES "^(ON|OFF|AUTO)$")
  message(FATAL_ERROR "OPENCLIP_CUDA must be ON, OFF or AUTO, not '${OPENCLIP_CUDA}'")
endif()
set(OC_CUDA OFF)
if(NOT oc_cuda_mode STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(OC_NVCC nvcc HINTS ENV CUDA_PATH ENV CUDA_HOME PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
    if(OC_NVCC)
      set(CMAKE_CUDA_COMPILER ${OC_NVCC})
    endif()
  endif()
  if(CMAKE_CUDA_COMPILER)
    set(OC_CUDA ON)
  elseif(oc_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "OPENCLIP_CUDA=ON but nvcc was not found (set CUDA_PATH or CMAKE_CUDA_COMPILER)")
  endif()
endif()
if(NOT OC_CUDA)
  message(STATUS "CUDA backend: off (OPENCLIP_CUDA=${OPENCLIP_CUDA})")
  return()
endif()

# sm_80 (A100) and sm_90 (H100/H200) as machine code, plus compute_90 PTX that the driver
# compiles for newer cards (Blackwell).
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")

file(GLOB oc_cuda_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/ops/cuda/*.cu ${CMAKE_SOURCE_DIR}/src/ops/cuda/*.cpp)
add_library(openclip_ops_cuda STATIC ${oc_cuda_srcs})
set_target_properties(openclip_ops_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
target_compile_options(openclip_ops_cuda PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${OC_WARN} ${OC_ARCH}>
  $<$<COMPILE_LANGUAGE:CUDA>:-O3 --fmad=false>)  # no FMA contraction: closer to the reference arithmetic
# The backend derives from openclip_ops' Backend (ops/backend.h), and openclip_ops registers
# it: a cycle of two static libraries, which CMake links by repeating them. No cuDNN: the
# convolutions are im2col + cuBLASLt GEMMs (src/ops/cuda/conv_ops.cpp says why).
target_link_libraries(openclip_ops_cuda PUBLIC openclip_core CUDA::cudart CUDA::cublasLt)
target_link_libraries(openclip_ops_cuda PRIVATE openclip_ops)
target_link_libraries(openclip_ops PUBLIC openclip_ops_cuda)
target_compile_definitions(openclip_ops PUBLIC OPENCLIP_HAVE_CUDA=1)

# NCCL for multi-GPU (src/dist/cuda): optional; without it a CUDA build is single-GPU.
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  file(GLOB nccl_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/dist/cuda/nccl*.cpp)
  target_sources(openclip_dist PRIVATE ${nccl_srcs})
  target_include_directories(openclip_dist PRIVATE ${NCCL_INCLUDE_DIR})
  target_link_libraries(openclip_dist PUBLIC CUDA::cudart ${NCCL_LIBRARY})
  target_compile_definitions(openclip_dist PUBLIC OPENCLIP_HAVE_NCCL=1)
else()
  message(STATUS "NCCL not found: the CUDA build is single-GPU")
endif()
