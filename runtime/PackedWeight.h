//===- PackedWeight.h - A packed tensor of an artifact ----------*- C++ -*-===//
//
// Part of Kiln. The manifest's description of one packed tensor (written by
// codegen/WeightPacker.cpp, read by the runtime and `kiln bench`); its JSON
// form is in docs/artifact.md, "Weight entries".
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_PACKEDWEIGHT_H
#define KILN_RUNTIME_PACKEDWEIGHT_H

#include <cstdint>
#include <string>

namespace kiln::runtime {

/// One packed tensor of a step library's weights section (docs/artifact.md,
/// "Weight entries"): where it is and how the code generator laid it out.
struct PackedWeight {
  std::string name;      ///< the weight, or "a+b+c" for a concatenation
  std::string layout;    ///< "panels" (a GEMM's) or "rows" (row-major)
  int64_t rows = 0;      ///< N (a GEMM weight [N, K]), or the table's rows
  int64_t cols = 0;      ///< K, or the row length
  int64_t panelRows = 0; ///< nr: rows per panel (layout "panels")
  std::string type;      ///< f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k
  std::string pairs;     ///< bf16 panels: "lane" or "k" pairs, else empty
  int64_t offset = 0;    ///< bytes into the weights section
  int64_t bytes = 0;     ///< its size in the section, padding included
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_PACKEDWEIGHT_H
