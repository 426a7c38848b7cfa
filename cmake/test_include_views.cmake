# ctest include_views_enforced (cmake -P): the layering (CONTRIBUTING.md) as a build rule.
# Every module compiles with its include view (CMakeLists.txt, oc_include_view): the headers of
# its own module and of the modules it links, transitively. Checked with each module's own
# include directories (its compile flags):
#  1. which modules' headers the compiler finds (__has_include of one header per module) is
#     exactly the module itself and its link closure, the rule scripts/include_direction.py
#     checks on the sources;
#  2. a file of `model` that includes a header of `train` (above it) fails to compile with
#     "No such file or directory", while one that includes model's and ops' headers compiles.
# Inputs: CXX, SRC (source tree), SCRATCH, MODULES (a|b|...), and for each module M:
# INC_M (its include directories, |-separated) and DEPS_M (the modules it links directly).
cmake_minimum_required(VERSION 3.20)  # IN_LIST, POP_FRONT
string(REPLACE "|" ";" modules "${MODULES}")
file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH})

function(include_flags m out)
  string(REPLACE "|" ";" dirs "${INC_${m}}")
  set(f)
  foreach(d ${dirs})
    list(APPEND f "-I${d}")
  endforeach()
  if(NOT f)
    message(FATAL_ERROR "no include directories given for module ${m} (INC_${m})")
  endif()
  set(${out} ${f} PARENT_SCOPE)
endfunction()

# {m} and every module it links, transitively.
function(link_closure m out)
  set(seen ${m})
  set(todo ${m})
  while(todo)
    list(POP_FRONT todo x)
    string(REPLACE "|" ";" deps "${DEPS_${x}}")
    foreach(d ${deps})
      if(NOT d IN_LIST seen)
        list(APPEND seen ${d})
        list(APPEND todo ${d})
      endif()
    endforeach()
  endwhile()
  list(SORT seen)
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# 1. One probe: for each module, "sees <module>" when one of its headers is found.
set(probe "")
foreach(m ${modules})
  file(GLOB headers RELATIVE ${SRC}/src ${SRC}/src/${m}/*.h)
  list(SORT headers)
  list(LENGTH headers n)
  if(n EQUAL 0)
    message(FATAL_ERROR "module ${m} has no header in src/${m}/")
  endif()
  list(GET headers 0 h)
  string(APPEND probe "#if __has_include(\"${h}\")\nsees ${m}\n#endif\n")
endforeach()
file(WRITE ${SCRATCH}/probe.cpp "${probe}")
set(wrong "")
foreach(m ${modules})
  include_flags(${m} flags)
  execute_process(COMMAND ${CXX} -std=c++20 -E -P ${SCRATCH}/probe.cpp ${flags}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "preprocessing the probe with ${m}'s flags failed (${rc}):\n${err}")
  endif()
  string(REGEX MATCHALL "sees [a-z_]+" seen "${out}")
  list(TRANSFORM seen REPLACE "^sees " "")
  list(SORT seen)
  link_closure(${m} expected)
  if(NOT seen STREQUAL expected)
    string(APPEND wrong "  ${m} sees {${seen}}, expected {${expected}}\n")
  endif()
endforeach()
if(wrong)
  message(FATAL_ERROR "include views do not match the module graph:\n${wrong}")
endif()
list(LENGTH modules n)
message(STATUS "include views: each of ${n} modules sees exactly itself and what it links")

# 2. A real compile each way, with model's flags.
if(NOT "model" IN_LIST modules OR NOT "train" IN_LIST modules)
  message(FATAL_ERROR "modules model and train expected")
endif()
include_flags(model flags)
file(WRITE ${SCRATCH}/upward.cpp "#include \"train/args.h\"  // train is above model\nint main() { return 0; }\n")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only ${SCRATCH}/upward.cpp ${flags}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCH "[^\n]*train/args.h: No such file or directory" line "${err}")
if(rc EQUAL 0 OR NOT line)
  message(FATAL_ERROR "model including train/args.h: expected 'No such file or directory', got (${rc}):\n${err}")
endif()
message(STATUS "upward include refused: ${line}")
file(WRITE ${SCRATCH}/downward.cpp "#include \"model/clip.h\"\n#include \"ops/backend.h\"\nint main() { return 0; }\n")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only ${SCRATCH}/downward.cpp ${flags}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "model including its own and ops' headers failed to compile (${rc}):\n${err}")
endif()
message(STATUS "downward includes compile")
