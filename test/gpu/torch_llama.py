#!/usr/bin/env python3
"""test/gpu/torch_llama.py - the PyTorch side of the GPU check's benchmarks.

The Llama forward pass a PyTorch user writes (eager mode, weights in f16 or
bf16, a preallocated KV cache, torch's fused scaled_dot_product_attention,
RMSNorm and rotary embeddings in the weights' type), with random weights of
the shape Kiln's `kiln make-model --config NAME` makes, timed as
kiln-gpu-bench times a Kiln artifact: the prefill of one P-token prompt
(best of 3), then D decode steps after it, each copying its logits to the
host. Prints one line of JSON. Exits 77 when torch or a CUDA device is
missing (run.sh reports that as not run).

  torch_llama.py --dim 768 --hidden 2048 --layers 12 --heads 12 \
      --kv-heads 12 --vocab 32000 [--dtype f16] [--prompt 512] [--decode 128]
"""

import argparse
import json
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print(json.dumps({"not_run": "torch is not installed"}))
    sys.exit(77)


def main():
    p = argparse.ArgumentParser()
    for name in ("dim", "hidden", "layers", "heads", "kv-heads", "vocab"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--decode", type=int, default=128)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"not_run": "torch sees no CUDA device"}))
        sys.exit(77)
    dev = torch.device("cuda")
    dtype = torch.float16 if a.dtype == "f16" else torch.bfloat16
    hd = a.dim // a.heads
    kvd = a.kv_heads * hd
    context = a.prompt + a.decode + 1
    gen = torch.Generator(device=dev).manual_seed(0)

    def weight(*shape):
        return (torch.randn(*shape, device=dev, generator=gen) * 0.02).to(dtype)

    layers = [dict(norm1=torch.ones(a.dim, device=dev, dtype=dtype),
                   wqkv=weight(a.dim + 2 * kvd, a.dim), wo=weight(a.dim, a.dim),
                   norm2=torch.ones(a.dim, device=dev, dtype=dtype),
                   w13=weight(2 * a.hidden, a.dim), w2=weight(a.dim, a.hidden),
                   k=torch.zeros(1, a.kv_heads, context, hd, device=dev, dtype=dtype),
                   v=torch.zeros(1, a.kv_heads, context, hd, device=dev, dtype=dtype))
              for _ in range(a.layers)]
    embedding = weight(a.vocab, a.dim)
    final_norm = torch.ones(a.dim, device=dev, dtype=dtype)
    classifier = weight(a.vocab, a.dim)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, device=dev).float() / hd))

    def rms_norm(x, g):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dtype) * g

    def rope(x, pos):  # x [1, h, t, hd], halves layout
        angles = pos.float()[:, None] * inv_freq[None, :]
        cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)

    @torch.inference_mode()
    def forward(ids, start):
        t = ids.shape[0]
        pos = torch.arange(start, start + t, device=dev)
        x = embedding[ids][None]  # [1, t, dim]
        for L in layers:
            qkv = rms_norm(x, L["norm1"]) @ L["wqkv"].T
            q, k, v = qkv.split((a.dim, kvd, kvd), dim=-1)
            q = rope(q.view(1, t, a.heads, hd).transpose(1, 2), pos)
            k = rope(k.view(1, t, a.kv_heads, hd).transpose(1, 2), pos)
            L["k"][:, :, start:start + t] = k
            L["v"][:, :, start:start + t] = v.view(1, t, a.kv_heads, hd).transpose(1, 2)
            keys, values = L["k"][:, :, :start + t], L["v"][:, :, :start + t]
            if a.kv_heads != a.heads:
                keys = keys.repeat_interleave(a.heads // a.kv_heads, dim=1)
                values = values.repeat_interleave(a.heads // a.kv_heads, dim=1)
            o = F.scaled_dot_product_attention(q, keys, values, is_causal=(t > 1 and start == 0))
            x = x + o.transpose(1, 2).reshape(1, t, a.dim) @ L["wo"].T
            gate, up = (rms_norm(x, L["norm2"]) @ L["w13"].T).chunk(2, dim=-1)
            x = x + (F.silu(gate) * up) @ L["w2"].T
        logits = rms_norm(x[:, -1], final_norm) @ classifier.T
        return logits.float().cpu()  # to the host, as a step's logits are

    ids = torch.randint(0, a.vocab, (a.prompt + a.decode,), device=dev, generator=gen)
    forward(ids[: a.prompt], 0)  # warm-up: kernels, allocator
    for i in range(4):
        forward(ids[a.prompt + i: a.prompt + i + 1], a.prompt + i)
    prefill = 1e30
    for _ in range(3):
        torch.cuda.synchronize()
        start = time.perf_counter()
        forward(ids[: a.prompt], 0)
        prefill = min(prefill, time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(a.decode):
        forward(ids[a.prompt + i: a.prompt + i + 1], a.prompt + i)
    decode = time.perf_counter() - start
    print(json.dumps({
        "torch": torch.__version__, "device": torch.cuda.get_device_name(0),
        "dtype": a.dtype, "mode": "eager",
        "prompt_tokens": a.prompt, "decode_tokens": a.decode,
        "prefill_tokens_per_second": round(a.prompt / prefill, 1),
        "decode_tokens_per_second": round(a.decode / decode, 1)}))


if __name__ == "__main__":
    main()
