//===- DialectTest.cpp - C++ API of the kiln dialect ----------------------===//
//
// Part of Kiln's unit tests: types, builders, verifiers, folders and the
// decompose-attention pass, driven from C++ as importers and passes use them.
//
//===----------------------------------------------------------------------===//

#include "DiagnosticCapture.h"

#include "ir/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace mlir;
using kiln::test::DiagnosticCapture;

namespace {

class KilnDialectTest : public ::testing::Test {
protected:
  KilnDialectTest() {
    context.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  }

  Type parse(StringRef text) { return parseType(text, &context); }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type element = {}) {
    return RankedTensorType::get(shape,
                                 element ? element : builder.getF32Type());
  }

  /// A function with one block whose arguments have `argTypes`; the builder
  /// is left at its start.
  func::FuncOp makeFunction(ArrayRef<Type> argTypes) {
    builder.setInsertionPointToEnd(module->getBody());
    auto func = builder.create<func::FuncOp>(
        loc, "f", builder.getFunctionType(argTypes, {}));
    Block *body = func.addEntryBlock();
    builder.setInsertionPointToStart(body);
    return func;
  }

  MLIRContext context;
  OpBuilder builder{&context};
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
};

TEST_F(KilnDialectTest, BlockQuantizedTypesDescribeGGUFBlocks) {
  auto q8 =
      kiln::getBlockQuantizedElementType(parse("tensor<4x64x!kiln.q8_0>"));
  auto q4 = kiln::getBlockQuantizedElementType(parse("!kiln.q4_0"));
  ASSERT_TRUE(q8);
  ASSERT_TRUE(q4);
  EXPECT_EQ(q8.getBlockSize(), 32);
  EXPECT_EQ(q8.getBlockBytes(), 34);
  EXPECT_EQ(q4.getBlockSize(), 32);
  EXPECT_EQ(q4.getBlockBytes(), 18);
  EXPECT_FALSE(kiln::getBlockQuantizedElementType(tensor({4, 64})));
}

TEST_F(KilnDialectTest, KVCacheTypeRoundTripsAndRejectsBadParameters) {
  auto cache =
      kiln::KVCacheType::get(&context, 32, 8, 128, builder.getF16Type());
  std::string text;
  llvm::raw_string_ostream os(text);
  Type(cache).print(os);
  EXPECT_EQ(os.str(),
            "!kiln.kv_cache<layers = 32, kv_heads = 8, head_dim = 128, f16>");
  EXPECT_EQ(parse(text), cache);

  DiagnosticCapture diags(context);
  auto bad = kiln::KVCacheType::getChecked(
      [&] { return emitError(loc); }, &context, int64_t(32), int64_t(8),
      int64_t(0), Type(builder.getF32Type()));
  EXPECT_FALSE(bad);
  EXPECT_NE(diags.str().find("head_dim must be positive"), std::string::npos)
      << diags.str();
}

TEST_F(KilnDialectTest, MatmulVerifierNamesTheDisagreeingDimensions) {
  func::FuncOp func =
      makeFunction({tensor({ShapedType::kDynamic, 64}), tensor({96, 32})});
  auto good = builder.create<kiln::MatmulOp>(
      loc, tensor({ShapedType::kDynamic, 96}), func.getArgument(0),
      func.getArgument(0), Value());
  (void)good;

  // x [?, 64] · w [96, 32]ᵀ: K disagrees.
  auto bad = builder.create<kiln::MatmulOp>(
      loc, tensor({ShapedType::kDynamic, 96}), func.getArgument(0),
      func.getArgument(1), Value());
  DiagnosticCapture diags(context);
  EXPECT_TRUE(failed(verify(bad)));
  EXPECT_NE(diags.str().find("inner dimensions disagree: input [M, K] has K = "
                             "64 but weight [N, K] has K = 32"),
            std::string::npos)
      << diags.str();
}

TEST_F(KilnDialectTest, WeightReferencesMustMatchTheirDeclaration) {
  builder.setInsertionPointToEnd(module->getBody());
  builder.create<kiln::WeightDeclOp>(loc, StringRef("w"), tensor({96, 64}));
  func::FuncOp func = makeFunction({});
  auto ref = builder.create<kiln::WeightOp>(
      loc, tensor({96, 64}), FlatSymbolRefAttr::get(&context, "w"));
  builder.create<func::ReturnOp>(loc);
  EXPECT_TRUE(succeeded(verify(*module)));

  ref.getResult().setType(tensor({96, 32}));
  DiagnosticCapture diags(context);
  EXPECT_TRUE(failed(verify(*module)));
  EXPECT_NE(diags.str().find("weight @w is declared as 'tensor<96x64xf32>' but "
                             "used as 'tensor<96x32xf32>'"),
            std::string::npos)
      << diags.str();
  (void)func;
}

TEST_F(KilnDialectTest, FoldersSimplifyWhileBuilding) {
  func::FuncOp func = makeFunction({tensor({ShapedType::kDynamic, 8})});
  Value x = func.getArgument(0);

  // scale(x, 1) folds to x.
  Value same = builder.createOrFold<kiln::ScaleOp>(
      loc, x.getType(), x, builder.getF64FloatAttr(1.0));
  EXPECT_EQ(same, x);

  // A transpose of a transpose back is x.
  auto swapped =
      RankedTensorType::get({8, ShapedType::kDynamic}, builder.getF32Type());
  Value t = builder.create<kiln::TransposeOp>(
      loc, swapped, x, builder.getDenseI64ArrayAttr({1, 0}));
  Value back = builder.createOrFold<kiln::TransposeOp>(
      loc, x.getType(), t, builder.getDenseI64ArrayAttr({1, 0}));
  EXPECT_EQ(back, x);
}

TEST_F(KilnDialectTest, DecomposeAttentionExpandsEveryFusedAttention) {
  const char *source = R"mlir(
    func.func @f(%q: tensor<?x8x8xf32>,
                 %c: !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 8, f32>,
                 %s: tensor<?xi32>) -> (tensor<?x8x8xf32>, tensor<?x8x8xf32>) {
      %a = kiln.attention %q, %c[0] seqs %s positions %s scale = 0.5
          : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 8, f32>, tensor<?xi32>
      %b = kiln.attention %q, %c[1] seqs %s positions %s scale = 0.5 window = 2
          : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 8, f32>, tensor<?xi32>
      return %a, %b : tensor<?x8x8xf32>, tensor<?x8x8xf32>
    })mlir";
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(parsed);

  PassManager pm(&context);
  pm.addPass(kiln::createDecomposeAttention());
  ASSERT_TRUE(succeeded(pm.run(*parsed)));

  int fused = 0, reads = 0, masks = 0, windowed = 0;
  parsed->walk([&](Operation *op) {
    fused += isa<kiln::AttentionOp>(op);
    reads += isa<kiln::KVReadOp>(op);
    if (auto mask = dyn_cast<kiln::AttentionMaskOp>(op)) {
      ++masks;
      windowed += mask.getWindow().has_value();
    }
  });
  EXPECT_EQ(fused, 0);
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(masks, 2);
  EXPECT_EQ(windowed, 1);
  EXPECT_TRUE(succeeded(verify(*parsed)));
}

} // namespace

namespace {

// Every registered kiln op has a case in test/ir/roundtrip.mlir, so a new op
// cannot land without its round-trip test.
TEST(KilnDialectCoverage, EveryOpHasARoundTripTest) {
  std::ifstream file(KILN_SOURCE_DIR "/test/ir/roundtrip.mlir");
  ASSERT_TRUE(file) << "cannot read test/ir/roundtrip.mlir";
  std::stringstream text;
  text << file.rdbuf();
  std::string roundtrip = text.str();

  MLIRContext context;
  context.loadDialect<kiln::KilnDialect>();
  int ops = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "kiln")
      continue;
    ++ops;
    std::string spelled = name.getStringRef().str() + " ";
    EXPECT_NE(roundtrip.find(spelled), std::string::npos)
        << name.getStringRef().str() << " has no case in roundtrip.mlir";
  }
  EXPECT_GE(ops, 27);
}

} // namespace
