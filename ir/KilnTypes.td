//===- KilnTypes.td - Types of the kiln dialect ------------*- tablegen -*-===//
//
// Part of Kiln. Block-quantized weight element types and the KV cache type.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNTYPES_TD
#define KILN_IR_KILNTYPES_TD

include "ir/KilnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

//===----------------------------------------------------------------------===//
// BlockQuantizedTypeInterface
//===----------------------------------------------------------------------===//

def Kiln_BlockQuantizedTypeInterface
    : TypeInterface<"BlockQuantizedTypeInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An element type whose values are stored in fixed-size blocks along the
    last dimension of a tensor, each block carrying its own scale (the GGUF
    block formats). A tensor of such a type must have a last dimension that is
    a multiple of the block size, and may appear only as a weight.
  }];
  let methods = [
    InterfaceMethod<"Number of weights in one block.", "int64_t",
                    "getBlockSize">,
    InterfaceMethod<"Number of bytes one block occupies in a file.",
                    "int64_t", "getBlockBytes">,
  ];
}

class Kiln_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Kiln_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

//===----------------------------------------------------------------------===//
// Q8_0Type
//===----------------------------------------------------------------------===//

def Kiln_Q8_0Type : Kiln_Type<"Q8_0", "q8_0",
    [DeclareTypeInterfaceMethods<Kiln_BlockQuantizedTypeInterface>]> {
  let summary = "GGUF Q8_0 block-quantized weight element type";
  let description = [{
    Blocks of 32 weights along the last dimension. A block stores one f16
    scale `d` and 32 signed 8-bit values `q[i]` (34 bytes); weight
    `w[i] = d * q[i]`.

    ```mlir
    kiln.weight_decl @"blk.0.attn_q.weight" : tensor<4096x4096x!kiln.q8_0>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Q4_0Type
//===----------------------------------------------------------------------===//

def Kiln_Q4_0Type : Kiln_Type<"Q4_0", "q4_0",
    [DeclareTypeInterfaceMethods<Kiln_BlockQuantizedTypeInterface>]> {
  let summary = "GGUF Q4_0 block-quantized weight element type";
  let description = [{
    Blocks of 32 weights along the last dimension. A block stores one f16
    scale `d` and 32 unsigned 4-bit values packed two per byte (18 bytes):
    byte `j` holds `q[j]` in its low nibble and `q[j + 16]` in its high
    nibble; weight `w[i] = d * (q[i] - 8)`.

    ```mlir
    kiln.weight_decl @"blk.0.ffn_up.weight" : tensor<11008x4096x!kiln.q4_0>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Q4_KType, Q5_KType, Q6_KType
//===----------------------------------------------------------------------===//

def Kiln_Q4_KType : Kiln_Type<"Q4_K", "q4_k",
    [DeclareTypeInterfaceMethods<Kiln_BlockQuantizedTypeInterface>]> {
  let summary = "GGUF Q4_K super-block-quantized weight element type";
  let description = [{
    Super-blocks of 256 weights along the last dimension, as 8 sub-blocks of
    32 (144 bytes): an f16 scale `d`, an f16 `dmin`, 12 bytes packing a 6-bit
    scale `sc[j]` and 6-bit min `m[j]` per sub-block, then 128 bytes of
    unsigned 4-bit values `q`. Weight `i` of sub-block `j` is
    `w = d * sc[j] * q[i] - dmin * m[j]`. Byte `l` of the 32-byte group `c`
    holds sub-block `2c`'s `q[l]` in its low nibble and sub-block `2c + 1`'s
    in its high nibble.

    ```mlir
    kiln.weight_decl @"blk.0.ffn_up.weight" : tensor<14336x4096x!kiln.q4_k>
    ```
  }];
}

def Kiln_Q5_KType : Kiln_Type<"Q5_K", "q5_k",
    [DeclareTypeInterfaceMethods<Kiln_BlockQuantizedTypeInterface>]> {
  let summary = "GGUF Q5_K super-block-quantized weight element type";
  let description = [{
    Q4_K with a fifth bit per weight (176 bytes a super-block of 256): `d`,
    `dmin`, the 12 bytes of 6-bit scales and mins, 32 bytes of high bits
    (bit `j` of byte `l` is the high bit of weight `l` of sub-block `j`),
    then Q4_K's 128 nibble bytes. With `q` in 0..31,
    `w = d * sc[j] * q[i] - dmin * m[j]`.

    ```mlir
    kiln.weight_decl @"blk.0.attn_q.weight" : tensor<4096x4096x!kiln.q5_k>
    ```
  }];
}

def Kiln_Q6_KType : Kiln_Type<"Q6_K", "q6_k",
    [DeclareTypeInterfaceMethods<Kiln_BlockQuantizedTypeInterface>]> {
  let summary = "GGUF Q6_K super-block-quantized weight element type";
  let description = [{
    Super-blocks of 256 weights along the last dimension, as 16 sub-blocks
    of 16 (210 bytes): 128 bytes of the low 4 bits of each `q`, 64 bytes of
    their high 2 bits, 16 signed 8-bit scales `sc[j]`, then an f16 `d`. With
    `q` in 0..63, weight `i` of sub-block `j` is `w = d * sc[j] * (q[i] - 32)`.

    ```mlir
    kiln.weight_decl @"output.weight" : tensor<128256x4096x!kiln.q6_k>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// KVCacheType
//===----------------------------------------------------------------------===//

def Kiln_KVCacheType : Kiln_Type<"KVCache", "kv_cache"> {
  let summary = "key/value cache of all sequences in flight";
  let description = [{
    An opaque handle to the keys and values that attention layers have
    written, addressed by (layer, sequence id, position). The type fixes what
    every entry looks like (number of layers, key/value heads per layer, head
    size, storage element type) but not how entries are laid out: a contiguous
    per-sequence buffer and a paged block table are both valid
    implementations, chosen by the runtime. The cache is threaded through a
    step as an SSA value: `kiln.kv_append` returns the updated cache.

    ```mlir
    !kiln.kv_cache<layers = 32, kv_heads = 8, head_dim = 128, f16>
    ```
  }];
  let parameters = (ins "int64_t":$numLayers, "int64_t":$numKvHeads,
                        "int64_t":$headDim, "::mlir::Type":$elementType);
  let assemblyFormat = [{
    `<` `layers` `=` $numLayers `,` `kv_heads` `=` $numKvHeads `,`
        `head_dim` `=` $headDim `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
}

#endif // KILN_IR_KILNTYPES_TD
