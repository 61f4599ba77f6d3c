#!/usr/bin/python3
"""Kiln, llama.cpp and PyTorch on the same synthetic Llama, side by side.

Run through bench/compare.sh (the usage is there). The protocol is
bench/README.md's: every tool runs each cell (dtype, threads, pp/tg) once a
round after its own warm-up, the tools take turns within a round (their
order rotates from round to round), and after --rounds rounds each cell is
quoted as the median of its runs with the spread (slowest to fastest, as a
share of the median). Ratios are ratios of medians.

Models: `kiln make-model --config C --seed 1` writes the f32 GGUF that Kiln
and llama.cpp both read, and the same weights as a llama2.c checkpoint for
PyTorch. With --llama-quantize, llama.cpp's quantizer makes the BF16, Q8_0
and Q4_0 GGUFs (`--pure`: every matrix in that type) and Kiln compiles those
same files. Without it, bf16 is Kiln's `--dtype bf16` from the f32 file
(llama.cpp is then not run for bf16) and Q8_0/Q4_0 are skipped.

Only this script's own outputs go into --work: nothing of llama.cpp is
built or kept here; its binaries are given by path.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LLAMA_TYPES = {"bf16": "BF16", "q8_0": "Q8_0", "q4_0": "Q4_0", "q6_k": "Q6_K",
               "q4_k_m": "Q4_K_M"}
# Mixes are llama-quantize's own choice per tensor, not --pure.
MIXES = {"q4_k_m"}
# Bytes a weight of each type occupies in a GGUF (a Q8_0 block: 32 int8 and
# one f16 scale; Q4_0: 32 nibbles and one f16 scale).
BYTES_PER_WEIGHT = {"f32": 4.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32,
                    "q6_k": 210 / 256, "q4_k_m": None}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="llama-110m")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--prompt-tokens", default="128,512")
    p.add_argument("--gen-tokens", type=int, default=128)
    p.add_argument("--dtypes", default=None,
                   help="f32,bf16,q8_0,q4_0,q6_k,q4_k_m (default: f32,bf16, "
                        "and q8_0,q4_0 with --llama-quantize)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--llama-bench", help="path of llama.cpp's llama-bench")
    p.add_argument("--llama-quantize", help="path of llama.cpp's llama-quantize")
    p.add_argument("--no-pytorch", action="store_true")
    p.add_argument("--kiln", default=os.environ.get("KILN", str(ROOT / "build/bin/kiln")))
    p.add_argument("--work", default=os.environ.get("KILN_BENCH_DIR", "/tmp/kiln-bench"))
    p.add_argument("--json", help="write every run's figures here")
    p.add_argument("--triad-mib", type=int,
                   help="passed to kiln bench (its probes' array size; only tests shrink it)")
    a = p.parse_args()
    a.threads = [int(t) for t in a.threads.split(",")]
    a.prompt = [int(t) for t in a.prompt_tokens.split(",")]
    if a.dtypes is None:
        a.dtypes = "f32,bf16" + (",q8_0,q4_0" if a.llama_quantize else "")
    a.dtypes = a.dtypes.split(",")
    for d in a.dtypes:
        if d not in BYTES_PER_WEIGHT:  # (a mix's entry is None)
            p.error(f"--dtypes: unknown type {d} (f32, bf16, q8_0, q4_0, "
                    "q6_k, q4_k_m)")
    for tool in ("llama_bench", "llama_quantize"):
        path = getattr(a, tool)
        if path and not os.access(path, os.X_OK):
            p.error(f"--{tool.replace('_', '-')} {path}: not an executable file")
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    return a


def say(message):
    print(f"[compare] {message}", file=sys.stderr, flush=True)


def run(cmd, env=None, capture=True):
    say("$ " + " ".join(shlex.quote(str(c)) for c in cmd))
    done = subprocess.run([str(c) for c in cmd], env=env, text=True,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.PIPE if capture else None)
    if done.returncode != 0:
        if capture:
            sys.stderr.write(done.stderr[-4000:])
        sys.exit(f"compare: {cmd[0]} failed with exit code {done.returncode}")
    return done.stdout if capture else ""


#===------------------------------------------------------------------------===#
# Models and artifacts
#===------------------------------------------------------------------------===#

class Cell:
    """One dtype: the GGUF llama.cpp and Kiln read, Kiln's artifact, and
    whether PyTorch runs it."""

    def __init__(self, dtype, gguf, artifact, llama, pytorch):
        self.dtype, self.gguf, self.artifact = dtype, gguf, artifact
        self.llama, self.pytorch = llama, pytorch


def prepare(a, work):
    f32 = work / f"{a.config}-f32.gguf"
    llama2c = work / f"{a.config}.bin"
    if not f32.exists():
        run([a.kiln, "make-model", "--config", a.config, "--seed", "1", "-o", f32])
    if not a.no_pytorch and not llama2c.exists():
        run([a.kiln, "make-model", "--config", a.config, "--seed", "1",
             "--format", "llama2c", "-o", llama2c])
    cells = []
    for dtype in a.dtypes:
        gguf = f32
        if dtype != "f32":
            if a.llama_quantize:
                gguf = work / f"{a.config}-{dtype}.gguf"
                if not gguf.exists():
                    pure = [] if dtype in MIXES else ["--pure"]
                    run([a.llama_quantize, *pure, f32, gguf, LLAMA_TYPES[dtype]])
            elif dtype != "bf16":
                say(f"skipping {dtype}: its GGUF comes from --llama-quantize")
                continue
            else:
                gguf = None  # Kiln packs the f32 file as bf16; llama.cpp skips
        artifact = work / f"{a.config}-{dtype}.kiln"
        source = gguf or f32
        # Kiln keeps each file's types (bf16 multiplied in bf16, Q8_0/Q4_0
        # blocks read in place); bf16 without llama-quantize is its --dtype
        # bf16 of the f32 file.
        dtype_args = ["--dtype", "bf16"] if dtype == "bf16" and gguf is None else []
        # Always through kiln compile: its cache (keyed by the model and the
        # kiln executable) makes this a copy unless Kiln or the file changed.
        run([a.kiln, "compile", source, *dtype_args, "-o", artifact, "-q"])
        cells.append(Cell(dtype, gguf, artifact,
                          llama=bool(a.llama_bench and gguf),
                          pytorch=not a.no_pytorch and dtype in ("f32", "bf16")))
    return cells, llama2c


#===------------------------------------------------------------------------===#
# One run of each tool: {test: seconds} plus what it says of itself
#===------------------------------------------------------------------------===#

def run_kiln(a, cell, threads, work):
    out = work / "kiln-run.json"
    run([a.kiln, "bench", cell.artifact, "--threads", threads,
         "--prompt-tokens", a.prompt_tokens, "--gen-tokens", a.gen_tokens,
         "--repeat", 1, "--json", out]
        + (["--triad-mib", a.triad_mib] if a.triad_mib else []))
    report = json.loads(out.read_text())
    [r] = report["runs"]
    times = {f"pp{p['prompt_tokens']}": p["seconds"][0] for p in r["prefill"]}
    times[f"tg{a.gen_tokens}"] = r["decode"]["seconds"][0]
    m = r["machine"]
    info = {"read_gb_per_s": m["read_gb_per_s"], "triad_gb_per_s": m["triad_gb_per_s"],
            "fma_peak_gflops": m["fma_peak_gflops"],
            "bytes_per_token": r["decode"]["bytes_per_token"],
            # The decode run against the better probe sample beside it.
            "paired_read_fraction": r["decode"].get("median_paired_read_fraction"),
            "parameters": report["model"]["layer_gemm_parameters"]
            + report["model"]["classifier_parameters"],
            "kiln_version": report["kiln_version"], "target": report["artifact"]["target"]}
    return times, info


def run_llama(a, cell, threads):
    text = run([a.llama_bench, "-m", cell.gguf, "-t", threads, "-p", a.prompt_tokens,
                "-n", a.gen_tokens, "-r", 1, "-o", "json"])
    times = {}
    info = {}
    for t in json.loads(text):
        name = f"pp{t['n_prompt']}" if t["n_gen"] == 0 else f"tg{t['n_gen']}"
        times[name] = t["samples_ns"][0] / 1e9
        info = {"build_commit": t.get("build_commit"), "cpu_info": t.get("cpu_info"),
                "type": t.get("model_type")}
    return times, info


OPENBLAS_OPENMP = Path("/usr/lib/x86_64-linux-gnu/openblas-openmp")


def pytorch_env(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(threads)
    # PyTorch runs its own ops on OpenMP threads. With Debian's default
    # (pthread) OpenBLAS the BLAS's threads spin beside them, and two
    # threads ran slower than one (pp512 0.57x, decode 0.29x); OpenBLAS
    # built on OpenMP (libopenblas0-openmp) shares PyTorch's pool.
    if (OPENBLAS_OPENMP / "libblas.so.3").exists():
        env["LD_LIBRARY_PATH"] = ":".join(
            x for x in (str(OPENBLAS_OPENMP), env.get("LD_LIBRARY_PATH")) if x)
    # OpenBLAS 0.3.21 predates the newest CPUs and picks slow or no AVX-512
    # kernels on them; name the AVX-512 kernels where the CPU has AVX-512
    # (the script checks a product against float64 before timing). A site's
    # OPENBLAS_L2_SIZE tuned for another CPU goes with it.
    if "avx512f" in Path("/proc/cpuinfo").read_text():
        env["OPENBLAS_CORETYPE"] = "SKYLAKEX"
        env.pop("OPENBLAS_L2_SIZE", None)
    return env


def run_pytorch(a, cell, threads, llama2c):
    text = run(["/usr/bin/python3", ROOT / "bench/pytorch_llama.py", llama2c,
                "--threads", threads, "--prompt-tokens", a.prompt_tokens,
                "--gen-tokens", a.gen_tokens, "--dtype", cell.dtype, "--repeat", 1],
               env=pytorch_env(threads))
    times, info = {}, {}
    for line in text.splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        name = f"pp{r['tokens']}" if r["phase"] == "prefill" else f"tg{r['tokens']}"
        times[name] = r["seconds"][0]
        info = {k: r[k] for k in ("torch", "torch_threads", "blas", "openblas_coretype",
                                  "one_row")}
    return times, info


#===------------------------------------------------------------------------===#
# The summary
#===------------------------------------------------------------------------===#

def tokens_of(test):
    return int(test[2:])


def summarize(samples, test):
    """Median tokens/s and spread ((fastest - slowest) / median) of a cell."""
    rates = [tokens_of(test) / s for s in samples]
    median = statistics.median(rates)
    return median, (max(rates) - min(rates)) / median, rates


def main():
    a = parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    if not a.no_pytorch and subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                                           capture_output=True).returncode != 0:
        sys.exit("compare: PyTorch is not installed for /usr/bin/python3 (apt-get install "
                 "python3-torch libopenblas0-openmp), or pass --no-pytorch")
    if not a.no_pytorch and not (OPENBLAS_OPENMP / "libblas.so.3").exists():
        say("warning: libopenblas0-openmp is not installed: PyTorch runs on the pthread "
            "OpenBLAS, whose threads contend with PyTorch's own (apt-get install "
            "libopenblas0-openmp)")
    cells, llama2c = prepare(a, work)
    tests = [f"pp{p}" for p in a.prompt] + [f"tg{a.gen_tokens}"]

    # samples[(tool, dtype, threads, test)] = [seconds, ...]
    samples, infos = {}, {}
    tools = ["kiln", "llama.cpp", "pytorch"]
    start = time.time()
    for rnd in range(a.rounds):
        order = tools[rnd % 3:] + tools[:rnd % 3]
        say(f"round {rnd + 1} of {a.rounds} (order: {', '.join(order)})")
        for cell in cells:
            for threads in a.threads:
                for tool in order:
                    if tool == "kiln":
                        times, info = run_kiln(a, cell, threads, work)
                    elif tool == "llama.cpp" and cell.llama:
                        times, info = run_llama(a, cell, threads)
                    elif tool == "pytorch" and cell.pytorch:
                        times, info = run_pytorch(a, cell, threads, llama2c)
                    else:
                        continue
                    infos.setdefault((tool, cell.dtype, threads), []).append(info)
                    for test in tests:
                        samples.setdefault((tool, cell.dtype, threads, test), []).append(times[test])
    elapsed = time.time() - start

    def cell_rate(tool, dtype, threads, test):
        s = samples.get((tool, dtype, threads, test))
        return summarize(s, test) if s else None

    def fmt(r):
        return "—" if r is None else f"{r[0]:.1f} ({100 * r[1]:.0f}%)"

    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: bench/compare.sh "
          + " ".join(shlex.quote(x) for x in sys.argv[1:]))
    print(f"# {a.rounds} rounds, tools interleaved, {elapsed / 60:.1f} min; each cell: "
          "median tokens/s of the rounds (spread: fastest - slowest, of the median)")
    for tool in tools:
        seen = [i for (t, _, _), v in infos.items() if t == tool for i in v[:1]]
        if seen:
            print(f"# {tool}: " + ", ".join(f"{k} {v}" for k, v in seen[0].items()
                                              if k not in ("read_gb_per_s", "triad_gb_per_s",
                                                           "fma_peak_gflops", "bytes_per_token",
                                                           "parameters")))
    print()
    print("| dtype | threads | test | Kiln | llama.cpp | PyTorch | Kiln / llama.cpp | Kiln / PyTorch |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    suspects = []
    for cell in cells:
        for threads in a.threads:
            for test in tests:
                k = cell_rate("kiln", cell.dtype, threads, test)
                l = cell_rate("llama.cpp", cell.dtype, threads, test)
                p = cell_rate("pytorch", cell.dtype, threads, test)
                p_ratio = "—" if p is None else f"{k[0] / p[0]:.2f}"
                # More threads must not be slower; if they are, the figure says
                # more about the thread pools than about PyTorch.
                if p is not None and threads > min(a.threads):
                    fewer = cell_rate("pytorch", cell.dtype, min(a.threads), test)
                    if p[0] < fewer[0]:
                        p_ratio = "suspect"
                        suspects.append(f"PyTorch {cell.dtype} {test} at {threads} threads "
                                        f"({p[0]:.1f} tokens/s) is slower than at "
                                        f"{min(a.threads)} ({fewer[0]:.1f}): no ratio quoted")
                l_ratio = "—" if l is None else f"{k[0] / l[0]:.2f}"
                print(f"| {cell.dtype} | {threads} | {test} | {fmt(k)} | {fmt(l)} | {fmt(p)} "
                      f"| {l_ratio} | {p_ratio} |")
    for s in suspects:
        print(f"\nsuspect: {s}")

    # Decode against the read bandwidth Kiln's probe measured in the same runs.
    tg = f"tg{a.gen_tokens}"
    print("\nDecode against the read-bandwidth probe (`kiln bench`, median of its runs):")
    print("| dtype | threads | read GB/s | Kiln decode GB/s (of read) "
          "| Kiln's run against the probe beside it (median, range) "
          "| llama.cpp decode GB/s (of read) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for cell in cells:
        for threads in a.threads:
            info = infos[("kiln", cell.dtype, threads)]
            read = statistics.median(i["read_gb_per_s"] for i in info)
            k = cell_rate("kiln", cell.dtype, threads, tg)
            kiln_gbs = k[0] * info[0]["bytes_per_token"] / 1e9
            l = cell_rate("llama.cpp", cell.dtype, threads, tg)
            # llama.cpp reads every matrix in its GGUF type: the same
            # parameters at that type's bytes a weight (a mix's: its file's
            # bytes over the counted parameters).
            per_weight = (os.path.getsize(cell.gguf) / info[0]["parameters"]
                          if cell.dtype in MIXES else BYTES_PER_WEIGHT[cell.dtype])
            llama_gbs = (None if l is None else
                         l[0] * info[0]["parameters"] * per_weight / 1e9)
            paired = [i["paired_read_fraction"] for i in info
                      if i.get("paired_read_fraction") is not None]
            paired_text = ("—" if not paired else
                           f"{100 * statistics.median(paired):.0f}% "
                           f"({100 * min(paired):.0f}-{100 * max(paired):.0f}%)")
            print(f"| {cell.dtype} | {threads} | {read:.1f} | {kiln_gbs:.1f} "
                  f"({100 * kiln_gbs / read:.0f}%) | {paired_text} | "
                  + ("—" if llama_gbs is None else f"{llama_gbs:.1f} ({100 * llama_gbs / read:.0f}%)")
                  + " |")

    if a.json:
        out = {"command": sys.argv, "rounds": a.rounds, "elapsed_seconds": elapsed,
               "samples": [{"tool": t, "dtype": d, "threads": n, "test": s, "seconds": v}
                           for (t, d, n, s), v in samples.items()],
               "info": [{"tool": t, "dtype": d, "threads": n, "runs": v}
                        for (t, d, n), v in infos.items()]}
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
