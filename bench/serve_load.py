#!/usr/bin/env python3
"""Load benchmark of `kiln serve` (and, beside it, llama.cpp's llama-server).

Clients (threads) send streamed /v1/completions requests back to back, each
generating exactly --max-tokens tokens (ignore_eos), against a synthetic
model made with `kiln make-model` (the same GGUF file for both servers).
For each number of concurrent clients it reports requests/s, time to first
token p50/p99 and the aggregate generated tokens/s.

    bench/serve_load.py                               # tiny model, 1/8/32 clients
    bench/serve_load.py --config llama-110m --seconds 30
    bench/serve_load.py --llama-server /work/ext/llama.cpp/build/bin/llama-server

llama-server is started as `llama-server -m MODEL.gguf --port P -np N -c
N*CTX -t THREADS` (N: the most clients, CTX: --slot-context); its code and binaries stay outside
this repository. Numbers from both come from the same client code.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_common as common  # noqa: E402


def measure(host, port, clients, seconds, max_tokens, prompt):
    """Runs `clients` closed-loop clients for `seconds`; returns the figures."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True,
            "temperature": 0}
    lock = threading.Lock()
    ttfts, tokens, done, errors = [], [0], [0], []
    end = time.monotonic() + seconds

    def client(_):
        while time.monotonic() < end:
            status, ttft, chunks, finish, _ = common.stream_completion(
                host, port, body)
            with lock:
                if status != 200 or finish != "length":
                    errors.append((status, finish))
                    continue
                done[0] += 1
                tokens[0] += max_tokens
                if ttft is not None:
                    ttfts.append(ttft)

    start = time.monotonic()
    for t in common.run_in_threads(clients, client):
        t.join()
    wall = time.monotonic() - start
    return {"clients": clients, "requests": done[0], "errors": len(errors),
            "seconds": wall, "requests_per_s": done[0] / wall,
            "ttft_p50_ms": common.percentile(ttfts, 50) * 1e3,
            "ttft_p99_ms": common.percentile(ttfts, 99) * 1e3,
            "tokens_per_s": tokens[0] / wall}


def report(name, rows):
    print("\n%s" % name)
    print("%8s %9s %8s %10s %12s %12s %12s" % (
        "clients", "requests", "errors", "req/s", "TTFT p50 ms",
        "TTFT p99 ms", "tokens/s"))
    for r in rows:
        print("%8d %9d %8d %10.2f %12.1f %12.1f %12.1f" % (
            r["clients"], r["requests"], r["errors"], r["requests_per_s"],
            r["ttft_p50_ms"], r["ttft_p99_ms"], r["tokens_per_s"]))
    sys.stdout.flush()


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", default=os.path.join(root, "build/bin/kiln"))
    p.add_argument("--config", default="tiny",
                   help="synthetic model shape (kiln make-model --config)")
    p.add_argument("--clients", default="1,8,32")
    p.add_argument("--seconds", type=float, default=10,
                   help="per concurrency level")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--prompt", default="Once upon a time, in a land far away,")
    p.add_argument("--threads", type=int, default=0,
                   help="model threads for both servers (0: all cores)")
    p.add_argument("--workdir", help="where the model and artifact go "
                   "(default: a temporary directory)")
    p.add_argument("--llama-server", help="llama.cpp's llama-server binary: "
                   "benchmark it too, on the same GGUF")
    p.add_argument("--slot-context", type=int, default=512,
                   help="llama-server's context per parallel slot (its -c is "
                   "this times the most clients)")
    p.add_argument("--json", help="write every figure here")
    a = p.parse_args()

    levels = [int(c) for c in a.clients.split(",")]
    workdir = a.workdir or tempfile.mkdtemp(prefix="kiln-serve-load-")
    gguf, artifact = common.make_artifact(a.kiln, workdir, a.config, 0)
    results = {}

    flags = ["--concurrency", str(max(levels)), "--log-requests", "false"]
    if a.threads:
        flags += ["--threads", str(a.threads)]
    server = common.KilnServer(a.kiln, artifact, flags,
                               os.path.join(workdir, "kiln-serve.log"))
    try:
        common.wait_healthy(server.host, server.port)
        measure(server.host, server.port, 1, 1, a.max_tokens, a.prompt)  # warm
        rows = [measure(server.host, server.port, n, a.seconds, a.max_tokens,
                        a.prompt) for n in levels]
        results["kiln"] = rows
        report("kiln serve (%s, max_tokens %d)" % (a.config, a.max_tokens),
               rows)
    finally:
        server.stop()

    if a.llama_server:
        port = 18000 + os.getpid() % 1000
        ctx = a.slot_context
        cmd = [a.llama_server, "-m", gguf, "--host", "127.0.0.1", "--port",
               str(port), "-np", str(max(levels)), "-c",
               str(ctx * max(levels)), "--log-disable"]
        if a.threads:
            cmd += ["-t", str(a.threads)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            common.wait_healthy("127.0.0.1", port)
            measure("127.0.0.1", port, 1, 1, a.max_tokens, a.prompt)
            rows = [measure("127.0.0.1", port, n, a.seconds, a.max_tokens,
                            a.prompt) for n in levels]
            results["llama-server"] = rows
            report("llama-server (same GGUF)", rows)
        finally:
            proc.terminate()
            proc.wait(60)

    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
