//===- EmitText.h - Text the step emitters write ----------------*- C++ -*-===//
//
// Part of Kiln. How the CPU and CUDA emitters spell values in generated
// source and in their messages: integers, exact float literals, ops with
// their locations, types.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_EMITTEXT_H
#define KILN_CODEGEN_EMITTEXT_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kiln::codegen {

inline std::string str(int64_t value) { return std::to_string(value); }
inline std::string boolean(bool value) { return value ? "true" : "false"; }

/// A float as an exact C++ literal (hexadecimal).
inline std::string floatLiteral(float value) {
  if (std::isinf(value))
    return value > 0 ? "INFINITY" : "-INFINITY";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%af", double(value));
  return buffer;
}

/// "kiln.rope at loc(...)": an op as messages and comments name it.
inline std::string describe(mlir::Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName() << " at " << op->getLoc();
  return text;
}

inline std::string typeString(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// `items` joined by `separator`.
inline std::string join(const std::vector<std::string> &items,
                        const std::string &separator) {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : separator) + item;
  return text;
}

} // namespace kiln::codegen

#endif // KILN_CODEGEN_EMITTEXT_H
