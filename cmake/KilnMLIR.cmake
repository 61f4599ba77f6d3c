# Finds Debian's LLVM/MLIR 19 and sets up TableGen.
#
# Link mode: Kiln links the shared libMLIR.so (imported target `MLIR`) and
# libLLVM.so, never the static MLIR component libraries. Mixing the two modes
# gives duplicate global registries (options, dialects) at run time.

if(NOT MLIR_DIR AND EXISTS /usr/lib/llvm-19/lib/cmake/mlir)
  set(MLIR_DIR /usr/lib/llvm-19/lib/cmake/mlir)
endif()
find_package(MLIR REQUIRED CONFIG)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "Kiln needs LLVM/MLIR 19; found ${LLVM_PACKAGE_VERSION} "
                      "at ${MLIR_DIR}. Run scripts/setup, or pass "
                      "-DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir.")
endif()
message(STATUS "Kiln: MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)

set(KILN_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}")

# Interface library carrying MLIR's headers (as system headers) and libraries.
add_library(kiln_mlir_deps INTERFACE)
target_include_directories(kiln_mlir_deps SYSTEM INTERFACE
  ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
target_compile_definitions(kiln_mlir_deps INTERFACE ${LLVM_DEFINITIONS})
target_link_libraries(kiln_mlir_deps INTERFACE MLIR LLVM)

# kiln_tablegen(<target> <td-file> <out>=<flags>...): runs mlir-tblgen on a .td
# file of the current folder and adds a target other targets can depend on.
function(kiln_tablegen target td)
  set(LLVM_TARGET_DEFINITIONS ${td})
  foreach(spec ${ARGN})
    string(REGEX MATCH "^([^=]+)=(.*)$" _ "${spec}")
    set(out "${CMAKE_MATCH_1}")
    set(flags "${CMAKE_MATCH_2}")
    separate_arguments(flags UNIX_COMMAND "${flags}")
    mlir_tablegen(${out} ${flags})
  endforeach()
  add_public_tablegen_target(${target})
endfunction()

# Fails the configure step if `target` (transitively) links MLIR or LLVM. The
# runtime must ship without them (docs/architecture.md).
function(kiln_check_runtime_is_mlir_free target)
  set(seen "")
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue t)
    if(t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    if(t MATCHES "^(MLIR|LLVM|kiln_mlir_deps|kiln_ir|kiln_passes)")
      message(FATAL_ERROR "${target} depends on ${t}: the runtime must not depend on MLIR/LLVM")
    endif()
    if(TARGET ${t})
      get_target_property(libs ${t} LINK_LIBRARIES)
      get_target_property(ilibs ${t} INTERFACE_LINK_LIBRARIES)
      foreach(l ${libs} ${ilibs})
        if(l AND NOT l MATCHES "NOTFOUND$")
          list(APPEND queue ${l})
        endif()
      endforeach()
    endif()
  endwhile()
endfunction()
