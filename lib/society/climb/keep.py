"""Which sampled answers a climb keeps, and what a round trains on: pure functions of answers (no model, no file),
so they run on fake agents in the tests.

``samples[a][j]`` holds agent ``a``'s ``k`` sampled outputs on prompt ``j``. An output *says* ``answer_of(output)``;
two outputs agree when they say the same answer after :func:`lib.core.tasks.normalise`.

- **verifier** (:func:`verified_kept`): every distinct answer the verifier accepts, over every sample of every
  agent (expert iteration / ReST-EM's filter); the label is what the agents said, never the gold answer.
- **a population's vote** (:func:`vote_kept`): each agent votes with its most frequent answer
  (:func:`modal_answer`); an answer that at least ``m`` agents vote for is kept (Lee et al. 2025 kept an answer
  where ≥ 4 of 5 models agreed). The verifier is never called.
- **one learner's self-consistency** (:func:`self_consistent_kept`): the learner's most frequent answer among
  its samples, kept where its share of them is at least ``share``. The verifier is never called.
- **conformity** (:func:`agreement`): the population's consensus per prompt (the strictly most frequent of the
  agents' modal answers; a tie has none), each agent's agreement with it (κ) and the pairwise behavioural distance (share of prompts where
  two agents' modal answers differ): selection without grounding reads these.
- **a round's training mix** (:func:`training_mix`): ``n_mix`` examples, the kept answers filling at most
  ``(1 − replay_share)`` of it, replay of the learner's starting data the rest.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

import numpy as np

from lib.core.tasks import Task, answer_of, normalise
from lib.operators.ops import answer_key, modal

Samples = Sequence[Sequence[Sequence[str]]]  # [agent][prompt][sample]


def said_answers(outputs: Sequence[str]) -> list[str]:
    """What each output says, normalised (``""``: none parses)."""
    return [normalise(answer_of(o)) for o in outputs]


def modal_answer(outputs: Sequence[str]) -> str:
    """One agent's answer: the one said most often among its samples ``outputs`` (normalised), ``""`` when none
    parses. A tie goes to the answer sampled first: the samples are exchangeable draws, so this is a draw among the
    tied answers that reads no seat (the population's consensus over agents is strict: :func:`agreement`)."""
    said = [s for s in said_answers(outputs) if s]
    if not said:
        return ""
    counts = Counter(said)
    top = max(counts.values())
    return next(s for s in said if counts[s] == top)


def _label(outputs: Sequence[str], answer: str) -> str:
    """How ``answer`` was written: its surface form in the first of ``outputs`` that says it."""
    return next(answer_of(o) for o in outputs if normalise(answer_of(o)) == answer)


def by_key(samples: Samples) -> list[Sequence[Sequence[str]]]:
    """The agents' samples in the order of their answer keys (:func:`lib.operators.ops.answer_key` of every
    sample), not of their seats: what a filter reads first (a label's surface form, the order of the kept answers,
    hence a round's draw of them) travels with the agent when the agents are relabelled. One agent: unchanged."""
    keys = [answer_key(*agent) for agent in samples]
    return [samples[i] for i in sorted(range(len(samples)), key=keys.__getitem__)]


def verified_kept(tasks: Sequence[Task], samples: Samples, verifier: Callable[[str, Task], bool]) -> list[Task]:
    """Every (prompt, answer) the verifier accepts among all samples of all agents, each once, in prompt order
    (within a prompt, in the order the agents, taken by :func:`by_key`, said them); labelled with what the agent
    said, never the gold answer."""
    agents = by_key(samples)
    out = []
    for j, x in enumerate(tasks):
        seen = set()
        for agent in agents:
            for o in agent[j]:
                said = answer_of(o)
                key = normalise(said)
                if said and key not in seen and verifier(o, x):
                    seen.add(key)
                    out.append(Task(x.family, x.prompt, said))
    return out


def vote_kept(tasks: Sequence[Task], samples: Samples, m: int) -> list[Task]:
    """The answer at least ``m`` agents vote for (each with its :func:`modal_answer`), per prompt, labelled as the
    first voter (:func:`by_key`) wrote it; ``2m`` must exceed the number of agents, so at most one answer per
    prompt is kept."""
    if 2 * m <= len(samples):
        raise ValueError(f"a vote of {len(samples)} agents needs a majority m > {len(samples) / 2}, got m = {m}")
    agents = by_key(samples)
    out = []
    for j, x in enumerate(tasks):
        votes = Counter(v for v in (modal_answer(agent[j]) for agent in agents) if v)
        won = [a for a, n in votes.items() if n >= m]
        if won:
            first = next(agent[j] for agent in agents if modal_answer(agent[j]) == won[0])
            out.append(Task(x.family, x.prompt, _label(first, won[0])))
    return out


def self_consistent_kept(tasks: Sequence[Task], outputs: Sequence[Sequence[str]], share: float) -> list[Task]:
    """One learner's ``outputs[j]`` (its samples of prompt ``j``): its modal answer, kept where that answer's share
    of the samples is at least ``share`` (> 1/2, so it is the only one)."""
    if not 0.5 < share <= 1:
        raise ValueError(f"share must lie in (1/2, 1], got {share}")
    out = []
    for j, x in enumerate(tasks):
        top = modal_answer(outputs[j])
        n = sum(normalise(answer_of(o)) == top for o in outputs[j])
        if top and n >= share * len(outputs[j]):
            out.append(Task(x.family, x.prompt, _label(outputs[j], top)))
    return out


def agreement(samples: Samples) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(consensus, κ, distance)`` of the agents' modal answers (:func:`modal_answer`, per agent and prompt): per
    prompt the consensus, the modal of the agents' modal answers (:func:`lib.operators.ops.consensus_answers`'s
    rule: ``""`` where they tie); per agent the share of prompts whose modal answer is the consensus (a prompt
    with none gives nobody conformity); per pair of agents the share of prompts whose modal answers differ. Every
    output is invariant, or relabelled, under relabelling the agents."""
    modal_said = [[modal_answer(outs) for outs in agent] for agent in samples]
    n_prompts = len(modal_said[0]) if modal_said else 0
    consensus = [modal([row[j] for row in modal_said]) for j in range(n_prompts)]
    said = np.array(modal_said, dtype=object)
    kappa = np.array([float(np.mean([a == c and c != "" for a, c in zip(row, consensus)])) if n_prompts else 0.0
                      for row in modal_said])
    n = len(modal_said)
    dist = np.zeros((n, n))
    for a in range(n):
        for b in range(a + 1, n):
            dist[a, b] = dist[b, a] = float(np.mean(said[a] != said[b])) if n_prompts else 0.0
    return consensus, kappa, dist


def pass_at_k(tasks: Sequence[Task], outputs: Sequence[Sequence[str]], verifier: Callable[[str, Task], bool]) -> float:
    """The share of prompts on which at least one of the learner's samples is right (reporting only)."""
    return float(np.mean([any(verifier(o, x) for o in outs) for x, outs in zip(tasks, outputs)])) if tasks else 0.0


def training_mix(kept: Sequence[Task], replay: Sequence[Task], *, n_mix: int, replay_share: float,
                 rng: np.random.Generator) -> list[Task]:
    """``n_mix`` examples: ``min(len(kept), ⌊(1 − replay_share)·n_mix⌋)`` of the kept answers (all of them, or a
    draw without replacement), the rest drawn from ``replay`` (without replacement while it lasts); in a shuffled
    order. Every arm's round trains on a mix of this size, whatever it kept."""
    n_kept = min(len(kept), int((1.0 - replay_share) * n_mix))
    take = rng.permutation(len(kept))[:n_kept]
    n_replay = n_mix - n_kept
    if n_replay and not replay:
        raise ValueError("the mix needs replay data and the learner has none")
    reps = -(-n_replay // len(replay)) if replay else 0
    order = np.concatenate([rng.permutation(len(replay)) for _ in range(reps)])[:n_replay] if reps else []
    mix = [kept[i] for i in take] + [replay[i] for i in order]
    return [mix[i] for i in rng.permutation(len(mix))]
