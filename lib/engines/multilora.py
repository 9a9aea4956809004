"""Mixed-adapter batches without peft's per-adapter loop: every row carries its agent's index, and every
adapted module applies all the rows' LoRA updates in two batched matmuls over the agents' stacked factors.

:class:`MultiLoraAgents` is a :class:`lib.society.generation.Agents` on a base of any dtype (float32 or
bf16) and device. It keeps agents as their factors, merges them on the factors and remembers merges and
answers already computed (:class:`lib.engines.folded.FactorAgents`, shared with the folded engine); to
answer, all the agents asked answer all the prompts in shared batches (rows sorted by prompt length, then
agent, as :func:`lib.engines.generate.generate_rows` sorts them), decoded greedily by
:func:`lib.engines.folded.greedy_decode` (KV cache, finished rows dropped, each group's shared prompt
prefix computed once per agent) on the frozen base with forward hooks on its adapted ``Linear`` layers.

The maths, per adapted module with input ``x`` (rows × positions × in) and base output ``y = W x``:

- the ``n`` agents of the batch are stacked (:class:`Stack`): ``A[k]`` (r_max × in) and ``s Bᵀ[k]``
  (r_max × out) are agent ``k``'s factors zero-padded to the largest rank ``r_max`` among them, its
  scaling ``s = alpha / r`` folded into ``B`` (exact for a power of two, as 32/16; peft scales after
  ``B``); the bare base has zero factors. Zero rows and columns add exact zeros, so ranks may differ;
- an exact merge ``ΔW = Σ wᵢ sᵢ BᵢAᵢ`` is the factors ``A = [w₁s₁A₁; w₂s₂A₂]``, ``B = [B₁ B₂]`` (rank
  ``r₁ + r₂``, ``s = 1``), a linear merge ``A = Σ √(wᵢsᵢ) Aᵢ``, ``B = Σ √(wᵢsᵢ) Bᵢ`` — both as
  :class:`lib.engines.folded.FactorAgents` computes them;
- the rows of a model call are grouped by agent: with ``u`` the ``g`` agents present, ``M`` the most rows of
  one of them and row ``i`` at place ``(seg_i, pos_i)`` (its agent's index in ``u``, its rank among that
  agent's rows), ``X`` (g × M·positions × in) holds the rows (zeros elsewhere), ``ΔY = (X A[u]ᵀ) (s Bᵀ)[u]``
  (two ``torch.bmm``) and row ``i`` gets ``Δy_i = ΔY[seg_i, pos_i]`` — S-LoRA's padded batched GEMM. The
  factors are read once per agent present, not gathered per row (punica's BGMV without its kernel would
  copy rows × r_max × (in + out) numbers per module and step); ``X`` costs the input's size times the
  padding of unequal row counts;
- the products run in the factors' dtype (float32 by default, as peft keeps LoRA factors in a bf16 model:
  ``x`` cast up, ``Δy`` cast to the base's dtype and then added, peft's mixed-batch rule);
- a dense update (a TIES merge, or factors whose rank makes ``B A`` no cheaper than ``ΔW``:
  ``r (in + out) ≥ in · out``) is applied as ``Δy = x ΔWᵀ`` to its own rows, one ``linear`` per such
  agent present.

The answers equal peft's (:class:`lib.engines.agents.PeftAgents`) up to float rounding (another order of
the same sums, other batch shapes): ``tests/test_multilora.py`` checks it on the tiny base (float32 and
bf16) and on SmolLM2 (float32), ``benchmarks/gpu_society.py`` counts identical answers on a generation.
No ``torch.compile`` nor CUDA graphs: eager kernels on any device.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

from lib.engines.folded import FactorAgents, dense_update, greedy_decode, linear_hooks
from lib.engines.generate import Counter, decode_new


def _is_dense(a, b) -> bool:
    """Whether ``(A, B)`` is best applied as the dense ``ΔW``: no ``B`` (kept dense), or a rank at which
    ``r (in + out)`` factor entries are no fewer than ``in · out``."""
    return b is None or a.shape[0] * (a.shape[1] + b.shape[0]) >= a.shape[1] * b.shape[0]


class Stack:
    """The factors of the ``n`` agents of one mixed batch, stacked per module on ``device`` in ``dtype``
    (``agents[k]``: ``{module: (A, B, s)}``, or ``None`` for the bare base), and the agent of every row of
    the model call in progress (:meth:`use`)."""

    def __init__(self, agents: Sequence[dict | None], *, device, dtype):
        import torch
        self.dtype = dtype
        self.low: dict[str, tuple] = {}                # module -> (A (n, r_max, in), s·Bᵀ (n, r_max, out))
        self.dense: dict[str, dict[int, object]] = {}  # module -> {agent: ΔW (out, in)}
        modules = sorted({m for f in agents if f for m in f})
        for m in modules:
            parts = {k: f[m] for k, f in enumerate(agents) if f and m in f}
            dense = {k for k, (a, b, _) in parts.items() if _is_dense(a, b)}
            self.dense[m] = {k: dense_update(*parts[k]).to(device, dtype) for k in sorted(dense)}
            low = {k: v for k, v in parts.items() if k not in dense}
            if not low:
                continue
            r = max(a.shape[0] for a, _, _ in low.values())
            a0, b0, _ = next(iter(low.values()))
            A = torch.zeros(len(agents), r, a0.shape[1], dtype=dtype)
            Bt = torch.zeros(len(agents), r, b0.shape[0], dtype=dtype)
            for k, (a, b, sk) in low.items():  # s into B: exact for alpha / r a power of two (peft scales after B)
                A[k, :a.shape[0]], Bt[k, :a.shape[0]] = a, sk * b.T
            self.low[m] = (A.to(device), Bt.to(device))
        self.bare = {k for k, f in enumerate(agents) if not f}
        self.rows = None  # the agent of each row of the call in progress (LongTensor on device)
        self.any = False  # whether any of those rows has an update
        self._factors: dict = {}
        self._dense_rows: dict = {}

    def use(self, rows) -> None:
        """The next model calls compute rows whose agents are ``rows`` (one index per row): the agents present
        ``u``, each row's place ``(seg, pos)`` in the padded grouped batch (``seg``: its agent's index in ``u``,
        ``pos``: its rank among that agent's rows), and ``M``, the most rows of one agent."""
        import torch
        self.rows, self._factors, self._dense_rows = rows, {}, {}
        self.u, self.seg = torch.unique(rows, return_inverse=True)
        present = self.u.tolist()
        self.any = any(k not in self.bare for k in present)
        counts = torch.bincount(self.seg, minlength=len(present))
        order = torch.argsort(self.seg, stable=True)
        self.pos = torch.empty_like(self.seg)
        first = torch.cumsum(counts, 0) - counts  # each agent's first place in the sorted rows
        self.pos[order] = torch.arange(len(rows), device=rows.device) - first[self.seg[order]]
        self.M = int(counts.max())

    def delta(self, m: str, x):
        """``Δy`` of module ``m`` for the call's input ``x`` (rows × positions × in), in the factors' dtype;
        ``None`` when no row of the call has an update. The rows are grouped by agent into a zero-padded
        ``(agents present, M · positions, in)`` batch, multiplied by the present agents' stacked ``Aᵀ`` and
        ``s Bᵀ`` (two ``bmm``), and read back row by row."""
        import torch
        if not self.any or (m not in self.low and not self.dense.get(m)):
            return None
        n, T = x.shape[0], x.shape[1]
        if n != len(self.rows):
            raise RuntimeError(f"multilora: a model call of {n} rows, but {len(self.rows)} were routed")
        xf = x.to(self.dtype)
        d = None
        if m in self.low:
            if m not in self._factors:
                A, Bt = self.low[m]
                self._factors[m] = (A[self.u].transpose(1, 2), Bt[self.u])
            At, Bt = self._factors[m]
            g = len(self.u)
            if g == 1:  # one agent: the rows as they are
                d = torch.bmm(xf.reshape(1, n * T, -1), At).bmm(Bt).view(n, T, -1)
            else:
                xp = xf.new_zeros(g, self.M, T, xf.shape[-1])
                xp[self.seg, self.pos] = xf
                d = torch.bmm(torch.bmm(xp.view(g, self.M * T, -1), At), Bt).view(g, self.M, T, -1)[self.seg, self.pos]
        for k, w in self.dense.get(m, {}).items():
            if k not in self._dense_rows:
                self._dense_rows[k] = (self.rows == k).nonzero().squeeze(1)
            idx = self._dense_rows[k]
            if len(idx):
                if d is None:
                    d = xf.new_zeros(n, T, w.shape[0])
                d[idx] += torch.nn.functional.linear(xf[idx], w)
        return d


@contextmanager
def stack_hooks(model, stack: Stack):
    """Forward hooks on ``model``'s ``Linear`` layers named in ``stack`` (the base layer under a peft
    wrapper): ``y += Δy`` (:meth:`Stack.delta`, cast to ``y``'s dtype, then added: peft's mixed-batch
    rule). Removed on exit."""
    def hook_for(m):
        def hook(module, inputs, out):
            d = stack.delta(m, inputs[0])
            return out if d is None else out.add_(d.to(out.dtype))
        return hook

    with linear_hooks(model, {m: hook_for(m) for m in sorted(set(stack.low) | set(stack.dense))}):
        yield


class _Router:
    """``route`` for :func:`lib.engines.folded.greedy_decode`: the rows of a call (indices into the batch)
    to their agents, handed to the stack only when they change (decode steps reuse the same tensor)."""

    def __init__(self, stack: Stack, agents):
        self.stack, self.agents, self.last = stack, agents, None

    def __call__(self, rows) -> None:
        if rows is not self.last:
            self.last = rows
            self.stack.use(self.agents[rows.to(self.agents.device)])


class MultiLoraAgents(FactorAgents):
    """:class:`lib.society.generation.Agents` answering every agent in shared mixed batches, each adapted
    module applying all rows' updates in two batched matmuls (see the module docstring). ``lora_dtype``:
    the dtype of the factors and of the update's products (float32, as peft)."""

    def __init__(self, base, *, hard: bool, batch_size: int, counter: Counter | None = None, lora_dtype=None):
        import torch
        super().__init__(base, hard=hard, batch_size=batch_size, counter=counter)
        self.lora_dtype = torch.float32 if lora_dtype is None else lora_dtype

    def answer(self, names: Sequence[str], prompts: Sequence[str]) -> list[list[str]]:
        """``outs[i][j]``: agent ``names[i]`` on ``prompts[j]``; the agents not asked these prompts before
        (identical merges counted once) answer in shared batches of ``batch_size`` rows."""
        prompts = list(prompts)
        keys = [(self.same.get(n, n), tuple(prompts)) for n in names]
        todo = list(dict.fromkeys(k[0] for k in keys if k not in self._answers))
        if todo:
            for agent, texts in zip(todo, self._generate(todo, prompts)):
                self._answers[(agent, tuple(prompts))] = texts
        return [list(self._answers[k]) for k in keys]

    def _generate(self, agents: list[str], prompts: list[str]) -> list[list[str]]:
        import torch
        if not prompts:
            return [[] for _ in agents]
        base = self.base
        dev = next(base.model.parameters()).device
        enc = [base.prompt_ids(p) for p in prompts]
        stack = Stack([None if a == self.BASE else self.factors[a] for a in agents], device=dev,
                      dtype=self.lora_dtype)
        rows = [(k, j) for k in range(len(agents)) for j in range(len(prompts))]
        order = sorted(range(len(rows)), key=lambda i: (len(enc[rows[i][1]]), i))
        texts = [[""] * len(prompts) for _ in agents]
        with self._bare(), stack_hooks(base.model, stack), torch.inference_mode():
            for s in range(0, len(order), self.batch_size):
                idx = order[s:s + self.batch_size]
                who = [rows[i][0] for i in idx]
                new = greedy_decode(base.model, [enc[rows[i][1]] for i in idx],
                                    max_new_tokens=base.max_new_tokens(self.hard), eos=base.tok.eos_token_id,
                                    pad=base.tok.pad_token_id, counter=self.counter, keys=who,
                                    route=_Router(stack, torch.tensor(who, device=dev)))
                for i, t in zip(idx, decode_new(base, new)):
                    texts[rows[i][0]][rows[i][1]] = t
        return texts
