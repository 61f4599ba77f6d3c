#!/usr/bin/env python3
"""kiln serve against real HTTP clients on 127.0.0.1 (docs/server.md).

Starts `kiln serve` on a tiny synthetic artifact (ephemeral ports), talks to
it with Python's http.client and checks what a client sees: the endpoints,
streamed text equal to whole text for the same seed, 64 concurrent clients
answered with the greedy text each gets alone (and 32 sequences running at
once), 503 with Retry-After when the queue is full and recovery after,
a disconnecting client's blocks freed, deadlines, many malformed requests
answered with 4xx JSON errors, the chat prompt equal to `kiln
chat-template`'s rendering, API keys, CORS, settings precedence (file <
environment), the JSON log lines, and SIGTERM draining.

Usage: server_test.py --kiln build/bin/kiln --artifact tiny4k.kiln
                      --model tiny.gguf [--only NAME] [--serve BINARY]

--serve runs BINARY's `serve` instead of kiln's (scripts/tsan: the server
built with ThreadSanitizer, test/server/ServeArtifact.cpp); every server's
stderr is then also searched for ThreadSanitizer reports.
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = None


class Server:
    """A `kiln serve` process on a free port; its stderr kept line by line."""

    def __init__(self, *flags, env=None, config=None):
        cmd = [ARGS.serve, "serve", ARGS.artifact, "--port", "0", "--threads", "1"]
        if config is not None:
            path = os.path.join(ARGS.workdir, "kiln-%d.toml" % time.monotonic_ns())
            with open(path, "w") as f:
                f.write(config)
            cmd += ["--config", path]
        cmd += list(flags)
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=full_env,
                                     text=True)
        first = self.proc.stderr.readline()
        m = re.search(r"listening on http://([0-9.]+):(\d+)", first)
        if not m:
            rest = self.proc.stderr.read()
            raise RuntimeError("kiln serve did not start: " + first + rest)
        self.host, self.port = m.group(1), int(m.group(2))
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def connect(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers, body bytes) of one request on a new connection."""
        conn = self.connect(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            hdrs = {"Content-Type": "application/json"} if body is not None else {}
            hdrs.update(headers or {})
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def post(self, path, body, headers=None):
        status, hdrs, data = self.request("POST", path, body, headers)
        return status, hdrs, json.loads(data)

    def stream(self, path, body, headers=None):
        """The data events of a streamed response: parsed JSON, or "[DONE]"."""
        conn = self.connect()
        try:
            conn.request("POST", path, body=json.dumps(body),
                         headers=dict({"Content-Type": "application/json"},
                                      **(headers or {})))
            r = conn.getresponse()
            assert r.status == 200, (r.status, r.read())
            assert r.getheader("Content-Type").startswith("text/event-stream")
            events = []
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.decode().rstrip("\n")
                if not line.startswith("data: "):
                    continue
                data = line[len("data: "):]
                events.append(data if data == "[DONE]" else json.loads(data))
                if data == "[DONE]":
                    break
            return events
        finally:
            conn.close()

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200
        values = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def wait_for(self, predicate, seconds=5.0):
        """Polls /metrics until predicate(metrics) holds; returns them."""
        end = time.monotonic() + seconds
        while True:
            m = self.metrics()
            if predicate(m) or time.monotonic() > end:
                return m
            time.sleep(0.02)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("kiln serve did not exit %d s after %s"
                                 % (timeout, sig))
        self.reader.join(5)
        self.check_sanitizer()
        if code != 0:
            print("kiln serve exited %d; its last lines:\n  %s"
                  % (code, "\n  ".join(self.lines[-30:])))
        return code

    def check_sanitizer(self):
        """Fails on a sanitizer's report in the server's stderr."""
        reports = [i for i, l in enumerate(self.lines)
                   if "WARNING: ThreadSanitizer" in l or "ERROR: ThreadSanitizer" in l
                   or "ERROR: AddressSanitizer" in l]
        if reports:
            first = reports[0]
            raise AssertionError("the server reported:\n" +
                                 "\n".join(self.lines[first:first + 60]))

    def log_records(self):
        return [json.loads(l) for l in self.lines if l.startswith("{")]


def text_of(events, chat):
    out = ""
    for e in events:
        if e == "[DONE]" or not e.get("choices"):
            continue
        c = e["choices"][0]
        out += (c["delta"].get("content", "") if chat else c["text"])
    return out


#===------------------------------------------------------------------------===#
# Tests on the main server (concurrency 32)
#===------------------------------------------------------------------------===#

def test_endpoints(s):
    status, _, data = s.request("GET", "/health")
    assert status == 200 and json.loads(data)["status"] == "ok"
    status, _, data = s.request("GET", "/v1/models")
    models = json.loads(data)
    assert status == 200 and models["data"][0]["id"] == "tiny-test", models
    assert models["data"][0]["max_model_len"] == 4096
    status, _, tok = s.post("/tokenize", {"prompt": "Hello world"})
    assert status == 200 and tok["count"] == len(tok["tokens"]) > 1
    status, _, detok = s.post("/detokenize", {"tokens": tok["tokens"]})
    assert status == 200 and detok["prompt"] == "Hello world", detok
    status, hdrs, data = s.request("GET", "/")
    assert status == 200 and hdrs["Content-Type"].startswith("text/html")
    assert b"<html" in data and b"/v1/chat/completions" in data
    status, _, body = s.post("/v1/completions",
                             {"prompt": "Hi", "max_tokens": 5,
                              "temperature": 0, "ignore_eos": True})
    assert status == 200 and body["object"] == "text_completion"
    assert body["usage"]["completion_tokens"] == 5
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + 5
    assert body["choices"][0]["finish_reason"] == "length"
    # A stop string: generation ends before it, finish_reason "stop".
    status, _, body = s.post("/v1/completions",
                             {"prompt": "Hi", "max_tokens": 40, "seed": 3})
    text = body["choices"][0]["text"]
    if len(text) > 3:
        status, _, stopped = s.post("/v1/completions",
                                    {"prompt": "Hi", "max_tokens": 40,
                                     "seed": 3, "stop": text[2:4]})
        assert stopped["choices"][0]["text"] == text[:2], (text, stopped)
        assert stopped["choices"][0]["finish_reason"] == "stop"
    # Log-probabilities.
    status, _, body = s.post("/v1/completions",
                             {"prompt": "Hi", "max_tokens": 3, "logprobs": 2,
                              "ignore_eos": True})
    lp = body["choices"][0]["logprobs"]
    assert len(lp["tokens"]) == 3 and len(lp["top_logprobs"][0]) <= 2, lp
    metrics = s.metrics()
    for name in ["kiln_time_to_first_token_seconds_count",
                 "kiln_inter_token_latency_seconds_sum",
                 'kiln_time_to_first_token_seconds_bucket{le="+Inf"}',
                 "kiln_prompt_tokens_total", "kiln_generation_tokens_total",
                 "kiln_requests_waiting", "kiln_requests_running",
                 "kiln_kv_blocks_used", "kiln_kv_blocks_free",
                 "kiln_preemptions_total", "kiln_resident_memory_bytes"]:
        assert name in metrics, name
    assert metrics['kiln_http_requests_total{endpoint="/health",status="200"}'] >= 1
    assert metrics["kiln_resident_memory_bytes"] > 1e6


def test_stream_equals_whole(s):
    for chat in (False, True):
        path = "/v1/chat/completions" if chat else "/v1/completions"
        body = {"max_tokens": 48, "temperature": 0.9, "top_p": 0.95, "seed": 7,
                "ignore_eos": True}
        if chat:
            body["messages"] = [{"role": "user", "content": "Tell me a story"}]
        else:
            body["prompt"] = "Once upon a time"
        status, _, whole = s.post(path, body)
        assert status == 200, whole
        events = s.stream(path, dict(body, stream=True,
                                     stream_options={"include_usage": True}))
        assert events[-1] == "[DONE]"
        usage = events[-2]
        assert usage["choices"] == [] and usage["usage"] == whole["usage"], usage
        finish = [e["choices"][0]["finish_reason"] for e in events[:-2]]
        assert finish[-1] == "length" and all(f is None for f in finish[:-1])
        if chat:
            assert events[0]["choices"][0]["delta"]["role"] == "assistant"
            want = whole["choices"][0]["message"]["content"]
        else:
            want = whole["choices"][0]["text"]
        assert text_of(events, chat) == want, (text_of(events, chat), want)
        assert len(events) > 10  # token by token, not one chunk


def test_concurrent_clients(s):
    prompts = ["Story number %d:" % i for i in range(64)]
    body = lambda p: {"prompt": p, "max_tokens": 96, "temperature": 0,
                      "ignore_eos": True}
    solo = [s.post("/v1/completions", body(p))[2]["choices"][0]["text"]
            for p in prompts[:8]]
    barrier = threading.Barrier(64)

    def one(i):
        barrier.wait()
        status, _, r = s.post("/v1/completions", body(prompts[i]))
        assert status == 200, r
        return r["choices"][0]["text"]

    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        together = list(pool.map(one, range(64)))
    assert together[:8] == solo, "batched greedy text differs from solo"
    # The rest against solo runs too (after: they must not perturb the peak).
    for i in range(8, 64, 7):
        alone = s.post("/v1/completions", body(prompts[i]))[2]
        assert alone["choices"][0]["text"] == together[i], i
    m = s.metrics()
    assert m["kiln_requests_running_peak"] >= 32, m["kiln_requests_running_peak"]
    assert m.get('kiln_http_requests_total{endpoint="/v1/completions",status="503"}', 0) == 0


def bad_requests():
    """(path, body bytes) pairs that must each get a 4xx JSON error."""
    c, ch = "/v1/completions", "/v1/chat/completions"
    bodies = [
        (c, b""), (c, b"{"), (c, b"null"), (c, b"[]"), (c, b'"x"'), (c, b"42"),
        (c, b"\xff\xfe\x00"), (c, b'{"prompt": "x",}'), (c, b"{" * 10000),
        (c, b"[" * 100000), (c, b'{"prompt": "\\ud800"}x'),
        (c, b"{}"), (c, b'{"prompt": null}'), (c, b'{"prompt": 5}'),
        (c, b'{"prompt": {}}'), (c, b'{"prompt": [[1, 2]]}'),
        (c, b'{"prompt": ["a", "b"]}'), (c, b'{"prompt": [1, 99999]}'),
        (c, b'{"prompt": [-1]}'), (c, b'{"prompt": []}'), (c, b'{"prompt": ""}'),
        (c, b'{"prompt": "x", "max_tokens": -5}'),
        (c, b'{"prompt": "x", "max_tokens": 0}'),
        (c, b'{"prompt": "x", "max_tokens": 1e100}'),
        (c, b'{"prompt": "x", "max_tokens": 18446744073709551616}'),
        (c, b'{"prompt": "x", "max_tokens": 100000}'),
        (c, b'{"prompt": "x", "max_tokens": "10"}'),
        (c, b'{"prompt": "x", "temperature": -1}'),
        (c, b'{"prompt": "x", "temperature": "hot"}'),
        (c, b'{"prompt": "x", "top_p": 2}'), (c, b'{"prompt": "x", "top_k": -7}'),
        (c, b'{"prompt": "x", "min_p": 1.5}'),
        (c, b'{"prompt": "x", "repetition_penalty": 0}'),
        (c, b'{"prompt": "x", "presence_penalty": 9}'),
        (c, b'{"prompt": "x", "stop": [1]}'), (c, b'{"prompt": "x", "stop": {}}'),
        (c, b'{"prompt": "x", "seed": 1.5}'), (c, b'{"prompt": "x", "seed": []}'),
        (c, b'{"prompt": "x", "logit_bias": []}'),
        (c, b'{"prompt": "x", "logit_bias": {"-1": 1}}'),
        (c, b'{"prompt": "x", "logit_bias": {"1": "a"}}'),
        (c, b'{"prompt": "x", "logprobs": 50}'), (c, b'{"prompt": "x", "n": 3}'),
        (c, b'{"prompt": "x", "stream": 1}'),
        (c, b'{"prompt": "x", "stream_options": {"include_usage": true}}'),
        (c, b'{"prompt": "x", "model": "gpt-4"}'),
        (c, b'{"prompt": "x", "model": 7}'), (c, b'{"prompt": "x", "echo": true}'),
        (c, b'{"prompt": "x", "ignore_eos": "no"}'),
        (c, json.dumps({"prompt": [5] * 5000}).encode()),
        (c, json.dumps({"prompt": "a " * 5000}).encode()),
        (ch, b"{}"), (ch, b'{"messages": "hi"}'), (ch, b'{"messages": []}'),
        (ch, b'{"messages": [1]}'), (ch, b'{"messages": [{"role": "user"}]}'),
        (ch, b'{"messages": [{"content": "x"}]}'),
        (ch, b'{"messages": [{"role": 1, "content": "x"}]}'),
        (ch, b'{"messages": [{"role": "user", "content": [{"type": "image"}]}]}'),
        (ch, b'{"messages": [{"role": "user", "content": "x"}], "tools": [{}]}'),
        (ch, b'{"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3}'),
        (ch, json.dumps({"messages": [{"role": "user", "content": "b " * 5000}]}).encode()),
        ("/tokenize", b"{}"), ("/tokenize", b'{"prompt": 1}'),
        ("/tokenize", b'{"prompt": "x", "messages": []}'),
        ("/detokenize", b"{}"), ("/detokenize", b'{"tokens": "x"}'),
        ("/detokenize", b'{"tokens": [100000]}'),
        ("/v1/nothing", b"{}"),
    ]
    return bodies


def test_malformed_requests(s):
    for path, body in bad_requests():
        status, hdrs, data = s.request("POST", path, body)
        assert 400 <= status < 500, (path, body[:60], status, data)
        err = json.loads(data)["error"]
        assert isinstance(err["message"], str) and err["message"], data
        assert "type" in err and "param" in err and "code" in err, data
    # The param names the field.
    _, _, e = s.post("/v1/completions", {"prompt": "x", "max_tokens": -5})
    assert e["error"]["param"] == "max_tokens", e
    status, _, e = s.post("/v1/completions", {"prompt": "x", "model": "gpt-4"})
    assert status == 404 and e["error"]["code"] == "model_not_found", e
    _, _, e = s.post("/v1/completions", {"prompt": "a " * 5000})
    assert e["error"]["code"] == "context_length_exceeded", e
    # Over --max-body-bytes (64 KiB here): 413 with a JSON error.
    status, _, data = s.request("POST", "/v1/completions",
                                json.dumps({"prompt": "x" * 70000}))
    assert status == 413 and "max-body-bytes" in json.loads(data)["error"]["message"]
    # Not HTTP at all, and a request line too long: a 4xx answer at once,
    # never a hang. (A body shorter than its Content-Length:
    # test_truncated_body.)
    for raw in [b"GARBAGE\r\n\r\n",
                b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n"]:
        with socket.create_connection((s.host, s.port), timeout=5) as sock:
            sock.sendall(raw)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(65536)
            head, body = answer.split(b"\r\n\r\n", 1)
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            while len(body) < length:
                body += sock.recv(65536)
            assert head.startswith(b"HTTP/1.1 4"), head
            assert "message" in json.loads(body)["error"], body
    # Still healthy after all that.
    assert s.request("GET", "/health")[0] == 200


def test_chat_template(s):
    conversation = {"messages": [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "Hello there!"}],
                    "add_generation_prompt": True}
    path = os.path.join(ARGS.workdir, "conversation.json")
    with open(path, "w") as f:
        json.dump(conversation, f)
    rendered = subprocess.run(
        [ARGS.kiln, "chat-template", os.path.join(HERE, "chatml.jinja"), path,
         "--bos-token", "<s>", "--eos-token", "</s>"],
        check=True, capture_output=True, text=True).stdout
    status, _, body = s.post("/v1/chat/completions",
                             {"messages": conversation["messages"],
                              "max_tokens": 2, "return_prompt": True})
    assert status == 200, body
    assert body["prompt"] == rendered, (body["prompt"], rendered)
    ids = subprocess.run([ARGS.kiln, "tokenize", "--tokenizer", ARGS.model,
                          rendered], check=True, capture_output=True,
                         text=True).stdout.split()
    assert body["usage"]["prompt_tokens"] == len(ids), (body["usage"], ids)
    _, _, tok = s.post("/tokenize", {"messages": conversation["messages"]})
    assert tok["tokens"] == [int(i) for i in ids] and tok["prompt"] == rendered


def test_request_log(s):
    s.post("/v1/completions", {"prompt": "SECRET-PROMPT-TEXT", "max_tokens": 4,
                               "ignore_eos": True})
    time.sleep(0.1)
    assert not any("SECRET-PROMPT-TEXT" in l for l in s.lines)
    records = [r for r in s.log_records() if r.get("endpoint") == "/v1/completions"
               and r.get("status") == 200]
    last = records[-1]
    for key in ["id", "status", "prompt_tokens", "generated_tokens", "ttft_s",
                "total_s", "finish_reason"]:
        assert key in last, (key, last)
    assert last["generated_tokens"] == 4 and last["finish_reason"] == "length"


#===------------------------------------------------------------------------===#
# Tests on servers of their own
#===------------------------------------------------------------------------===#

def leave_and_check_freed(s, label, stream):
    """Starts a 4000-token request, closes its connection once tokens are
    coming, and checks that the request is cancelled and its blocks freed
    long before it would have finished."""
    before = s.metrics()
    generated = "kiln_generation_tokens_total"
    cancelled = 'kiln_engine_requests_total{outcome="cancelled"}'
    conn = s.connect()
    conn.request("POST", "/v1/completions",
                 body=json.dumps({"prompt": "Leave", "max_tokens": 4000,
                                  "ignore_eos": True, "stream": stream}),
                 headers={"Content-Type": "application/json"})
    if stream:
        r = conn.getresponse()
        for _ in range(5):
            r.readline()
    busy = s.wait_for(lambda m: m["kiln_requests_running"] == 1
                      and m[generated] > before[generated] + 20)
    assert busy["kiln_requests_running"] == 1, busy["kiln_requests_running"]
    assert busy["kiln_kv_blocks_used"] > busy["kiln_kv_blocks_cached"]
    left = time.monotonic()
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    m = s.wait_for(lambda m: m["kiln_requests_running"] == 0
                   and m["kiln_kv_blocks_used"] == m["kiln_kv_blocks_cached"])
    assert m["kiln_requests_running"] == 0, m
    assert m["kiln_kv_blocks_used"] == m["kiln_kv_blocks_cached"], m
    assert m[cancelled] == before[cancelled] + 1, (m[cancelled], before[cancelled])
    assert m[generated] - before[generated] < 3500
    print("  %s disconnect -> blocks free in %.0f ms"
          % (label, (time.monotonic() - left) * 1e3))


def test_backpressure_and_disconnect():
    s = Server("--concurrency", "2", "--max-queue", "2")
    try:
        long = {"prompt": "Busy", "max_tokens": 3000, "ignore_eos": True}
        barrier = threading.Barrier(12)

        def one(_):
            barrier.wait()
            status, hdrs, data = s.request("POST", "/v1/completions", long)
            return status, hdrs, json.loads(data)

        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            results = list(pool.map(one, range(12)))
        statuses = sorted(r[0] for r in results)
        assert set(statuses) <= {200, 503}, statuses
        # Two run and up to two wait; requests the engine has not yet taken
        # in count as waiting too, so a burst may admit fewer than four.
        assert 2 <= statuses.count(200) <= 4, statuses
        assert statuses.count(503) >= 8, statuses
        for status, hdrs, body in results:
            if status == 503:
                assert hdrs.get("Retry-After") == "1", hdrs
                assert body["error"]["code"] == "server_busy", body
        # Recovery: the next request is answered.
        status, _, body = s.post("/v1/completions",
                                 {"prompt": "Again", "max_tokens": 4})
        assert status == 200, body

        # A client that leaves mid-stream: its request is cancelled and its
        # blocks freed long before its 4000 tokens would have been done.
        leave_and_check_freed(s, "streaming", stream=True)
        # A client that leaves while it waits for a whole (non-streamed)
        # response: nothing is written until the end, so the handler asks
        # the socket every 50 ms; the request is cancelled as a stream's is,
        # and its log line says so.
        leave_and_check_freed(s, "non-streaming", stream=False)
        end = time.monotonic() + 5
        while not any(r.get("finish_reason") == "disconnected"
                      and r.get("status") == 499 for r in s.log_records()):
            assert time.monotonic() < end, s.lines[-3:]
            time.sleep(0.02)
    finally:
        assert s.stop() == 0


def test_truncated_body():
    # A body shorter than its Content-Length: the server cannot tell a slow
    # client from one that stopped, so it waits --io-timeout (0.5 s here,
    # 10 s by default), then answers 400 and closes. Never a hang.
    s = Server("--io-timeout", "0.5")
    try:
        with socket.create_connection((s.host, s.port), timeout=10) as sock:
            start = time.monotonic()
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: kiln\r\n"
                         b"Content-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{\"prompt\": ")
            answer = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
            waited = time.monotonic() - start
        assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
        assert 0.4 <= waited < 5, waited
        assert s.request("GET", "/health")[0] == 200
    finally:
        assert s.stop() == 0


def test_deadline():
    s = Server("--request-timeout", "0.3")
    try:
        long = {"prompt": "Slow", "max_tokens": 4000, "ignore_eos": True}
        status, _, body = s.post("/v1/completions", long)
        assert status == 504 and body["error"]["code"] == "request_timeout", body
        events = s.stream("/v1/completions", dict(long, stream=True))
        assert events[-1] == "[DONE]" and "error" in events[-2], events[-2:]
        assert events[-2]["error"]["code"] == "request_timeout"
        m = s.wait_for(lambda m: m["kiln_requests_running"] == 0)
        assert m["kiln_requests_running"] == 0
    finally:
        assert s.stop() == 0


def test_auth_cors_and_settings():
    # The file sets api_key and cors_origin; KILN_API_KEY overrides the key.
    config = 'api_key = "file-key"\ncors_origin = "http://example.test"\n'
    s = Server(config=config, env={"KILN_API_KEY": "env-key"})
    try:
        assert s.request("GET", "/health")[0] == 200  # exempt
        assert s.request("GET", "/")[0] == 200  # exempt: the page asks for it
        status, hdrs, data = s.request("GET", "/v1/models")
        assert status == 401 and hdrs.get("WWW-Authenticate") == "Bearer"
        assert json.loads(data)["error"]["code"] == "invalid_api_key"
        for key in ["file-key", "env-ke", "env-key2", ""]:
            status = s.request("GET", "/v1/models",
                               headers={"Authorization": "Bearer " + key})[0]
            assert status == 401, key
        status, hdrs, _ = s.request("GET", "/v1/models",
                                    headers={"Authorization": "Bearer env-key",
                                             "Origin": "http://example.test"})
        assert status == 200
        assert hdrs.get("Access-Control-Allow-Origin") == "http://example.test"
        status, hdrs, _ = s.request(
            "OPTIONS", "/v1/chat/completions",
            headers={"Origin": "http://example.test",
                     "Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "authorization"})
        assert status == 204, status
        assert "POST" in hdrs["Access-Control-Allow-Methods"]
        assert "Authorization" in hdrs["Access-Control-Allow-Headers"]
    finally:
        assert s.stop() == 0
    # Without cors_origin: no CORS header at all.
    s = Server()
    try:
        _, hdrs, _ = s.request("GET", "/v1/models",
                               headers={"Origin": "http://example.test"})
        assert "Access-Control-Allow-Origin" not in hdrs
    finally:
        assert s.stop() == 0


def test_sigterm_drains():
    s = Server("--drain-seconds", "20")
    results = {}

    def client():
        results["events"] = s.stream("/v1/completions",
                                     {"prompt": "Drain", "max_tokens": 3000,
                                      "ignore_eos": True, "stream": True})

    t = threading.Thread(target=client)
    t.start()
    s.wait_for(lambda m: m["kiln_requests_running"] == 1)
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    # Not accepting any more.
    try:
        status = s.request("GET", "/health", timeout=2)[0]
        assert status == 503, status
    except (ConnectionRefusedError, ConnectionResetError, socket.timeout):
        pass
    t.join(30)
    events = results["events"]
    assert events[-1] == "[DONE]", events[-2:]
    assert events[-2]["choices"][0]["finish_reason"] == "length", events[-2]
    assert s.stop() == 0

    # A drain too short for the request: it is cancelled with an error
    # event, and the server still exits 0.
    s = Server("--drain-seconds", "0.1")
    t = threading.Thread(target=client)
    t.start()
    s.wait_for(lambda m: m["kiln_requests_running"] == 1)
    s.proc.send_signal(signal.SIGTERM)
    t.join(30)
    events = results["events"]
    assert events[-1] == "[DONE]" and events[-2]["error"]["code"] == "shutting_down", events[-2:]
    code = s.proc.wait(30)
    s.reader.join(5)
    s.check_sanitizer()
    assert code == 0, (code, s.lines[-10:])


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--artifact", required=True)
    parser.add_argument("--model", required=True,
                        help="the model file the artifact came from (kiln tokenize)")
    parser.add_argument("--only", help="run only tests whose name contains this")
    parser.add_argument("--serve", help="the binary whose `serve` runs the "
                        "servers (default: --kiln)")
    ARGS = parser.parse_args()
    ARGS.serve = ARGS.serve or ARGS.kiln
    ARGS.workdir = tempfile.mkdtemp(prefix="kiln-server-test-")

    shared = [test_endpoints, test_stream_equals_whole, test_concurrent_clients,
              test_malformed_requests, test_chat_template, test_request_log]
    alone = [test_backpressure_and_disconnect, test_truncated_body, test_deadline,
             test_auth_cors_and_settings, test_sigterm_drains]
    selected = lambda f: not ARGS.only or ARGS.only in f.__name__
    failures = 0
    start = time.monotonic()
    main_server = None
    if any(selected(f) for f in shared):
        main_server = Server("--model-name", "tiny-test", "--max-body-bytes",
                             "64KiB", "--chat-template",
                             os.path.join(HERE, "chatml.jinja"))
    for test in shared + alone:
        if not selected(test):
            continue
        t0 = time.monotonic()
        try:
            test(main_server) if test in shared else test()
            print("PASS %s (%.1f s)" % (test.__name__, time.monotonic() - t0))
        except Exception as e:  # report every failing test, then fail
            failures += 1
            import traceback
            traceback.print_exc()
            print("FAIL %s: %r" % (test.__name__, e))
    if main_server:
        code = main_server.stop()
        if code != 0:
            failures += 1
            print("FAIL: the main server exited %d" % code)
    print("%d failed; %.1f s" % (failures, time.monotonic() - start))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
