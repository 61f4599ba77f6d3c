//===- KilnDialect.td - The kiln dialect -------------------*- tablegen -*-===//
//
// Part of Kiln. The dialect definition shared by types, attributes and ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNDIALECT_TD
#define KILN_IR_KILNDIALECT_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "graph-level operations of decoder-only Transformers";
  let description = [{
    The `kiln` dialect describes one *step* of a decoder-only Transformer
    (Llama 2/3, Mistral, Qwen2 and relatives) at graph level: embedding
    lookups, matmuls against named weights, norms, rotary embeddings,
    attention against an explicit KV cache, and the fused forms of these that
    Kiln's fusion passes produce.

    Activations are ranked tensors whose leading dimension is the dynamic
    token dimension `T` of the step. Weights are never inlined: a module
    declares them with `kiln.weight_decl` (name, shape, element type) and
    resolves them through the `kiln.weights_source` attribute on the module.
    The calling convention of a step function is stated in
    `docs/step-contract.md` and checked by the `kiln.step` attribute.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the unit attribute marking a func.func as a step function.
    static constexpr ::llvm::StringLiteral kStepAttrName = "kiln.step";
    /// Name of the module attribute naming the weights file.
    static constexpr ::llvm::StringLiteral kWeightsSourceAttrName =
        "kiln.weights_source";
    /// Name of the integer attribute on a step function giving the context
    /// length the model declares (positions it was trained for).
    static constexpr ::llvm::StringLiteral kContextLengthAttrName =
        "kiln.context_length";
    /// Name of the attribute that turns a missed fusion into an error.
    static constexpr ::llvm::StringLiteral kFuseRequiredAttrName =
        "kiln.fuse_required";

    /// Called from initialize(); defined with the types and attributes.
    void registerTypes();
    void registerAttributes();
  }];
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_IR_KILNDIALECT_TD
