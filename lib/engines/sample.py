"""Sampling at a temperature whose every sample is a function of (seed, agent, prompt, sample index) only.

A sampled answer must not change when the batch it is decoded in changes (other prompts, other agents, another
batch size, a resumed run), or a population's samples would depend on how many agents share a call. So the
randomness is tied to the row, not to the call:

- each row (agent ``a``, prompt ``p``, sample ``j`` of run seed ``s``) has a key, the BLAKE2b-64 hash of
  ``"s|a|p|j"`` (:func:`row_key`, machine-independent);
- the key seeds a ``torch.Generator`` (Mersenne Twister, CPU) that draws the row's uniform noise
  ``U`` of shape (new tokens × vocabulary) up front;
- at decode step ``t`` the next token is ``argmax_v(logits_v / T + G_tv)`` with ``G = −log(−log U)``: the
  Gumbel-max trick, an exact draw from ``softmax(logits / T)`` (Gumbel 1954; Maddison et al. 2014).

:class:`SamplingAgents` are the folded engine's agents (:class:`lib.engines.folded.FoldedAgents`) that also sample
(:meth:`SamplingAgents.sample`); the climb makes them with :func:`make_sampling_agents`.

The logits come from the same prefill and KV-cached decode as the greedy path (:func:`lib.engines.folded.
greedy_decode`); a sample can differ between batchings only where float rounding of the logits moves a
near-tie of the noisy scores, which ``tests/test_climb.py`` checks does not happen on the tiny base.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

from lib.engines.folded import FoldedAgents, count_decode, decode_loop, shared_prefill
from lib.engines.generate import Counter, decode_new


def row_key(seed: int, agent: str, prompt: str, j: int) -> int:
    """The 63-bit key of sample ``j`` of ``agent`` on ``prompt`` in a run of ``seed``."""
    blob = f"{int(seed)}|{agent}|{prompt}|{int(j)}".encode()
    return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "big") >> 1


def gumbel_noise(keys: Sequence[int], steps: int, vocab: int):
    """``G`` (rows × steps × vocab): standard Gumbel noise, row ``i`` drawn from a generator seeded by ``keys[i]``."""
    import torch
    out = torch.empty(len(keys), steps, vocab)
    g = torch.Generator()
    for i, k in enumerate(keys):
        g.manual_seed(int(k))
        out[i] = torch.rand(steps, vocab, generator=g)
    tiny = torch.finfo(out.dtype).tiny
    return -torch.log(-torch.log(out.clamp_(min=tiny, max=1.0 - 1e-7)))


def sample_decode(model, enc: list[list[int]], keys: Sequence[int], *, temperature: float, max_new_tokens: int,
                  eos: int, pad: int, counter: Counter | None = None):
    """Sampled continuations of the prompts ``enc`` (token lists), row ``i`` with the noise of ``keys[i]``;
    shape ``(rows, max_new_tokens)`` on the CPU, ``pad`` after EOS. The greedy path's prefill and decode loop
    (:func:`lib.engines.folded.decode_loop`), with the next token ``argmax(logits / T + G)``."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 (greedy decoding is lib.engines.folded.greedy_decode), got "
                         f"{temperature}")
    noise = []  # G of every row, drawn once the vocabulary is known (the prefill's logits)

    def choose(logits, alive, step):
        if not noise:
            noise.append(gumbel_noise(keys, max_new_tokens, logits.shape[-1]).to(logits.device))
        return (logits.float() / temperature + noise[0][alive, step]).argmax(-1)
    out, steps = decode_loop(model, shared_prefill(model, enc, pad=pad), choose, max_new_tokens=max_new_tokens,
                             eos=eos, pad=pad)
    count_decode(counter, enc, out, eos, steps, samples=len(enc))
    return out.cpu()


class SamplingAgents(FoldedAgents):
    """:class:`lib.engines.folded.FoldedAgents` that also sample at a temperature (:meth:`sample`)."""

    def sample(self, names: Sequence[str], prompts: Sequence[str], k: int, *, temperature: float,
               seed: int) -> list[list[list[str]]]:
        """``outs[i][j]``: ``k`` samples of agent ``names[i]`` on ``prompts[j]`` at ``temperature``, sample ``m``
        a function of ``(seed, names[i], prompts[j], m)`` only: an agent's ``k`` samples of every prompt are decoded
        in shared batches (rows sorted by prompt length, a prompt's samples side by side)."""
        import torch
        base = self.base
        mnt = base.max_new_tokens(self.hard)
        enc = [base.prompt_ids(p) for p in prompts]
        rows = [(j, m) for j in sorted(range(len(enc)), key=lambda q: (len(enc[q]), q)) for m in range(k)]
        chunks = [rows[s:s + self.batch_size] for s in range(0, len(rows), self.batch_size)]
        outs = []
        for name in names:
            texts = [[""] * k for _ in prompts]
            with self.folded(name), self._bare(), torch.inference_mode():
                for chunk in chunks:
                    keys = [row_key(seed, name, prompts[j], m) for j, m in chunk]
                    new = sample_decode(base.model, [enc[j] for j, _ in chunk], keys, temperature=temperature,
                                        max_new_tokens=mnt, eos=base.tok.eos_token_id, pad=base.tok.pad_token_id,
                                        counter=self.counter)
                    for (j, m), t in zip(chunk, decode_new(base, new)):
                        texts[j][m] = t
            outs.append(texts)
        return outs


def make_sampling_agents(base, *, engine: str = "folded", hard: bool, batch_size: int,
                         counter: Counter | None = None) -> SamplingAgents:
    """The climb's agents: the folded engine's (a float32 base), able to sample; ``engine`` must be ``folded``."""
    if engine != "folded":
        raise ValueError(f"sampling runs on the folded engine (a float32 base), not {engine!r}")
    return SamplingAgents(base, hard=hard, batch_size=batch_size, counter=counter)
