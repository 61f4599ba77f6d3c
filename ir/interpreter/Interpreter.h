//===- Interpreter.h - The reference interpreter of kiln IR -----*- C++ -*-===//
//
// Part of Kiln. Executes kiln modules op by op in plain C++, in float or
// double: the oracle every pass and kernel is checked against. It knows every
// kiln op, fused and unfused, plus the few upstream ops small tests use
// (arith.constant, tensor.cast, func.return). Readable first, fast never.
//
// Errors at run time (an unsupported op, a token id outside the vocabulary,
// shapes that disagree once dynamic sizes are known, a stale cache value)
// throw InterpreterError naming the op and its location.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_INTERPRETER_INTERPRETER_H
#define KILN_IR_INTERPRETER_INTERPRETER_H

#include "ir/WeightProvider.h"
#include "ir/interpreter/ReferenceKVCache.h"
#include "runtime/StepBatch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <stdexcept>
#include <variant>
#include <vector>

namespace kiln {

class InterpreterError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A dense row-major tensor. Weights are borrowed (`borrowed` points at the
/// provider's floats and `data` is empty) so they are never copied.
template <typename T> struct Tensor {
  std::vector<int64_t> shape;
  std::vector<T> data;
  const float *borrowed = nullptr;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  T at(int64_t i) const { return borrowed ? T(borrowed[i]) : data[i]; }
};

/// A KV cache value: the cache and which of its versions (appends) this SSA
/// value denotes, so that reading an outdated value is caught.
template <typename T> struct CacheValue {
  ReferenceKVCache<T> *cache = nullptr;
  int64_t version = 0;
};

template <typename T>
using RuntimeValue =
    std::variant<Tensor<T>, std::vector<int32_t>, CacheValue<T>>;

template <typename T> class Interpreter {
public:
  explicit Interpreter(WeightProvider &weights) : weights(weights) {}

  /// Runs `func` on `args` (tensors for float tensors, int vectors for i32
  /// vectors, a CacheValue for the cache) and returns its results.
  std::vector<RuntimeValue<T>> call(mlir::func::FuncOp func,
                                    std::vector<RuntimeValue<T>> args);

  /// Runs one step of a `kiln.step` function (docs/step-contract.md) and
  /// returns the logits [R, V]; the cache is updated in place.
  Tensor<T> step(mlir::func::FuncOp step, const runtime::StepBatch &batch,
                 ReferenceKVCache<T> &cache);

private:
  WeightProvider &weights;
  /// Bumped by every kv_append so stale cache values are detected.
  int64_t cacheVersion = 0;
};

/// The `kiln.step` function of a module (or the function named `step`);
/// throws InterpreterError if there is none.
mlir::func::FuncOp findStepFunction(mlir::ModuleOp module);

extern template class Interpreter<float>;
extern template class Interpreter<double>;

} // namespace kiln

#endif // KILN_IR_INTERPRETER_INTERPRETER_H
