//===- StepContractTest.cpp - The step function signature ----------------===//
//
// Part of Kiln's unit tests.
//
//===----------------------------------------------------------------------===//

#include "DiagnosticCapture.h"

#include "ir/KilnOps.h"
#include "ir/StepContract.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using kiln::test::DiagnosticCapture;

namespace {

class StepContractTest : public ::testing::Test {
protected:
  StepContractTest() {
    context.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  }

  /// Parses a module holding one function declaration with `signature`, not
  /// marked `kiln.step` (so parsing succeeds) and returns that function.
  func::FuncOp declare(StringRef signature) {
    std::string source = ("func.func private @step" + signature).str();
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return {};
    return cast<func::FuncOp>(module->getBody()->front());
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

constexpr const char *kCache =
    "!kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>";

TEST_F(StepContractTest, AcceptsTheContractSignature) {
  std::string sig = std::string("(tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, "
                                "tensor<?xi32>, ") +
                    kCache + ") -> (tensor<?x512xf32>, " + kCache + ")";
  func::FuncOp func = declare(sig);
  ASSERT_TRUE(func);
  EXPECT_TRUE(succeeded(kiln::verifyStepFunction(func)));
}

TEST_F(StepContractTest, RejectsAStaticBatchNamingTheArgument) {
  std::string sig = std::string("(tensor<?xi32>, tensor<1xi32>, tensor<?xi32>, "
                                "tensor<?xi32>, ") +
                    kCache + ") -> (tensor<?x512xf32>, " + kCache + ")";
  func::FuncOp func = declare(sig);
  ASSERT_TRUE(func);
  DiagnosticCapture diags(context);
  EXPECT_TRUE(failed(kiln::verifyStepFunction(func)));
  EXPECT_NE(diags.str().find("argument #1 (positions) must be tensor<?xi32>"),
            std::string::npos)
      << diags.str();
}

TEST_F(StepContractTest, ArgumentNamesFollowTheirPositions) {
  EXPECT_EQ(kiln::getStepArgName(kiln::StepArg::Tokens), "tokens");
  EXPECT_EQ(kiln::getStepArgName(kiln::StepArg::Positions), "positions");
  EXPECT_EQ(kiln::getStepArgName(kiln::StepArg::SeqIds), "seq_ids");
  EXPECT_EQ(kiln::getStepArgName(kiln::StepArg::LogitRows), "logit_rows");
  EXPECT_EQ(kiln::getStepArgName(kiln::StepArg::Cache), "cache");
}

} // namespace
