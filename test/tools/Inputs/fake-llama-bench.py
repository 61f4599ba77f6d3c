#!/usr/bin/env python3
# A stand-in for llama.cpp's llama-bench in bench-compare.test: answers
# `-p P1,P2 -n G -r 1 -o json` with llama-bench's JSON fields, each test of
# its k-th call (counted in $FAKE_LLAMA_STATE) taking tokens / (100 (k + 1)^2)
# seconds, so the medians the comparison prints are known in advance.
import json
import os
import sys

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
state = os.environ["FAKE_LLAMA_STATE"]
k = int(open(state).read()) if os.path.exists(state) else 0
open(state, "w").write(str(k + 1))
rate = 100.0 * (k + 1) ** 2
tests = [(int(p), 0) for p in args["-p"].split(",")] + [(0, int(args["-n"]))]
print(json.dumps([{"build_commit": "fake", "cpu_info": "fake", "model_type": "fake",
                   "n_threads": int(args["-t"]), "n_prompt": p, "n_gen": g,
                   "samples_ns": [int((p + g) / rate * 1e9)]} for p, g in tests]))
