#!/usr/bin/env bash
# test/gpu/prepare.sh BUILD_DIR - on a machine with Kiln built (MLIR, NVRTC),
# writes what test/gpu/run.sh needs into BUILD_DIR/gpu-check:
#
#  - stories260K compiled for cuda:sm_90 (f32: the golden text) and with
#    f16 weights (the tensor-core GEMMs), from $KILN_TEST_MODELS (default
#    ../shared/models);
#  - the benchmark models: `kiln make-model --config llama-110m` and
#    `llama-1b` (random weights, f16), compiled for cuda:sm_90 with f16
#    weights and 512-token steps. About 0.25 and 2.2 GB; set
#    KILN_GPU_CHECK_MODELS to the configs wanted (default "llama-110m
#    llama-1b", empty for none) where that is too much to carry.
#
# KILN_GPU_CHECK_DIR overrides where (run.sh reads it too). Then carry
# BUILD_DIR/bin and BUILD_DIR/gpu-check to the GPU machine.
set -euo pipefail
build=${1:?usage: test/gpu/prepare.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
models=${KILN_TEST_MODELS:-$root/../shared/models}
out=${KILN_GPU_CHECK_DIR:-$build/gpu-check}
mkdir -p "$out"
for dtype in f32 f16; do
  "$build/bin/kiln" compile "$models/stories260K.bin" \
    --tokenizer "$models/tok512.bin" --target cuda:sm_90 \
    $([ "$dtype" = f32 ] || echo --dtype "$dtype") \
    --context 512 -o "$out/stories260K-$dtype.kiln"
done
cp "$models/golden_stories260K_greedy.txt" "$out/"
for config in ${KILN_GPU_CHECK_MODELS-llama-110m llama-1b}; do
  "$build/bin/kiln" make-model --config "$config" --dtype f16 \
    -o "$out/$config-f16.gguf"
  "$build/bin/kiln" compile "$out/$config-f16.gguf" --target cuda:sm_90 \
    --dtype f16 --max-tokens 512 -o "$out/$config-f16.kiln"
  rm "$out/$config-f16.gguf"
done
echo "prepared $out"
