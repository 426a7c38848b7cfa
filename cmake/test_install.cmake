# ctest install_package (cmake -P): install the build into a scratch prefix, check what landed
# there, build examples/classify.cpp against it as a downstream project would (a fresh
# configure with find_package(openclip CONFIG), and a plain compile with pkg-config), and run
# both with the installed data files only.
# Inputs: BUILD_DIR SOURCE_DIR SCRATCH GENERATOR CXX LIBDIR, PYTHON (when the module is built).
function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${SCRATCH} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

set(P ${SCRATCH}/prefix)
file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH})  # the working directory: not the build tree, which holds a module too
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${P})
foreach(f bin/openclip include/openclip/openclip.h ${LIBDIR}/libopenclip_core.a ${LIBDIR}/libopenclip_model.a
          ${LIBDIR}/libopenclip_configs.a ${LIBDIR}/cmake/openclip/openclipConfig.cmake
          ${LIBDIR}/cmake/openclip/openclipTargets.cmake ${LIBDIR}/pkgconfig/openclip.pc
          share/openclip/bpe_simple_vocab_16e6.txt.gz share/openclip/configs/models/ViT-B-32.json
          share/openclip/configs/models/test-tiny.json)
  if(NOT EXISTS ${P}/${f})
    message(FATAL_ERROR "not installed: ${P}/${f}")
  endif()
endforeach()
# Internal headers stay private: the installed targets must not point into the source tree.
file(READ ${P}/${LIBDIR}/cmake/openclip/openclipTargets.cmake targets)
string(FIND "${targets}" "${SOURCE_DIR}" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "openclipTargets.cmake names the source tree ${SOURCE_DIR}")
endif()

# Only the installed data: the example and the installed CLI read the vocabulary from there.
set(ENV{OPENCLIP_DATA_DIR} ${P}/share/openclip)
set(image ${SOURCE_DIR}/tests/fuzz/corpus/fuzz_image/tiny.png)
# Through sh: execute_process drops the empty argument ("" weights: a random test-tiny).
set(args "test-tiny '' '${image}' 'a diagram' 'a dog' 'a cat'")

# 1. CMake: fresh configure of examples/ with find_package(openclip CONFIG).
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${SCRATCH}/cmake-build -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${P})
run(${CMAKE_COMMAND} --build ${SCRATCH}/cmake-build)
run(sh -c "'${SCRATCH}/cmake-build/classify' ${args}")
set(cmake_out "${out}")
if(NOT cmake_out MATCHES "Label probs: [0-9.]+ [0-9.]+ [0-9.]+")
  message(FATAL_ERROR "example (CMake build) printed no probabilities:\n${cmake_out}")
endif()

# 2. pkg-config: one compile-and-link command line.
set(ENV{PKG_CONFIG_PATH} ${P}/${LIBDIR}/pkgconfig)
run(pkg-config --cflags --libs openclip)
string(STRIP "${out}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${CXX} -std=c++20 -O1 ${SOURCE_DIR}/examples/classify.cpp -o ${SCRATCH}/classify_pc ${flags})
run(sh -c "'${SCRATCH}/classify_pc' ${args}")
if(NOT out STREQUAL cmake_out)
  message(FATAL_ERROR "pkg-config build printed\n${out}\nCMake build printed\n${cmake_out}")
endif()

# 3. The installed CLI runs and finds the installed vocabulary.
run(${P}/bin/openclip info --json)
if(NOT out MATCHES "\"vocab\": *\"${P}/share/openclip/bpe_simple_vocab_16e6.txt.gz\"")
  message(FATAL_ERROR "the installed CLI does not use the installed vocabulary:\n${out}")
endif()

# 4. The installed Python module imports and tokenizes with the installed vocabulary.
if(PYTHON)
  # The package openclip_cpp/ (its __init__.py and the extension _core*.so) under dist-packages.
  file(GLOB module ${P}/lib/python*/dist-packages/openclip_cpp/_core*.so)
  if(NOT module)
    message(FATAL_ERROR "the Python module was built but not installed under ${P}/lib/python*/dist-packages/openclip_cpp")
  endif()
  get_filename_component(pkgdir ${module} DIRECTORY)
  get_filename_component(pydir ${pkgdir} DIRECTORY)
  set(ENV{PYTHONPATH} ${pydir})
  run(${PYTHON} -c "import openclip_cpp as oc\nprint(oc.__file__, oc.tokenize(['a dog'])[0, :4].tolist())")
  if(NOT out MATCHES "^${pydir}/openclip_cpp/__init__.py.*\\[49406, 320, 1929, 49407\\]")
    message(FATAL_ERROR "installed openclip_cpp: ${out}")
  endif()
endif()
message(STATUS "install_package: ${cmake_out}")
