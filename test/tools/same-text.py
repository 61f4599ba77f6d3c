#!/usr/bin/env python3
"""Exits 0 if two files hold the same text, allowing one trailing newline of
difference; otherwise prints where they first differ and exits 1.

Usage: same-text.py EXPECTED ACTUAL [--prefix]
  --prefix  ACTUAL (minus its trailing newline) must be a prefix of EXPECTED.
"""
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    prefix = "--prefix" in sys.argv
    expected = open(args[0], "rb").read()
    actual = open(args[1], "rb").read()
    e = expected[:-1] if expected.endswith(b"\n") else expected
    a = actual[:-1] if actual.endswith(b"\n") else actual
    ok = e.startswith(a) if prefix else e == a
    if ok:
        return 0
    n = next((i for i in range(min(len(e), len(a))) if e[i] != a[i]),
             min(len(e), len(a)))
    sys.stderr.write("texts differ at byte %d:\n  expected: %r\n  actual:   %r\n"
                     % (n, e[max(0, n - 40):n + 40], a[max(0, n - 40):n + 40]))
    return 1


if __name__ == "__main__":
    sys.exit(main())
