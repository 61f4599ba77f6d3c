# Compiler and linker settings shared by every Kiln target.

# Warnings are on everywhere; CI makes them errors (-DKILN_WERROR=ON). LLVM and
# MLIR headers are included as system headers (KilnMLIR.cmake), so their own
# warnings never fail Kiln's build.
add_compile_options(-Wall -Wextra -Wno-unused-parameter)
if(KILN_WERROR)
  add_compile_options(-Werror)
endif()

# lld links MLIR-heavy binaries several times faster than GNU ld.
include(CheckLinkerFlag)
check_linker_flag(CXX "-fuse-ld=lld" KILN_HAVE_LLD)
if(KILN_HAVE_LLD)
  add_link_options(-fuse-ld=lld)
endif()
