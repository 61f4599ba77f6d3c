#!/usr/bin/env python3
# A stand-in for llama.cpp's llama-batched-bench in bench-compare-batched.test:
# answers `-npp P -ntg G -npl B1,B2,... -t T` with llama-batched-bench's table,
# every batch size B of its k-th call (counted in $FAKE_LLAMA_STATE) decoding
# at S_TG = 100 B (k + 1) tokens/s, so the medians the comparison prints are
# known in advance.
import os
import sys

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
state = os.environ["FAKE_LLAMA_STATE"]
k = int(open(state).read()) if os.path.exists(state) else 0
open(state, "w").write(str(k + 1))
pp, tg = int(args["-npp"]), int(args["-ntg"])
print(f"|{'PP':>6} | {'TG':>6} | {'B':>4} | {'N_KV':>6} | {'T_PP s':>8} | {'S_PP t/s':>8} "
      f"| {'T_TG s':>8} | {'S_TG t/s':>8} | {'T s':>8} | {'S t/s':>8} |")
print("|" + "-|-".join("-" * w for w in (6, 6, 4, 6, 8, 8, 8, 8, 8, 8)) + "-|")
for b in map(int, args["-npl"].split(",")):
    s_tg = 100.0 * b * (k + 1)
    t_tg = b * tg / s_tg
    print(f"|{pp:6d} | {tg:6d} | {b:4d} | {b * (pp + tg):6d} | {1.0:8.3f} | {b * pp:8.2f} "
          f"| {t_tg:8.3f} | {s_tg:8.2f} | {1.0 + t_tg:8.3f} | {b * (pp + tg) / (1.0 + t_tg):8.2f} |")
