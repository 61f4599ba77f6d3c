#!/usr/bin/python3
"""The competitor in bench/compare.sh: the same Llama in PyTorch eager mode.

Reads a llama2.c checkpoint (legacy format, as `kiln make-model --format
llama2c` writes it), runs llama2.c's forward pass with a KV cache in PyTorch
(Debian's python3-torch: OpenBLAS / oneDNN matmuls), and prints prefill and
decode tokens/s as JSON lines, one per (threads, phase, tokens):

  python3 bench/pytorch_llama.py MODEL.bin --prompt-tokens 128,512 \
      --gen-tokens 128 --threads 1,2 [--dtype f32|bf16]

This is what a user would write instead of Kiln; it is timed the way
`kiln bench` times (best of --repeat runs after a warm-up).
"""
import argparse
import json
import struct
import sys
import time

import numpy as np
import torch


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


class Model:
    def __init__(self, cfg, w, dtype):
        self.cfg, self.w, self.dtype = cfg, w, dtype
        c = cfg
        self.k = torch.zeros(c["layers"], c["seq"], c["kv_heads"], c["head"])
        self.v = torch.zeros_like(self.k)

    def step(self, tokens, start):
        c, w, dt = self.cfg, self.w, self.dtype
        T = tokens.shape[0]
        pos = torch.arange(start, start + T)
        x = w["emb"][tokens].float()
        group = c["heads"] // c["kv_heads"]
        mask = torch.full((T, start + T), float("-inf")).triu(start + 1)
        for l in range(c["layers"]):
            h = rms_norm(x, w["att_norm"][l]).to(dt)
            q = (h @ w["wq"][l].T).float().view(T, c["heads"], c["head"])
            k = (h @ w["wk"][l].T).float().view(T, c["kv_heads"], c["head"])
            v = (h @ w["wv"][l].T).float().view(T, c["kv_heads"], c["head"])
            q, k = rope(q, pos, c["head"]), rope(k, pos, c["head"])
            self.k[l, start:start + T], self.v[l, start:start + T] = k, v
            keys = self.k[l, :start + T].repeat_interleave(group, dim=1)
            vals = self.v[l, :start + T].repeat_interleave(group, dim=1)
            att = torch.einsum("thd,shd->hts", q, keys) / c["head"] ** 0.5
            att = torch.softmax(att + mask, dim=-1)
            o = torch.einsum("hts,shd->thd", att, vals).reshape(T, c["dim"])
            x = x + (o.to(dt) @ w["wo"][l].T).float()
            h = rms_norm(x, w["ffn_norm"][l]).to(dt)
            g = torch.nn.functional.silu(h @ w["w1"][l].T) * (h @ w["w3"][l].T)
            x = x + (g @ w["w2"][l].T).float()
        last = rms_norm(x[-1:], w["final_norm"]).to(dt)
        return (last @ w["cls"].T).float()


def best_of(repeat, fn):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--prompt-tokens", default="128,512")
    p.add_argument("--gen-tokens", type=int, default=128)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    dtype = torch.float32 if a.dtype == "f32" else torch.bfloat16
    cfg, w = load_llama2c(a.model, dtype)
    rng = np.random.default_rng(1)
    torch.set_grad_enabled(False)
    for threads in [int(t) for t in a.threads.split(",")]:
        torch.set_num_threads(threads)
        model = Model(cfg, w, dtype)
        for P in [int(t) for t in a.prompt_tokens.split(",")]:
            tokens = torch.from_numpy(rng.integers(0, cfg["vocab"], P))
            s = best_of(a.repeat, lambda: model.step(tokens, 0))
            print(json.dumps({"engine": "pytorch", "dtype": a.dtype, "threads": threads,
                              "phase": "prefill", "tokens": P, "tokens_per_s": P / s}))
        G = a.gen_tokens
        ids = torch.from_numpy(rng.integers(0, cfg["vocab"], G + 1))

        def decode():
            model.step(ids[:1], 0)  # the first token, not timed
            start = time.perf_counter()
            for i in range(1, G + 1):
                model.step(ids[i:i + 1], i)
            return time.perf_counter() - start
        decode()  # warm-up
        s = min(decode() for _ in range(max(1, a.repeat // 2)))
        print(json.dumps({"engine": "pytorch", "dtype": a.dtype, "threads": threads,
                          "phase": "decode", "tokens": G, "tokens_per_s": G / s}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
