#!/usr/bin/env bash
# test/gpu/prepare.sh BUILD_DIR - on a machine with Kiln built (MLIR, NVRTC),
# writes what test/gpu/run.sh needs into BUILD_DIR/gpu-check: stories260K
# compiled for cuda:sm_90 (f32: the golden text) and with f16 weights (the
# tensor-core GEMMs), from $KILN_TEST_MODELS (default ../shared/models).
# Then carry BUILD_DIR/bin and BUILD_DIR/gpu-check to the GPU machine.
set -euo pipefail
build=${1:?usage: test/gpu/prepare.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
models=${KILN_TEST_MODELS:-$root/../shared/models}
out="$build/gpu-check"
mkdir -p "$out"
for dtype in f32 f16; do
  "$build/bin/kiln" compile "$models/stories260K.bin" \
    --tokenizer "$models/tok512.bin" --target cuda:sm_90 \
    $([ "$dtype" = f32 ] || echo --dtype "$dtype") \
    --context 512 -o "$out/stories260K-$dtype.kiln"
done
cp "$models/golden_stories260K_greedy.txt" "$out/"
echo "prepared $out"
