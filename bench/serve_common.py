"""Shared pieces of bench/serve_load.py and bench/serve_soak.py.

A synthetic model made and compiled with `kiln`, a `kiln serve` process on a
free port, and the few HTTP calls both scripts make (Python's standard
library only: no pip on these machines).
"""

import http.client
import json
import os
import re
import subprocess
import threading
import time


def make_artifact(kiln, workdir, config, context):
    """A synthetic model (kiln make-model) and its artifact; their paths."""
    os.makedirs(workdir, exist_ok=True)
    gguf = os.path.join(workdir, "%s.gguf" % config)
    artifact = os.path.join(workdir, "%s-%d.kiln" % (config, context))
    env = dict(os.environ, KILN_CACHE_DIR=os.path.join(workdir, "kiln-cache"))
    if not os.path.exists(gguf):
        subprocess.run([kiln, "make-model", "--config", config, "--seed", "1",
                        "-o", gguf], check=True, stdout=subprocess.DEVNULL)
    if not os.path.exists(artifact):
        cmd = [kiln, "compile", gguf, "-o", artifact, "-q"]
        if context:
            cmd += ["--context", str(context)]
        subprocess.run(cmd, check=True, env=env)
    return gguf, artifact


class KilnServer:
    """`kiln serve ARTIFACT --port 0 FLAGS...`; stderr (the request log) is
    kept in a file so a long run does not fill a pipe."""

    def __init__(self, kiln, artifact, flags, log_path):
        self.log = open(log_path, "w+")
        self.proc = subprocess.Popen(
            [kiln, "serve", artifact, "--port", "0"] + list(flags),
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with open(log_path) as f:
                m = re.search(r"listening on http://([0-9.]+):(\d+)", f.read())
            if m:
                self.host, self.port = m.group(1), int(m.group(2))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("kiln serve did not start; see " + log_path)

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(60)
        self.log.close()
        return code


def wait_healthy(host, port, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection(host, port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("no healthy server at %s:%d" % (host, port))


def metrics(host, port):
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.request("GET", "/metrics")
    values = {}
    for line in conn.getresponse().read().decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    conn.close()
    return values


def stream_completion(host, port, body, timeout=600, leave_after=None):
    """POSTs a streamed /v1/completions. Returns (status, ttft seconds or
    None, chunks with text, finish_reason or None, seconds). With
    leave_after=N the connection is closed after N chunks (a client that
    goes away)."""
    start = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", "/v1/completions",
                     body=json.dumps(dict(body, stream=True)),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        if r.status != 200:
            r.read()
            return r.status, None, 0, None, time.monotonic() - start
        ttft, chunks, finish = None, 0, None
        while True:
            line = r.readline()
            if not line:
                break
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                break
            event = json.loads(data)
            if "error" in event:
                finish = "error:" + str(event["error"].get("code"))
                continue
            choice = event["choices"][0] if event.get("choices") else None
            if choice is None:
                continue
            if choice.get("text"):
                chunks += 1
                if ttft is None:
                    ttft = time.monotonic() - start
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
            if leave_after is not None and chunks >= leave_after:
                conn.sock.close()
                return 200, ttft, chunks, "left", time.monotonic() - start
        return 200, ttft, chunks, finish, time.monotonic() - start
    finally:
        conn.close()


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def run_in_threads(count, target):
    threads = [threading.Thread(target=target, args=(i,), daemon=True)
               for i in range(count)]
    for t in threads:
        t.start()
    return threads
