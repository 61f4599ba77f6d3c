#!/usr/bin/env python3
"""Renders every chat template over generated conversations with Python's
jinja2 and with `kiln chat-template`, and fails on any difference.

jinja2 is set up as Hugging Face transformers' apply_chat_template sets it up
(and as ../shared/chat-templates/renderings.json was made): an
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
loopcontrols extension, globals raise_exception and strftime_now (fixed at
the --date given to kiln too), and tojson as json.dumps(ensure_ascii=False).

The conversations are made here, from a fixed seed, so the engine cannot be
tuned to fixed outputs: roles in usual and unusual orders, unicode, empty,
multi-line and whitespace-padded contents, text that looks like template
syntax or control tokens; no tools. Where jinja2 fails, kiln must fail too.

Exit status: 0 when all agree, 1 on a difference, 77 (a skip, for ctest)
when jinja2 is missing outside CI; in CI (CI=true) a missing jinja2 fails.
"""

import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile

DATE = datetime.datetime(2026, 1, 2)

TEXTS = [
    "Hello!",
    "What is 2+2?",
    "",
    "  padded with spaces  ",
    "\n\nleading and trailing newlines\n\n",
    "line one\nline two\n\nline four",
    "tabs\tand\r\nwindows line ends\r\n",
    "caf\u00e9 na\u00efve \u00fcber stra\u00dfe",
    "\u4f60\u597d\uff0c\u4e16\u754c\u3002\u65e5\u672c\u8a9e\u3082\u3002",
    "emoji \U0001F600\U0001F680 and \u2764\ufe0f",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u00a0non-breaking and ideographic spaces\u3000",
    "combining e\u0301 and \u0410\u0411\u0412 \u03b1\u03b2\u03b3",
    'quotes \' " and backslashes \\ \\n',
    "looks like a tag: {{ messages }} {% if %} {# no #}",
    "special-looking <|im_start|>user<|im_end|> <s> </s> [INST]",
    '{"json": [1, 2, {"a": null}]}',
    "Write a haiku about\nthe sea.",
    "   ",
    "The answer is 4.",
    "A" * 300,
]

SYSTEMS = [
    "You are a helpful assistant.",
    "",
    "Answer in French.\nBe brief.",
    "  Padded system prompt.  ",
    "Syst\u00e8me: r\u00e9ponds en fran\u00e7ais \U0001F1EB\U0001F1F7",
]

TOKENS = [("<s>", "</s>"), ("<|begin_of_text|>", "<|eot_id|>"), ("", "")]


def make_conversations(count, seed):
    rng = random.Random(seed)
    shapes = [
        "user",
        "system-user",
        "alternating",
        "system-alternating",
        "ends-with-assistant",
        "assistant-first",
        "two-users",
    ]
    conversations = []
    for i in range(count):
        shape = shapes[i % len(shapes)]
        messages = []
        if shape.startswith("system"):
            messages.append({"role": "system", "content": rng.choice(SYSTEMS)})
        turns = rng.randint(1, 4)
        roles = []
        if shape in ("user", "system-user"):
            roles = ["user"]
        elif shape in ("alternating", "system-alternating"):
            roles = ["user", "assistant"] * turns + ["user"]
        elif shape == "ends-with-assistant":
            roles = ["user", "assistant"] * turns
        elif shape == "assistant-first":
            roles = ["assistant", "user"]
        elif shape == "two-users":
            roles = ["user", "user"]
        for role in roles:
            messages.append({"role": role, "content": rng.choice(TEXTS)})
        bos, eos = TOKENS[i % len(TOKENS)]
        conversations.append({
            "name": "generated-%d-%s" % (i, shape),
            "messages": messages,
            "add_generation_prompt": shape != "ends-with-assistant"
            and rng.random() < 0.8,
            "bos": bos,
            "eos": eos,
        })
    return conversations


def jinja_environment(jinja2):
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None,
               sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return DATE.strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kiln", required=True, help="the kiln binary")
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    parser.add_argument(
        "--templates",
        default=os.environ.get("KILN_TEST_CHAT_TEMPLATES") or os.path.join(
            root, "..", "shared", "chat-templates"),
        help="folder of .jinja chat templates (default: "
        "$KILN_TEST_CHAT_TEMPLATES, else ../shared/chat-templates beside "
        "the checkout)")
    parser.add_argument("--count", type=int, default=28,
                        help="conversations to generate (default 28)")
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()

    try:
        import jinja2
    except ImportError:
        message = ("compare_with_jinja2: Python's jinja2 is missing for %s; "
                   "install Debian's python3-jinja2 (scripts/setup does)"
                   % sys.executable)
        print("*" * 72 + "\n" + message + "\n" + "*" * 72, file=sys.stderr)
        return 1 if os.environ.get("CI") == "true" else 77

    names = []
    if os.path.isdir(args.templates):
        names = sorted(n for n in os.listdir(args.templates)
                       if n.endswith(".jinja"))
    if not names:
        print("compare_with_jinja2: no .jinja files in %s; set "
              "KILN_TEST_CHAT_TEMPLATES or put shared/ beside the checkout"
              % args.templates, file=sys.stderr)
        return 1 if os.environ.get("CI") == "true" else 77

    env = jinja_environment(jinja2)
    conversations = make_conversations(args.count, args.seed)
    print("jinja2 %s (%s), %d templates, %d conversations"
          % (jinja2.__version__, sys.executable, len(names),
             len(conversations)))
    passed = failed = refused = 0
    with tempfile.TemporaryDirectory() as tmp:
        for conversation in conversations:
            path = os.path.join(tmp, conversation["name"] + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"messages": conversation["messages"],
                           "add_generation_prompt":
                           conversation["add_generation_prompt"]},
                          f, ensure_ascii=False)
            for name in names:
                template_path = os.path.join(args.templates, name)
                with open(template_path, encoding="utf-8") as f:
                    source = f.read()
                try:
                    expected = env.from_string(source).render(
                        messages=conversation["messages"],
                        add_generation_prompt=conversation[
                            "add_generation_prompt"],
                        bos_token=conversation["bos"],
                        eos_token=conversation["eos"])
                    error = None
                except Exception as e:  # jinja2 refused: kiln must too
                    expected, error = None, "%s: %s" % (type(e).__name__, e)
                run = subprocess.run(
                    [args.kiln, "chat-template", template_path, path,
                     "--date", DATE.strftime("%Y-%m-%d"),
                     "--bos-token", conversation["bos"],
                     "--eos-token", conversation["eos"]],
                    capture_output=True)
                label = "%s over %s" % (name, conversation["name"])
                if error is not None:
                    if run.returncode != 0 and not run.stdout:
                        passed += 1
                        refused += 1
                        continue
                    print("FAIL %s: jinja2 fails (%s) but kiln exited %d "
                          "with %d bytes" % (label, error, run.returncode,
                                             len(run.stdout)))
                    failed += 1
                    continue
                got = run.stdout.decode("utf-8", errors="replace")
                if run.returncode == 0 and got == expected:
                    passed += 1
                    continue
                failed += 1
                if run.returncode != 0:
                    print("FAIL %s: kiln failed: %s" % (
                        label, run.stderr.decode(errors="replace").strip()))
                else:
                    at = first_difference(got, expected)
                    print("FAIL %s: differs at character %d:\n"
                          "  kiln:   %r\n  jinja2: %r" % (
                              label, at, got[max(0, at - 40):at + 40],
                              expected[max(0, at - 40):at + 40]))
    print("(%d of the agreements are conversations both refuse)" % refused)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
