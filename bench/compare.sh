#!/usr/bin/env bash
# Kiln against PyTorch on the same synthetic Llama, side by side in one run
# (machines here are shared and noisy: only ratios measured together mean
# anything). Usage:
#
#   bench/compare.sh [--config llama-110m] [--threads 1,2] [--prompt-tokens 128,512]
#                    [--gen-tokens 128] [--dtype f32|bf16]
#
# Makes the model once (llama2.c format, which both read), compiles it with
# `kiln compile`, runs `kiln bench` and bench/pytorch_llama.py (Debian's
# python3-torch with OpenBLAS: apt install python3-torch libopenblas0-pthread;
# OPENBLAS_CORETYPE=SKYLAKEX on AVX-512 machines, which OpenBLAS 0.3.21 would
# otherwise not use on CPUs newer than it), then prints tokens/s and ratios.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
kiln=${KILN:-$root/build/bin/kiln}
config=llama-110m threads=1,2 prompt=128,512 gen=128 dtype=f32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --prompt-tokens) prompt=$2; shift 2 ;;
    --gen-tokens) gen=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
work=${KILN_BENCH_DIR:-/tmp/kiln-bench}
mkdir -p "$work"
model="$work/$config.bin"
artifact="$work/$config-$dtype.kiln"
[[ -f "$model" ]] || "$kiln" make-model --config "$config" --seed 1 --format llama2c -o "$model"
"$kiln" compile "$model" --tokenizer "$model.tokenizer.bin" --dtype "$dtype" -o "$artifact" -q

if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SKYLAKEX}; fi
echo "# $(date -u +%F) $(nproc) cores: bench/compare.sh --config $config --threads $threads --prompt-tokens $prompt --gen-tokens $gen --dtype $dtype"
"$kiln" bench "$artifact" --prompt-tokens "$prompt" --gen-tokens "$gen" \
  --threads "$threads" --json "$work/kiln.json"
# One process per thread count, with OpenBLAS and OpenMP held to it (else
# PyTorch's OpenMP threads and OpenBLAS's own oversubscribe the cores).
: > "$work/pytorch.jsonl"
for t in ${threads//,/ }; do
  OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t /usr/bin/python3 "$root/bench/pytorch_llama.py" \
    "$model" --prompt-tokens "$prompt" --gen-tokens "$gen" --threads "$t" \
    --dtype "$dtype" >> "$work/pytorch.jsonl"
done
/usr/bin/python3 - "$work/kiln.json" "$work/pytorch.jsonl" <<'PY'
import json, sys
kiln = json.load(open(sys.argv[1]))
torch = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
def kiln_rate(threads, phase, tokens):
    for run in kiln["runs"]:
        if run["threads"] != threads:
            continue
        if phase == "decode":
            return run["decode"]["tokens_per_second"]
        for p in run["prefill"]:
            if p["prompt_tokens"] == tokens:
                return p["tokens_per_second"]
print(f"{'threads':>7} {'phase':>12} {'kiln tok/s':>11} {'pytorch tok/s':>14} {'kiln/pytorch':>13}")
for t in torch:
    k = kiln_rate(t["threads"], t["phase"], t["tokens"])
    name = f"{t['phase']}{t['tokens'] if t['phase'] == 'prefill' else ''}"
    print(f"{t['threads']:>7} {name:>12} {k:>11.1f} {t['tokens_per_s']:>14.1f} {k / t['tokens_per_s']:>13.2f}")
PY
