#!/usr/bin/env python3
"""Two Kiln builds side by side: the no-regression check of bench/README.md.

    bench/before_after.py --before OLD/kiln --after NEW/kiln MODEL.gguf ...

For each model, each build compiles its own artifact (`kiln compile
--no-cache`, timed: the cold compile), then `kiln bench` runs both artifacts
in interleaved rounds (the order alternates every round, so drift on a shared
machine falls on both), for every thread count. Each side's figure is the
median of all its runs (rounds x --repeat), with the slowest and fastest run
beside it, and the verdict applies the README's rule: the new median is at
least the before-runs' slowest run, or at least 97% of their median, whichever
is lower. `--compile-args` passes flags to both compiles (e.g.
"--dtype bf16"); `--after-compile-args` to the new build's only (e.g.
"--no-fusion" to compare fusion off against on with one binary).
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"before_after: {' '.join(map(shlex.quote, cmd))} failed:\n"
                 f"{result.stderr}")
    return result


def compile_artifact(kiln, model, out, args):
    start = time.monotonic()
    run([kiln, "compile", model, "-o", out, "--no-cache", "-q", *args])
    return time.monotonic() - start


def bench(kiln, artifact, threads, prompt, gen, repeat, extra):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        run([kiln, "bench", artifact, "--threads", str(threads),
             "--prompt-tokens", str(prompt), "--gen-tokens", str(gen),
             "--repeat", str(repeat), "--json", f.name, *extra])
        report = json.load(open(f.name))
    r = report["runs"][0]
    return {"prefill": [prompt / s for s in r["prefill"][-1]["seconds"]],
            "decode": [gen / s for s in r["decode"]["seconds"]]}


def summary(values):
    return {"median": statistics.median(values), "worst": min(values),
            "best": max(values), "runs": len(values)}


def verdict(before, after):
    floor = min(before["worst"], 0.97 * before["median"])
    return "ok" if after["median"] >= floor else "REGRESSION"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("models", nargs="+", help="model files (GGUF, llama2.c)")
    p.add_argument("--before", required=True, help="the old kiln binary")
    p.add_argument("--after", required=True, help="the new kiln binary")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--prompt-tokens", type=int, default=512)
    p.add_argument("--gen-tokens", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--compile-args", default="")
    p.add_argument("--after-compile-args", default="")
    p.add_argument("--bench-args", default="",
                   help="more kiln bench flags for both, e.g. --triad-mib 64")
    p.add_argument("--work", default=os.environ.get("KILN_BENCH_DIR",
                                                    "/tmp/kiln-bench"))
    p.add_argument("--json", help="write every figure here")
    o = p.parse_args()

    work = Path(o.work)
    work.mkdir(parents=True, exist_ok=True)
    common = shlex.split(o.compile_args)
    sides = {"before": (o.before, common),
             "after": (o.after, common + shlex.split(o.after_compile_args))}
    threads = [int(t) for t in o.threads.split(",")]
    results = {"command": " ".join(map(shlex.quote, sys.argv)), "models": {}}
    for model in o.models:
        name = Path(model).stem
        entry = {"compile_seconds": {}, "figures": {}}
        artifacts = {}
        for side, (kiln, args) in sides.items():
            artifacts[side] = str(work / f"{name}-{side}.kiln")
            entry["compile_seconds"][side] = compile_artifact(
                kiln, model, artifacts[side], args)
        runs = {(side, t): {"prefill": [], "decode": []}
                for side in sides for t in threads}
        for round_index in range(o.rounds):
            order = list(sides) if round_index % 2 == 0 else list(sides)[::-1]
            for t in threads:
                for side in order:
                    figures = bench(sides[side][0], artifacts[side], t,
                                    o.prompt_tokens, o.gen_tokens, o.repeat,
                                    shlex.split(o.bench_args))
                    for phase in figures:
                        runs[(side, t)][phase] += figures[phase]
        for t in threads:
            for phase in ("prefill", "decode"):
                b = summary(runs[("before", t)][phase])
                a = summary(runs[("after", t)][phase])
                entry["figures"][f"{phase} {t}T"] = {
                    "before": b, "after": a, "ratio": a["median"] / b["median"],
                    "verdict": verdict(b, a)}
        results["models"][name] = entry

    print(f"# {results['command']}")
    print(f"# tokens/s: median of {o.rounds} interleaved rounds x "
          f"{o.repeat} runs [slowest-fastest]; pp{o.prompt_tokens}, "
          f"tg{o.gen_tokens}")
    print("| model | figure | before | after | after/before | verdict |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, entry in results["models"].items():
        for figure, f in entry["figures"].items():
            b, a = f["before"], f["after"]
            print(f"| {name} | {figure} | {b['median']:.1f} "
                  f"[{b['worst']:.1f}-{b['best']:.1f}] | {a['median']:.1f} "
                  f"[{a['worst']:.1f}-{a['best']:.1f}] | {f['ratio']:.3f} | "
                  f"{f['verdict']} |")
        c = entry["compile_seconds"]
        print(f"| {name} | cold compile (s) | {c['before']:.1f} | "
              f"{c['after']:.1f} | {c['after'] / c['before']:.3f} | |")
    if o.json:
        with open(o.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
