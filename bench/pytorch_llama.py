#!/usr/bin/python3
"""The competitor in bench/compare.sh: the same Llama in PyTorch eager mode.

Reads a llama2.c checkpoint (legacy format, as `kiln make-model --format
llama2c` writes it), runs llama2.c's forward pass with a KV cache in PyTorch
(Debian's python3-torch: OpenBLAS / oneDNN matmuls), and prints prefill and
decode timings as JSON lines, one per (phase, tokens):

  python3 bench/pytorch_llama.py MODEL.bin --threads 2 --prompt-tokens 128,512 \
      --gen-tokens 128 [--dtype f32|bf16] [--repeat 5]

This is what a user would write instead of Kiln, given its fastest paths:

- One process, one thread count. OpenBLAS and OpenMP read their thread
  counts when the library loads, so this script sets OMP_NUM_THREADS and
  OPENBLAS_NUM_THREADS to --threads before it imports torch, and calls
  torch.set_num_threads too.
- One-row linears (decode) take the faster of a matrix-vector product
  (torch.mv: BLAS sgemv) and F.linear (a one-row GEMM; oneDNN for bf16),
  timed on the model's own weights at start-up; the choice is printed.
  (`h @ W.T` on one row goes to sgemm, which OpenBLAS runs up to 10x slower.)
- Timed as `kiln bench` times: a warm-up, then --repeat timed runs, the
  median quoted; every run's seconds are printed.
- Before timing, one matrix product is checked against float64, so a BLAS
  kernel chosen for the wrong CPU (OPENBLAS_CORETYPE) fails loudly.
"""
import argparse
import json
import os
import statistics
import struct
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--prompt-tokens", default="128,512")
    p.add_argument("--gen-tokens", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    p.add_argument("--repeat", type=int, default=5)
    return p.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # Before numpy and torch load OpenBLAS and OpenMP.
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def load_llama2c(path, dtype):
    with open(path, "rb") as f:
        dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack("<7i", f.read(28))
        data = np.fromfile(f, dtype=np.float32)
    shared = vocab > 0
    vocab = abs(vocab)
    head = dim // heads
    kv = kv_heads * head
    offset = 0

    def take(*shape):
        nonlocal offset
        n = int(np.prod(shape))
        t = torch.from_numpy(data[offset:offset + n].reshape(shape).copy())
        offset += n
        return t

    w = {"emb": take(vocab, dim), "att_norm": take(layers, dim),
         "wq": take(layers, dim, dim), "wk": take(layers, kv, dim),
         "wv": take(layers, kv, dim), "wo": take(layers, dim, dim),
         "ffn_norm": take(layers, dim), "w1": take(layers, hidden, dim),
         "w2": take(layers, dim, hidden), "w3": take(layers, hidden, dim),
         "final_norm": take(dim)}
    offset += seq * head  # freq_cis_real, freq_cis_imag (unused)
    w["cls"] = w["emb"] if shared else take(vocab, dim)
    for key in ("wq", "wk", "wv", "wo", "w1", "w2", "w3", "cls"):
        w[key] = w[key].to(dtype)
    cfg = dict(dim=dim, hidden=hidden, layers=layers, heads=heads,
               kv_heads=kv_heads, vocab=vocab, seq=seq, head=head)
    return cfg, w


def rms_norm(x, g, eps=1e-5):
    return g * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))


def rope(x, pos, head):
    # llama2.c: pairs (2i, 2i+1) rotated by pos * 10000^(-2i/head)
    freq = 1.0 / (10000.0 ** (torch.arange(0, head, 2, dtype=torch.float32) / head))
    angle = pos[:, None].float() * freq[None, :]
    c, s = torch.cos(angle)[:, None, :], torch.sin(angle)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def one_row_mv(h, w):
    return torch.mv(w, h[0]).unsqueeze(0)


def choose_one_row(w, dtype):
    """The faster one-row linear for `dtype`, timed on a layer's weights."""
    h = torch.randn(1, w.shape[1]).to(dtype)
    best = None
    for name, fn in (("mv", one_row_mv), ("linear", F.linear)):
        fn(h, w)
        start = time.perf_counter()
        for _ in range(50):
            fn(h, w)
        seconds = time.perf_counter() - start
        if best is None or seconds < best[0]:
            best = (seconds, name, fn)
    return best[1], best[2]


class Model:
    def __init__(self, cfg, w, dtype, one_row):
        self.cfg, self.w, self.dtype = cfg, w, dtype
        self.one_row = one_row
        c = cfg
        self.k = torch.zeros(c["layers"], c["seq"], c["kv_heads"], c["head"])
        self.v = torch.zeros_like(self.k)

    def linear(self, h, weight):
        return self.one_row(h, weight) if h.shape[0] == 1 else F.linear(h, weight)

    def step(self, tokens, start):
        c, w, dt = self.cfg, self.w, self.dtype
        lin = self.linear
        T = tokens.shape[0]
        pos = torch.arange(start, start + T)
        x = w["emb"][tokens].float()
        group = c["heads"] // c["kv_heads"]
        mask = torch.full((T, start + T), float("-inf")).triu(start + 1)
        for l in range(c["layers"]):
            h = rms_norm(x, w["att_norm"][l]).to(dt)
            q = lin(h, w["wq"][l]).float().view(T, c["heads"], c["head"])
            k = lin(h, w["wk"][l]).float().view(T, c["kv_heads"], c["head"])
            v = lin(h, w["wv"][l]).float().view(T, c["kv_heads"], c["head"])
            q, k = rope(q, pos, c["head"]), rope(k, pos, c["head"])
            self.k[l, start:start + T], self.v[l, start:start + T] = k, v
            keys = self.k[l, :start + T].repeat_interleave(group, dim=1)
            vals = self.v[l, :start + T].repeat_interleave(group, dim=1)
            att = torch.einsum("thd,shd->hts", q, keys) / c["head"] ** 0.5
            att = torch.softmax(att + mask, dim=-1)
            o = torch.einsum("hts,shd->thd", att, vals).reshape(T, c["dim"])
            x = x + lin(o.to(dt), w["wo"][l]).float()
            h = rms_norm(x, w["ffn_norm"][l]).to(dt)
            g = F.silu(lin(h, w["w1"][l])) * lin(h, w["w3"][l])
            x = x + lin(g, w["w2"][l]).float()
        last = rms_norm(x[-1:], w["final_norm"]).to(dt)
        return lin(last, w["cls"]).float()


def timed_runs(repeat, run):
    """A warm-up, then `repeat` runs of `run`, which returns the seconds
    its timed part took; every run's seconds."""
    run()
    return [run() for _ in range(repeat)]


def loaded_blas():
    """The BLAS library this process loaded (OpenBLAS's pthread or OpenMP
    build), from its memory map."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps
                 if os.path.basename(line.split()[-1]).startswith("libopenblas")}
    return ", ".join(sorted(paths)) or "not OpenBLAS"


def check_blas(dtype):
    """One product against float64: a wrong BLAS kernel must not be timed."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((67, 300))
    b = rng.standard_normal((300, 129))
    for x, y in ((a, b), (a[:1], b)):
        want = x @ b
        got = (torch.from_numpy(x).float().to(dtype) @
               torch.from_numpy(y).float().to(dtype)).double().numpy()
        tol = 1e-4 if dtype == torch.float32 else 0.1
        err = np.abs(got - want).max() / np.abs(want).max()
        if not err < tol:
            sys.exit(f"pytorch_llama.py: {dtype} matmul is wrong (relative error "
                     f"{err:.2g}); OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')} "
                     "may name kernels this CPU cannot run correctly")


def main():
    a = ARGS
    dtype = torch.float32 if a.dtype == "f32" else torch.bfloat16
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    check_blas(dtype)
    cfg, w = load_llama2c(a.model, dtype)
    one_row_name, one_row = choose_one_row(w["w1"][0], dtype)
    rng = np.random.default_rng(1)
    model = Model(cfg, w, dtype, one_row)
    common = {"engine": "pytorch", "torch": torch.__version__, "dtype": a.dtype,
              "threads": a.threads, "torch_threads": torch.get_num_threads(),
              "blas": loaded_blas(),
              "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
              "one_row": one_row_name, "repeat": a.repeat}

    def report(phase, tokens, seconds):
        print(json.dumps({**common, "phase": phase, "tokens": tokens, "seconds": seconds,
                          "tokens_per_s": tokens / statistics.median(seconds)}))
        sys.stdout.flush()

    for P in [int(t) for t in a.prompt_tokens.split(",")]:
        tokens = torch.from_numpy(rng.integers(0, cfg["vocab"], P))

        def prefill():
            start = time.perf_counter()
            model.step(tokens, 0)
            return time.perf_counter() - start
        report("prefill", P, timed_runs(a.repeat, prefill))
    G = a.gen_tokens
    ids = torch.from_numpy(rng.integers(0, cfg["vocab"], G + 1))

    def decode():
        model.step(ids[:1], 0)  # the first token, not timed
        start = time.perf_counter()
        for i in range(1, G + 1):
            model.step(ids[i:i + 1], i)
        return time.perf_counter() - start
    report("decode", G, timed_runs(a.repeat, decode))


if __name__ == "__main__":
    main()
