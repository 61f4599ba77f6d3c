//===- InterpreterExecutor.h - The reference interpreter as executor -*- C++
//-*-//
//
// Part of Kiln's command line. `kiln run --interpret` (and .mlir modules,
// --fusion experiments) run the engine's steps in the reference
// interpreter. Its KV cache grows per sequence as written, so room is
// limited only by the context: reserve() checks that, and the usage is
// reported as no blocks at all.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_INTERPRETEREXECUTOR_H
#define KILN_TOOLS_KILN_INTERPRETEREXECUTOR_H

#include "codegen/driver/LoadedModel.h"
#include "ir/KilnOps.h"
#include "ir/interpreter/Interpreter.h"
#include "runtime/engine/StepExecutor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

class InterpreterExecutor : public runtime::StepExecutor {
public:
  /// Steps through `stepFunc` of `model` (which must outlive this), for up
  /// to `sequences` sequences of `contextLength` positions.
  InterpreterExecutor(const LoadedModel &model, mlir::func::FuncOp stepFunc,
                      int32_t sequences, int32_t contextLength)
      : stepFunc(stepFunc), interpreter(*model.weights),
        cache(llvm::cast<KVCacheType>(stepFunc.getArgumentTypes().back())),
        stepLimits{int32_t(model.vocabSize), sequences, contextLength} {}

  runtime::StepLimits limits() const override { return stepLimits; }
  /// The interpreter's cost grows with the tokens of a step, not per
  /// step: chunks of a few hundred keep the plan's granularity useful.
  int32_t preferredStepTokens() const override { return 256; }
  std::vector<float> step(const runtime::StepBatch &batch) override {
    return std::move(interpreter.step(stepFunc, batch, cache).data);
  }
  bool reserve(int32_t, int64_t, int64_t end) override {
    return end <= stepLimits.contextLength;
  }
  void release(int32_t seq) override { cache.release(seq); }
  runtime::KVCacheUsage usage() const override { return {}; }

private:
  mlir::func::FuncOp stepFunc;
  Interpreter<float> interpreter;
  ReferenceKVCache<float> cache;
  runtime::StepLimits stepLimits;
};

} // namespace kiln

#endif // KILN_TOOLS_KILN_INTERPRETEREXECUTOR_H
