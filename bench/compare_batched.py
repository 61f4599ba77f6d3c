#!/usr/bin/env python3
"""Kiln's batched decode against llama.cpp's llama-batched-bench, side by side.

    bench/compare_batched.py --llama-batched-bench PATH MODEL.gguf
        [--kiln build/bin/kiln] [--batch 1,4,16,64] [--threads 2]
        [--prompt-tokens 128] [--gen-tokens 128] [--rounds 3]
        [--compile-args "..."] [--bench-args "..."] [--llama-args "-fa"]
        [--json FILE]

Both tools read the same GGUF. Kiln compiles it once (`kiln compile
--no-cache`), then each round runs `kiln bench ARTIFACT --batch ...` and
`llama-batched-bench -m MODEL -npp P -ntg G -npl ... -t T`, the order
alternating every round so that drift on a shared machine falls on both
(bench/README.md's protocol). The figure compared is aggregate decode
tokens/s: Kiln's "decode tokens/s" (B x G tokens over the G decode steps) and
llama-batched-bench's S_TG (the same count over its text-generation time).
Each cell is the median of the rounds with the slowest and fastest beside
it. Beside them, from Kiln's report, the median of its share of the roofline
(at the read probe sampled around each run) and of the roofline's speedup
over batch 1: what this machine's compute peak
and read bandwidth allow (bench/README.md, "Batched decode").

When the batch sizes include 1, every round also runs Kiln's plain decode
benchmark on the same artifact (`kiln bench ARTIFACT --prompt-tokens P
--gen-tokens G`: tgG, one sequence decoding at positions 1..G after a
1-token prompt), so that batch 1 of the batched path is compared with it in
the same run. Batch 1 decodes at positions P..P+G-1 and so reads more of
its cache a step; both are also quoted against the read probe sampled
around them. llama.cpp is built outside Kiln; this script only takes its
path.
"""

import argparse
import json
import os
import re
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

from compare import run, say  # bench/compare.py: logged, failing loudly

ROOT = Path(__file__).resolve().parent.parent


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="GGUF file both tools read")
    p.add_argument("--llama-batched-bench", required=True,
                   help="path of llama.cpp's llama-batched-bench")
    p.add_argument("--kiln", default=os.environ.get("KILN", str(ROOT / "build/bin/kiln")))
    p.add_argument("--batch", default="1,4,16,64")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--gen-tokens", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--compile-args", default="", help="extra `kiln compile` flags")
    p.add_argument("--bench-args", default="",
                   help="more `kiln bench` flags, e.g. --triad-mib 64")
    p.add_argument("--llama-args", default="", help="extra llama-batched-bench flags (e.g. -fa)")
    p.add_argument("--work", default=os.environ.get("KILN_BENCH_DIR", "/tmp/kiln-bench"))
    p.add_argument("--json", help="write every run's figures here")
    return p.parse_args()


def kiln_bench(a, artifact, *flags):
    """One timed run of `kiln bench ARTIFACT FLAGS...` with this comparison's
    threads, prompt and decode lengths and --bench-args: its JSON report."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        run([a.kiln, "bench", artifact, *flags, "--threads", str(a.threads),
             "--prompt-tokens", str(a.prompt_tokens), "--gen-tokens", str(a.gen_tokens),
             "--repeat", "1", "--json", out.name] + shlex.split(a.bench_args))
        return json.load(open(out.name))


def run_kiln(a, artifact, batches):
    report = kiln_bench(a, artifact, "--batch", ",".join(map(str, batches)))
    # Per batch size: tokens/s, its share of the roofline at the read probe
    # sampled around it (one run: one share), and the roofline's speedup
    # over batch 1 (kiln bench's "The limits").
    return {r["batch"]: (r["decode"]["tokens_per_second"],
                         r["paired_fractions_of_roofline"][0],
                         r["roofline_speedup_over_batch_1"])
            for r in report["batch"]["results"]}


def run_tg(a, artifact, tg):
    """Kiln's single-sequence decode (tgG) on the batched artifact: appends
    its tokens/s and its share of the read probe sampled around it."""
    decode = kiln_bench(a, artifact)["runs"][0]["decode"]
    tg["tokens_per_second"].append(decode["median_tokens_per_second"])
    tg["read_fraction"].append(decode["median_paired_read_fraction"])


ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|"
                 r"\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|")


def run_llama(a, batches):
    context = max(batches) * (a.prompt_tokens + a.gen_tokens)
    out = run([a.llama_batched_bench, "-m", a.model, "-npp", str(a.prompt_tokens),
                    "-ntg", str(a.gen_tokens), "-npl", ",".join(map(str, batches)),
                    "-t", str(a.threads), "-c", str(context), "-b", "2048", "-ub", "512"]
                   + a.llama_args.split())
    figures = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            figures[int(m.group(3))] = float(m.group(8))  # S_TG t/s
    missing = [b for b in batches if b not in figures]
    if missing:
        sys.exit(f"compare_batched: llama-batched-bench printed no row for B = {missing}")
    return figures


def cell(samples):
    return (f"{statistics.median(samples):.1f} "
            f"[{min(samples):.1f}-{max(samples):.1f}]")


def main():
    a = parse_args()
    batches = [int(b) for b in a.batch.split(",")]
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    artifact = str(work / (Path(a.model).stem + "-batched.kiln"))
    say(f"compiling {a.model}")
    run([a.kiln, "compile", a.model, "-o", artifact, "--no-cache", "-q"]
        + a.compile_args.split())
    kiln = {b: [] for b in batches}
    llama = {b: [] for b in batches}
    share = {b: [] for b in batches}      # Kiln's share of its roofline
    allowed = {b: [] for b in batches}    # its roofline over batch 1's
    tg = {"tokens_per_second": [], "read_fraction": []}  # kiln bench's tgG
    for r in range(a.rounds):
        order = ["kiln", "llama"] if r % 2 == 0 else ["llama", "kiln"]
        for tool in order:
            say(f"round {r + 1} of {a.rounds}: {tool}")
            if tool == "llama":
                figures = run_llama(a, batches)
                for b in batches:
                    llama[b].append(figures[b])
                continue
            # Kiln's plain decode goes first in rounds 1, 3, ... (r even),
            # last in the others.
            if 1 in batches and r % 2 == 0:
                run_tg(a, artifact, tg)
            for b, (tps, fraction, over1) in run_kiln(a, artifact, batches).items():
                kiln[b].append(tps)
                share[b].append(fraction)
                if over1 is not None:
                    allowed[b].append(over1)
            if 1 in batches and r % 2 == 1:
                run_tg(a, artifact, tg)

    print(f"# bench/compare_batched.py {' '.join(sys.argv[1:])}")
    print(f"model {a.model}; {a.prompt_tokens}-token prompts, then {a.gen_tokens} decode "
          f"steps per sequence; {a.threads} threads; {a.rounds} interleaved rounds, "
          "median [slowest-fastest]; aggregate decode tokens/s (llama.cpp: S_TG)\n")
    print("| batch | Kiln | llama.cpp | Kiln / llama.cpp | Kiln over its batch 1 "
          "| Kiln's share of its roofline (probe around it) | roofline over batch 1 |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    base = statistics.median(kiln[batches[0]]) if batches[0] == 1 else None
    for b in batches:
        k, l = statistics.median(kiln[b]), statistics.median(llama[b])
        over = f"{k / base:.2f}x" if base else ""
        roof = f"{statistics.median(allowed[b]):.2f}x" if allowed[b] else ""
        print(f"| {b} | {cell(kiln[b])} | {cell(llama[b])} | {k / l:.2f} | {over} "
              f"| {100 * statistics.median(share[b]):.0f}% | {roof} |")
    if 1 in batches:
        # Batch 1's roofline is memory-bound, so its share of the roofline
        # is its share of the read probe. It counts the weights and the
        # cache a step reads; tgG's (kiln bench's decode) counts the weights.
        b1, t = statistics.median(kiln[1]), statistics.median(tg["tokens_per_second"])
        print(f"\nKiln's batch 1 against its plain decode (`kiln bench --prompt-tokens "
              f"{a.prompt_tokens} --gen-tokens {a.gen_tokens}`: tg{a.gen_tokens}, positions "
              f"1..{a.gen_tokens}) on the same artifact, in the same rounds:\n")
        print("| Kiln decode | tokens/s | share of the read probe around it |")
        print("| --- | ---: | ---: |")
        print(f"| batch 1 (positions {a.prompt_tokens}..{a.prompt_tokens + a.gen_tokens - 1}) "
              f"| {cell(kiln[1])} | {100 * statistics.median(share[1]):.0f}% |")
        print(f"| tg{a.gen_tokens} | {cell(tg['tokens_per_second'])} "
              f"| {100 * statistics.median(tg['read_fraction']):.0f}% |")
        print(f"\nbatch 1 / tg{a.gen_tokens}: {b1 / t:.2f}")
    if a.json:
        json.dump({"args": vars(a), "kiln": kiln, "llama": llama,
                   "kiln_fraction_of_roofline": share,
                   "kiln_roofline_speedup_over_batch_1": allowed,
                   "kiln_tg": tg},
                  open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
