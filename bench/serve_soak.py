#!/usr/bin/env python3
"""Soak test of `kiln serve`: twice its capacity for a long time.

Capacity is the sequences it runs at once plus the requests it lets wait
(--concurrency + --max-queue); twice that many clients send streamed
completions back to back, of random lengths, some leaving mid-stream.
At the end it reports, and exits non-zero unless all hold:

  - every accepted request completed (a finish_reason and [DONE]), apart
    from the clients that left on purpose;
  - every rejected request was a 503;
  - resident memory stayed flat (the last fifth's peak within 10% or
    16 MiB of the first fifth's, after a warm-up);
  - at the end nothing runs or waits and every KV block is free (or held
    only by the prefix cache).

Outside CI (10 minutes by default):
    bench/serve_soak.py                 # 600 s
    bench/serve_soak.py --duration 60   # shorter
"""

import argparse
import os
import random
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_common as common  # noqa: E402


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", default=os.path.join(root, "build/bin/kiln"))
    p.add_argument("--config", default="tiny")
    p.add_argument("--duration", type=float, default=600, help="seconds")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-queue", type=int, default=8)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--leave-share", type=float, default=0.05,
                   help="share of clients' requests that leave mid-stream")
    p.add_argument("--workdir")
    a = p.parse_args()

    workdir = a.workdir or tempfile.mkdtemp(prefix="kiln-serve-soak-")
    _, artifact = common.make_artifact(a.kiln, workdir, a.config, 2048)
    flags = ["--concurrency", str(a.concurrency), "--max-queue",
             str(a.max_queue), "--log-requests", "false"]
    if a.threads:
        flags += ["--threads", str(a.threads)]
    server = common.KilnServer(a.kiln, artifact, flags,
                               os.path.join(workdir, "kiln-serve.log"))
    host, port = server.host, server.port
    clients = 2 * (a.concurrency + a.max_queue)
    print("soak: %d clients against concurrency %d + queue %d for %.0f s"
          % (clients, a.concurrency, a.max_queue, a.duration))
    sys.stdout.flush()

    lock = threading.Lock()
    counts = {"accepted": 0, "completed": 0, "left": 0, "rejected": 0,
              "unfinished": 0, "other": 0}
    others = []
    end = time.monotonic() + a.duration

    def client(i):
        rng = random.Random(i)
        while time.monotonic() < end:
            body = {"prompt": "Soak %d %d" % (i, rng.randrange(1 << 30)),
                    "max_tokens": rng.randrange(8, 400),
                    "temperature": rng.choice([0, 0.8]),
                    "seed": rng.randrange(1 << 30)}
            leave = rng.random() < a.leave_share
            try:
                status, _, _, finish, _ = common.stream_completion(
                    host, port, body, leave_after=3 if leave else None)
            except OSError as e:
                with lock:
                    counts["other"] += 1
                    others.append(repr(e))
                continue
            with lock:
                if status == 503:
                    counts["rejected"] += 1
                elif status != 200:
                    counts["other"] += 1
                    others.append(status)
                else:
                    counts["accepted"] += 1
                    if finish == "left":
                        counts["left"] += 1
                    elif finish in ("length", "stop"):
                        counts["completed"] += 1
                    else:
                        counts["unfinished"] += 1
                        others.append(finish)
            if status == 503:
                time.sleep(0.05)  # as Retry-After asks, but briefer

    rss = []
    threads = common.run_in_threads(clients, client)
    start = time.monotonic()
    while time.monotonic() < end:
        time.sleep(min(5, max(0.1, end - time.monotonic())))
        m = common.metrics(host, port)
        rss.append((time.monotonic() - start, m["kiln_resident_memory_bytes"]))
        print("  %5.0f s  rss %.1f MiB  running %d  waiting %d  %s" % (
            rss[-1][0], rss[-1][1] / 2**20, m["kiln_requests_running"],
            m["kiln_requests_waiting"], dict(counts)))
        sys.stdout.flush()
    for t in threads:
        t.join(120)

    final = common.metrics(host, port)
    deadline = time.monotonic() + 10
    while (final["kiln_requests_running"] or final["kiln_requests_waiting"]) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
        final = common.metrics(host, port)
    exit_code = server.stop()

    ok = True

    def check(passed, what):
        nonlocal ok
        ok = ok and passed
        print("%s %s" % ("ok  " if passed else "FAIL", what))

    print("\nsoak: %s" % counts)
    check(counts["accepted"] == counts["completed"] + counts["left"],
          "every accepted request completed (%d accepted, %d completed, %d "
          "left on purpose)" % (counts["accepted"], counts["completed"],
                                counts["left"]))
    check(counts["other"] == 0,
          "every rejected request was a 503 (%d rejected; others: %s)"
          % (counts["rejected"], others[:5]))
    check(counts["rejected"] > 0, "the load was over capacity (some 503s)")
    fifth = max(1, len(rss) // 5)
    first = max(v for _, v in rss[1:1 + fifth] or rss[:1])
    last = max(v for _, v in rss[-fifth:])
    check(last <= first * 1.10 or last - first <= 16 * 2**20,
          "resident memory flat (%.1f MiB early, %.1f MiB at the end)"
          % (first / 2**20, last / 2**20))
    check(final["kiln_requests_running"] == 0
          and final["kiln_requests_waiting"] == 0
          and final["kiln_kv_blocks_used"] == final["kiln_kv_blocks_cached"],
          "all KV blocks free at the end (%d used, %d of them prefix cache)"
          % (final["kiln_kv_blocks_used"], final["kiln_kv_blocks_cached"]))
    check(exit_code == 0, "the server drained and exited 0 on SIGTERM")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
