//===- Passes.td - Kiln's passes ---------------------------*- tablegen -*-===//
//
// Part of Kiln. Passes are grouped by pipeline phase under banners,
// alphabetical within a group; one pass per file, named like the pass.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Decomposition
//===----------------------------------------------------------------------===//

def DecomposeAttention : Pass<"kiln-decompose-attention"> {
  let summary = "Expand fused attention into its unfused pieces";
  let description = [{
    Rewrites every `kiln.attention` into the chain it is defined as:
    `kiln.kv_read`, `kiln.attention_scores`, `kiln.scale`,
    `kiln.attention_mask`, `kiln.softmax` and `kiln.attention_output`. The
    fused op stays analysable: executors without a fused kernel, and tests
    that compare fused against unfused results, use this expansion.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif // KILN_PASSES_PASSES_TD
