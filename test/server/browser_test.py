#!/usr/bin/env python3
"""kiln serve's web page in a real browser: type a prompt, see text stream.

Drives Debian's headless chromium through chromedriver with the W3C
WebDriver HTTP protocol (urllib only): opens the page at /, sets max_tokens,
types a prompt into #prompt, clicks #send and watches the assistant's
bubble in #messages grow while the reply streams, and the live figures
table (#stats) fill from /metrics.

Needs `chromium` and `chromium-driver` (apt-get install chromium
chromium-driver; scripts/setup does not install them: they are large).
Without them it prints NOT RUN and exits 77 (ctest: skipped), except in CI
(CI=true) where that is a failure.

Usage: browser_test.py --kiln build/bin/kiln --artifact tiny4k.kiln
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    def __init__(self, url):
        self.url = url
        self.session = None

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError("WebDriver %s %s: %s" % (method, path,
                                                        e.read()[:500]))

    def start(self, binary):
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": binary, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run"]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def s(self, path, body=None, method="POST"):
        return self.call(method, "/session/%s%s" % (self.session, path), body)

    def find(self, css):
        return self.s("/element", {"using": "css selector", "value": css})[ELEMENT]

    def js(self, script):
        return self.s("/execute/sync", {"script": script, "args": []})

    def quit(self):
        if self.session:
            try:
                self.call("DELETE", "/session/" + self.session)
            except Exception:
                pass


def not_run(why):
    print("NOT RUN: the browser test needs %s (apt-get install chromium "
          "chromium-driver)" % why)
    if os.environ.get("CI") == "true":
        print("FAIL: in CI the browser test must run")
        return 1
    return 77


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", required=True)
    p.add_argument("--artifact", required=True)
    a = p.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium:
        return not_run("chromium")
    if not driver:
        return not_run("chromedriver")

    server = subprocess.Popen([a.kiln, "serve", a.artifact, "--port", "0",
                               "--threads", "1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    m = re.search(r"listening on (http://[0-9.]+:\d+)", server.stderr.readline())
    if not m:
        server.kill()
        print("FAIL: kiln serve did not start")
        return 1
    page = m.group(1) + "/"
    port = free_port()
    chromedriver = subprocess.Popen([driver, "--port=%d" % port],
                                    stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
    wd = WebDriver("http://127.0.0.1:%d" % port)
    try:
        for _ in range(100):
            try:
                wd.call("GET", "/status")
                break
            except Exception:
                time.sleep(0.1)
        wd.start(chromium)
        wd.s("/url", {"url": page})
        # A long reply (about a second on the test model) so that it is
        # seen growing; greedy so that it is the same every run.
        wd.js("document.getElementById('max_tokens').value = '3000';"
              "document.getElementById('temperature').value = '0';")
        wd.s("/element/%s/value" % wd.find("#prompt"),
             {"text": "Hello from the browser test"})
        wd.s("/element/%s/click" % wd.find("#send"), {})
        lengths = []
        end = time.monotonic() + 30
        while time.monotonic() < end:
            state = wd.js(
                "const a = document.querySelectorAll('#messages .assistant');"
                "const e = document.querySelectorAll('#messages .error');"
                "return [a.length ? a[a.length - 1].textContent.length : 0,"
                "        e.length ? e[0].textContent : '',"
                "        document.getElementById('send').disabled];")
            length, error, busy = state
            if error:
                raise AssertionError("the page shows an error: " + error)
            if length and (not lengths or lengths[-1] != length):
                lengths.append(length)
            if lengths and not busy:
                break
            time.sleep(0.02)
        user = wd.js("return document.querySelector('#messages .user')"
                     ".textContent;")
        assert user == "Hello from the browser test", user
        assert lengths, "no reply text appeared"
        assert len(lengths) >= 2, "the reply did not stream: %s" % lengths
        # The live figures come from /metrics within a poll or two.
        stats = ""
        for _ in range(60):
            stats = wd.js("return document.getElementById('stats').textContent;")
            if "tokens generated" in stats:
                break
            time.sleep(0.1)
        assert "tokens generated" in stats, stats
        print("PASS: the reply streamed in %d steps to %d characters; "
              "figures: %s" % (len(lengths), lengths[-1], stats[:80]))
        return 0
    except Exception as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        wd.quit()
        chromedriver.terminate()
        chromedriver.wait(10)
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    sys.exit(main())
