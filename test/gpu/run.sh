#!/usr/bin/env bash
# test/gpu/run.sh BUILD_DIR - Kiln's check on a real NVIDIA GPU, with the
# MLIR-free binaries and the artifacts test/gpu/prepare.sh wrote. Runs:
#
#  1. every CUDA kernel of the library against the naive reference loops on
#     random odd shapes (kiln-cuda-kernel-tests --device=gpu: the test
#     cases CI runs in the block emulator, the same tolerances per dtype);
#  2. stories260K compiled for cuda:sm_90, greedy for 256 steps: the golden
#     text, byte for byte; and with f16 weights (tensor-core prefill) from a
#     prompt, its tokens per second;
#  3. benchmarks: the device's read bandwidth (kiln-gpu-bench bandwidth,
#     the library's probe kernel), then for each benchmark artifact
#     prepare.sh wrote (llama-110m, llama-1b; f16) prefill of 512 tokens and
#     128 decode steps (kiln-gpu-bench model), decode against the limit
#     bandwidth / bytes a step reads, and the same shape in PyTorch (eager,
#     test/gpu/torch_llama.py) where torch is installed;
#
# and writes $OUT/gpu-check.json (or ./gpu-check.json) with each part's
# result, and $OUT/gpu-bench.md, the benchmark table. Without a GPU it
# exits 77 (not run), saying why. With KILN_CUDA_EMULATE=1 it runs the same
# checks in the CPU block emulator, the benchmarks on stories260K with a
# short prompt (no bandwidth probe, no PyTorch): how the script itself is
# checked on machines without a GPU (test/gpu/run-emulated.test, in CI).
# KILN_GPU_CHECK_DIR: where prepare.sh wrote (default BUILD_DIR/gpu-check).
set -uo pipefail
build=${1:?usage: test/gpu/run.sh BUILD_DIR}
out=${OUT:-.}
check=${KILN_GPU_CHECK_DIR:-$build/gpu-check}
json="$out/gpu-check.json"
status=0
say() { echo "[kiln gpu-check] $*"; }
# kiln-gpu-run's JSON line, or its error as a JSON string.
run_json() {
  local last; last=$(tail -1 "$1")
  case "$last" in
    "{"*) echo "$last" ;;
    *) python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$last" ;;
  esac
}

device=gpu
[ "${KILN_CUDA_EMULATE:-}" = 1 ] && device=emulated
say "1/3 kernels against the reference ($device)"
"$build/bin/kiln-cuda-kernel-tests" --device=$device --gtest_brief=1 \
  --gtest_output="json:$out/kernels.json"
kernels=$?
if [ $kernels -eq 77 ]; then
  say "NOT RUN: no GPU here (set KILN_CUDA_EMULATE=1 to check the script)"
  echo '{"not_run": "no GPU"}' > "$json"
  exit 77
fi
[ $kernels -eq 0 ] || status=1

say "2/3 stories260K: the golden text, and f16 from a prompt"
"$build/bin/kiln-gpu-run" "$check/stories260K-f32.kiln" -n 256 \
  > "$out/golden.txt" 2> "$out/golden.json"
root=$(cd "$(dirname "$0")/../.." && pwd)
if python3 "$root/test/tools/same-text.py" "$check/golden_stories260K_greedy.txt" \
    "$out/golden.txt"; then
  golden=true
else
  golden=false
  status=1
  say "golden text differs:"; diff "$out/golden.txt" "$check/golden_stories260K_greedy.txt" | head
fi
"$build/bin/kiln-gpu-run" "$check/stories260K-f16.kiln" -n 128 \
  -p "Once upon a time, there was a little girl named Lily. She loved to play" \
  > "$out/f16.txt" 2> "$out/f16.json" || status=1

say "3/3 benchmarks"
bench() { "$build/bin/kiln-gpu-bench" "$@" 2> "$out/bench-error.txt" | tail -1 |
  grep '^{' || run_json "$out/bench-error.txt"; }
# Model shapes as `kiln make-model` makes them: dim hidden layers heads
# kv_heads vocab (frontends/formats/SyntheticModel.cpp).
declare -A shape=([llama-110m]="768 2048 12 12 12 32000"
                  [llama-1b]="2048 5632 22 32 4 32000"
                  [stories260K]="64 172 5 8 4 512")
if [ "$device" = emulated ]; then
  bandwidth='{"not_run": "emulated"}'
  models="stories260K"; prompt=32; decode=8
else
  bandwidth=$(bench bandwidth)
  case "$bandwidth" in *read_gb_per_second*) ;; *) status=1 ;; esac
  models="llama-110m llama-1b"; prompt=512; decode=128
fi
say "read bandwidth: $bandwidth"
results=()
for model in $models; do
  artifact="$check/$model-f16.kiln"
  if [ ! -f "$artifact" ]; then
    results+=("{\"model\": \"$model\", \"not_run\": \"no $artifact (test/gpu/prepare.sh)\"}")
    continue
  fi
  kiln=$(bench model "$artifact" --prompt $prompt --decode $decode)
  case "$kiln" in *decode_tokens_per_second*) ;; *) status=1 ;; esac
  read -r dim hidden layers heads kv vocab <<< "${shape[$model]}"
  if [ "$device" = emulated ]; then
    torch='{"not_run": "emulated"}'
  else
    torch=$(python3 "$root/test/gpu/torch_llama.py" --dim $dim --hidden $hidden \
      --layers $layers --heads $heads --kv-heads $kv --vocab $vocab \
      --dtype f16 --prompt $prompt --decode $decode 2>&1 | tail -1)
    case "$torch" in "{"*) ;; *) torch=$(python3 -c 'import json,sys; print(json.dumps({"error": sys.argv[1]}))' "$torch") ;; esac
  fi
  say "$model: kiln $kiln"
  say "$model: torch $torch"
  results+=("{\"model\": \"$model\", \"kiln\": $kiln, \"torch\": $torch}")
done
benchmarks=$(IFS=,; echo "[${results[*]}]")

{
  echo "{"
  echo "  \"kernels_exit_status\": $kernels,"
  echo "  \"golden_text_matches\": $golden,"
  echo "  \"golden_run\": $(run_json "$out/golden.json"),"
  echo "  \"f16_run\": $(run_json "$out/f16.json"),"
  echo "  \"bandwidth\": $bandwidth,"
  echo "  \"benchmarks\": $benchmarks"
  echo "}"
} > "$json"
cat "$json"
# The table: tokens/s side by side, decode as a fraction of its limit.
python3 - "$json" > "$out/gpu-bench.md" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bw = r["bandwidth"].get("read_gb_per_second")
print(f"Read bandwidth (kiln-gpu-bench bandwidth): {bw} GB/s" if bw else
      f"Read bandwidth: not measured ({r['bandwidth']})")
print()
print("| model | Kiln prefill tok/s | PyTorch prefill tok/s | Kiln decode tok/s"
      " | PyTorch decode tok/s | decode limit tok/s | Kiln / limit |")
print("|---|---|---|---|---|---|---|")
for b in r["benchmarks"]:
    k, t = b.get("kiln", {}), b.get("torch", {})
    if not isinstance(k, dict) or "decode_tokens_per_second" not in k:
        print(f"| {b['model']} | not run: {b.get('not_run', k)} | | | | | |")
        continue
    limit = bw * 1e9 / k["decode_step_bytes"] if bw else None
    tp = t.get("prefill_tokens_per_second", "-") if isinstance(t, dict) else "-"
    td = t.get("decode_tokens_per_second", "-") if isinstance(t, dict) else "-"
    kd = k["decode_tokens_per_second"]
    shown = f"{limit:.0f}" if limit else "-"
    fraction = f"{kd / limit:.2f}" if limit else "-"
    print(f"| {b['model']} | {k['prefill_tokens_per_second']} | {tp} | "
          f"{kd} | {td} | {shown} | {fraction} |")
PY
cat "$out/gpu-bench.md"
exit $status
