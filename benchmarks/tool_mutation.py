"""Vectorised (stack_module_state + vmap(functional_call)) vs looped scoring of 8 tool variants.

    python benchmarks/tool_mutation.py [--threads 2] [--repeats 50]

Both paths score the same 8 mutants of a host's encoder on the same validation batch, in the same
process, alternating; the best (minimum) wall time of each is printed with their ratio and the largest
score difference. Several tool / batch sizes are timed, because where vmap pays off on a CPU
depends on whether the work is per-op overhead (small tensors, many layers: vmap wins) or
arithmetic (large matmuls: both paths run the same FLOPs and tie).

Measured on the project's 2-core CPU (torch 2.13, shared machine): with 8 variants vmap was *not*
faster — loop/vmap ratios 0.8-1.0 with 1 and 2 threads for every case above (the 3x goal is not
met on this CPU); scores agree exactly. Only with many variants of a tiny tool does it pay off
(``--variants 32``, 2-4 layers of width 16, batch 8-32: 1.5-2x).
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn

from lib.tool_mutation.mutator import ToolMutator

# (label, d_in, hidden, encoder depth, validation batch)
CASES = [
    ("tiny MLP, 2x64, batch 256 (the experiment's host)", 16, 64, 2, 256),
    ("deep narrow, 8x32, batch 64", 16, 32, 8, 64),
    ("deep narrow, 12x32, batch 128", 16, 32, 12, 128),
    ("medium, 2x128, batch 512", 32, 128, 2, 512),
    ("wide, 2x256, batch 1024", 64, 256, 2, 1024),
]


class Host(nn.Module):
    def __init__(self, d_in, hidden, depth):
        super().__init__()
        layers = [nn.Linear(d_in, hidden), nn.Tanh()]
        for _ in range(depth - 1):
            layers += [nn.Linear(hidden, hidden), nn.Tanh()]
        self.encoder = nn.Sequential(*layers)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(self.encoder(x)).squeeze(-1)


def one_time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--variants", type=int, default=8)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {args.variants} variants, "
          f"best of {args.repeats} alternating repeats")
    print(f"{'case':52s} {'loop ms':>8s} {'vmap ms':>8s} {'ratio':>6s} {'max |diff|':>11s}")
    for label, d_in, hidden, depth, batch in CASES:
        torch.manual_seed(0)
        host = Host(d_in, hidden, depth)
        m = ToolMutator(0.5, 0.2, args.variants, rng=0, scale_mode="relative")
        m.register("encoder", host, attr="encoder")
        for _ in range(args.variants - 1):
            m.mutate("encoder")
        g = torch.Generator().manual_seed(1)
        x, y = torch.randn(batch, d_in, generator=g), torch.randn(batch, generator=g)

        def loop():
            return m.evaluate("encoder", x, y, vectorised=False, record=False)

        def vec():
            return m.evaluate("encoder", x, y, vectorised=True, record=False)

        for _ in range(5):                                  # warm-up
            loop(), vec()
        t_loop, t_vec = [], []
        for _ in range(args.repeats):                       # alternate, so load drifts hit both
            t_loop.append(one_time(loop))
            t_vec.append(one_time(vec))
        t_loop, t_vec = min(t_loop), min(t_vec)             # min: least disturbed by other processes
        a, b = loop(), vec()
        diff = max(abs(a[k] - b[k]) for k in a)
        print(f"{label:52s} {t_loop * 1e3:8.2f} {t_vec * 1e3:8.2f} {t_loop / t_vec:6.2f} {diff:11.2e}")


if __name__ == "__main__":
    main()
