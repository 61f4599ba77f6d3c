#!/usr/bin/env bash
# Kiln against llama.cpp and PyTorch on the same synthetic Llama, side by
# side in one run (machines here are shared and noisy: only ratios measured
# together mean anything). The protocol (median of interleaved rounds, the
# spread beside it) is bench/README.md's; bench/compare.py does the work.
#
#   bench/compare.sh [--config llama-110m] [--threads 1,2] [--prompt-tokens 128,512]
#                    [--gen-tokens 128] [--dtypes f32,bf16,q8_0,q4_0,q6_k,q4_k_m]
#                    [--rounds 5]
#                    [--llama-bench PATH [--llama-quantize PATH]] [--no-pytorch]
#                    [--work DIR] [--json FILE]
#
# Needs: build/bin/kiln (or --kiln PATH); for PyTorch, Debian's python3-torch
# and libopenblas0-openmp; for llama.cpp, the paths of a llama-bench (and a
# llama-quantize, for the BF16, Q8_0, Q4_0, Q6_K and Q4_K_M files) built
# outside Kiln.
# Model files go to --work (default /tmp/kiln-bench): hundreds of MB each.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/compare.py" "$@"
