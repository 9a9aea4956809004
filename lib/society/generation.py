"""One generation of the society, step by step: evaluate → select → breed → reproduce.

1. **Evaluate** (:func:`evaluate`). Every agent answers the test pool (reporting only), the val pool
   (the grounded selection signal) and the generation's conformity pool, in one batched call.
   Fitness is verifier accuracy; the consensus ``c_j`` is the modal answer on the conformity pool,
   conformity ``κ_i`` each agent's agreement with it, ``D`` the behavioural distance.
2. **Select** (:func:`select`). ``score_i = g · val_i + (1 − g) · κ_i`` (``g = 0``: conformity
   alone, the verifier never enters the loop); parents by quality-diversity selection (``λ``) or
   plain top-P; ``elitism`` top scorers survive unchanged.
3. **Breed** (:func:`breed`). With sex: complementary parent pairs; ``n_candidates`` merge-weight
   vectors per pair (the plain average first); each candidate merge is *screened* — scored on the
   screening part of val by the verifier (``g > 0``) or by agreement with the consensus (``g = 0``) —
   and the winner answers the inheritance pool. Without sex: copies of the selected parents answer it.
4. **Reproduce** (:func:`reproduce`). Each child is a fresh LoRA distilled from its source's own
   parsed answers on the inheritance pool (ungrounded, as the seed, except in the ``verified`` arms,
   which keep only the answers the verifier accepts); fewer than :data:`MIN_INHERIT` usable answers →
   the child is a copy of its source (terminal degeneration). In the ``inherit_merge`` arms nothing is
   distilled: the child is its source, the screened merge, truncated to rank r by SVD and mutated
   (:func:`lib.engines.merge.inherit_merge`, in the driver).

   Children that learn from several teachers (:mod:`lib.society.crossover`): in the ``crossover`` arms no
   merge is made or screened; a pair's child is a fresh LoRA trained on the union of its *teachers'*
   verified answers on the inheritance pool (:func:`teach`): its two parents, and with an archive the elite
   of every cell on which neither parent is above the base; ``@gold`` trains on the same prompts' gold
   answers. In ``merge_repair`` the child starts from the ``inherit_merge`` child and is trained on its two
   parents' verified answers. In the ``continue`` arms the teachers' data is the same as ``crossover``'s, but
   the child is not a fresh LoRA: each parent's LoRA is trained further on it (:func:`continue_starts`: one
   candidate per parent, or with ``@higher`` only from the parent with the higher selection score), and the
   candidate better on the screening pool (:func:`pick_candidates`) is the child (in the driver).

Models enter only through an :class:`Agents` object (answer prompts; merge two agents), so every
step runs with fake agents whose answers are fixed lists (``tests/test_society_steps.py``). Breeding
reads a :class:`Generation` (its agents, pools, evaluation and selection) and the :class:`Arm` (its
switches and its children's budget). The shard runner, :mod:`lib.society.shard`, loads the adapters,
calls the steps, trains the children (:mod:`lib.society.children`), writes the rows and resumes.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Callable, Protocol, Sequence

import numpy as np

from lib.operators.ops import (agreement, answer_keys, behavioural_distance, complementary_pairs, conformity_scores,
                                 consensus_answers, consensus_share, elite_indices, fitness_of, lexicase_parents,
                                 niche_parents, region_accuracy, sample_merge_weights, select_parents)
from lib.core.tasks import Task, answer_of
from lib.society.config import Arm
from lib.society.crossover import BASE, Archive, archive_teachers, cell_scores, gold_data, verified_union
from lib.society.pools import GenerationPools

MIN_INHERIT = 8  # fewer usable answers than this: the child is a copy of its source

# An arm's recombination -> (the agents' merge method, the scale of the candidate weights). The seed's
# merges weight the parents by w on the simplex, so an exact merge of two specialists is their mean
# update: each parent's update is halved. This project's additions keep them whole: ``sum`` adds the
# updates with weights 2w (the plain candidate is ΔW_a + ΔW_b), ``ties`` TIES-merges them with
# weights 2w (trim, elect a sign per entry, mean of the agreeing entries: an entry only one parent
# changed is kept as it is).
MERGES = {"exact": ("exact", 1.0), "linear": ("linear", 1.0), "sum": ("exact", 2.0), "ties": ("ties", 2.0)}

Verifier = Callable[[str, Task], bool]
Clock = Callable[[str], object]  # clock("screen") is a context manager timing that phase


def no_clock(phase: str):
    return nullcontext()


class Agents(Protocol):
    """What the steps need from the models: agents are named; ``BASE`` names the bare base."""

    BASE: str

    def answer(self, names: Sequence[str], prompts: Sequence[str]) -> list[list[str]]:
        """``outs[i][j]``: agent ``names[i]``'s greedy output on ``prompts[j]``."""

    def merge(self, parents: Sequence[str], weights: Sequence[float], name: str, method: str) -> str:
        """Attach agent ``name``, the ``method`` merge of ``parents`` with ``weights``; return ``name``."""

    def load(self, name: str, path) -> None:
        """Attach the adapter folder ``path`` as agent ``name``."""

    def save(self, name: str, path):
        """Write agent ``name`` as an adapter folder."""

    def forget(self) -> None:
        """Detach every agent (the base is left bare)."""


def prompts(tasks: Sequence[Task]) -> list[str]:
    return [x.prompt for x in tasks]


def answer_pools(agents: Agents, names: Sequence[str], pools: dict[str, Sequence[Task]]) -> dict[str, list[list[str]]]:
    """Every agent answers every named pool, all in one batched call; ``out[pool][i]`` is agent
    ``names[i]``'s answers to ``pools[pool]`` (the call's prompts are the pools in their given order)."""
    outs = agents.answer(names, [p for tasks in pools.values() for p in prompts(tasks)])
    res, k = {}, 0
    for pool, tasks in pools.items():
        res[pool] = [o[k:k + len(tasks)] for o in outs]
        k += len(tasks)
    return res


# ----------------------------------------------------------------------------- 1. evaluate


@dataclass(frozen=True)
class Evaluation:
    """What the verifier and the population's answers say about each of ``N`` agents."""

    test: list[dict]            # per agent on the test pool: {family: acc, …, "overall": acc, "<family>_<region>": acc, …}
    val: np.ndarray             # (N,) val accuracy: the grounded selection signal
    screen: np.ndarray          # (N,) accuracy on the screening part of val
    val_halves: list[tuple]     # per agent: (even-indexed, odd-indexed) val accuracy (split-half reliability)
    consensus: list[str]        # the strict modal normalised answer per conformity prompt ("" where answers tie)
    conformity: np.ndarray      # (N,) κ_i, agreement with the consensus
    distance: np.ndarray        # (N, N) behavioural distance on the conformity pool
    consensus_acc: float        # share of conformity prompts whose consensus the verifier accepts (a tie: none)
    keys: tuple[str, ...] = ()  # per agent, the hash of its val and conformity outputs: every selection's tie-break
    consensus_share: float = float("nan")  # share of conformity prompts that have a consensus
    val_family: np.ndarray | None = None  # (N, F) val accuracy per family (niche selection)
    val_items: np.ndarray | None = None   # (N, n_val·F) the verifier's 0/1 verdict per val item (lexicase)

    @property
    def diversity(self) -> float:
        """Mean pairwise behavioural distance (the ``diversity_behav`` row)."""
        n = len(self.distance)
        return float(self.distance[np.triu_indices(n, 1)].mean())


def evaluate(agents: Agents, names: Sequence[str], pools: GenerationPools, *, verifier: Verifier,
             families: Sequence[str]) -> Evaluation:
    """Step 1: every agent on test, val and the conformity pool (one batched call). The agents' tie keys hash what
    they said on the pools selection reads (val and conformity; :func:`lib.operators.ops.answer_keys`)."""
    ans = answer_pools(agents, names, {"test": pools.test, "val": pools.val, "conformity": pools.conformity})

    def acc(outs, tasks) -> dict:
        return fitness_of(outs, tasks, families, verifier)

    def test_acc(outs) -> dict:
        return test_accuracy(outs, pools.test, families=families, verifier=verifier)

    val_tasks = pools.val
    consensus = consensus_answers(ans["conformity"])
    val_acc = [acc(o, val_tasks) for o in ans["val"]]
    return Evaluation(
        test=[test_acc(o) for o in ans["test"]],
        val=np.array([v["overall"] for v in val_acc]),
        val_family=np.array([[v[f] for f in families] for v in val_acc]),
        val_items=np.array([[float(bool(verifier(a, x))) for a, x in zip(o, val_tasks)] for o in ans["val"]]),
        screen=np.array([acc([o[k] for k in pools.screen_in_val], pools.screen)["overall"] for o in ans["val"]]),
        val_halves=[(acc(o[0::2], val_tasks[0::2])["overall"], acc(o[1::2], val_tasks[1::2])["overall"])
                    for o in ans["val"]],
        consensus=consensus,
        consensus_share=consensus_share(consensus),
        keys=tuple(answer_keys(ans["val"], ans["conformity"])),
        conformity=conformity_scores(ans["conformity"], consensus),
        distance=behavioural_distance(ans["conformity"]),
        consensus_acc=float(np.mean([verifier(c, x) for c, x in zip(consensus, pools.conformity)])),
    )


def test_accuracy(outs: Sequence[str], tasks: Sequence[Task], *, families: Sequence[str], verifier: Verifier) -> dict:
    """Accuracy per family, ``overall``, and per family and region (``lists_novel``: the part of the
    family the base never saw in pre-training; ``lists_familiar``: the rest). A region with no item
    in ``tasks`` (a micro config's few test items) has no entry: no row holds a NaN."""
    regions = region_accuracy(outs, tasks, families, verifier)
    return {**fitness_of(outs, tasks, families, verifier), **{k: v for k, v in regions.items() if not np.isnan(v)}}


def base_accuracy(agents: Agents, tasks: Sequence[Task], *, verifier: Verifier, families: Sequence[str]) -> dict:
    """The bare base's :func:`test_accuracy` on ``tasks`` (the founders' reference)."""
    return test_accuracy(agents.answer([agents.BASE], prompts(tasks))[0], tasks, families=families, verifier=verifier)


# ----------------------------------------------------------------------------- 2. select


@dataclass(frozen=True)
class Selection:
    scores: np.ndarray   # (N,) score_i = g · val_i + (1 − g) · κ_i
    parents: list[int]   # in selection order
    elites: list[int]    # top scorers copied unchanged into the next generation


def select(ev: Evaluation, arm: Arm, *, n_parents: int, lam: float,
           rng: np.random.Generator | None = None) -> Selection:
    """Step 2: grounded score, then quality-diversity (or top-P) parents — with ``niche`` selection
    each family's best agent on that family's val first, with ``lexicase`` selection lexicase over
    the val items (drawn from ``rng``) — and the elites (by score in every arm). Every exact tie goes to the agent
    with the smaller answer key (``ev.keys``), never to a seat."""
    scores = ev.conformity.copy() if arm.g == 0 else arm.g * ev.val + (1.0 - arm.g) * ev.conformity
    keys = list(ev.keys)
    if arm.selection == "lexicase":
        if rng is None:
            raise ValueError("lexicase selection draws case orders: pass rng")
        parents = lexicase_parents(ev.val_items, n_parents, rng, keys=keys)
    elif arm.selection == "niche":
        parents = niche_parents(ev.val_family, scores, ev.distance, n_parents, keys=keys, diversity=arm.diversity,
                                lam=lam)
    else:
        parents = select_parents(scores, ev.distance, n_parents, keys=keys, diversity=arm.diversity, lam=lam)
    return Selection(scores=scores, parents=parents, elites=elite_indices(scores, arm.elitism, keys=keys))


@dataclass(frozen=True)
class Generation:
    """Generation ``t`` of one population as breeding reads it: its agents' names (in agent order), its
    pools, and what steps 1 and 2 found (:func:`evaluate`, :func:`select`)."""

    t: int
    names: Sequence[str]
    pools: GenerationPools
    ev: Evaluation
    sel: Selection
    archive: Archive | None = None  # the elites (an arm with an archive); each attached under its own name

    @property
    def tag(self) -> str:
        """The prefix of the agents merged at this generation (``t3`` → ``t3c<pair>k<candidate>``)."""
        return f"t{self.t}"


# ----------------------------------------------------------------------------- 3. breed


@dataclass(frozen=True)
class Source:
    """What a child is distilled from: the screened winning merge of two parents, or a copied parent."""

    parents: tuple[int, int]      # indices in this generation (a == b: a copy)
    agent: str                    # the agent that answered the inheritance pool
    answers: list[str]            # its outputs on the inheritance pool
    test: dict                    # its test accuracy, as :func:`test_accuracy` (diagnostic only)
    screen: float                 # its accuracy on the screening pool
    merge_winner: int | None = None   # index of the winner among the candidates (0: plain average)
    merge_gain: float | None = None   # winner's screening accuracy − its parents' mean
    merge_tied: int | None = None     # candidates tied at the top screening score (1: no tie)
    data: list[Task] | None = None    # the training data its teachers gave (lib.society.crossover), else None
    teachers: tuple[str, ...] = ()    # those teachers (parents' names, archive elites, "base")


def breed(agents: Agents, gen: Generation, arm: Arm, *, rng: np.random.Generator, n_children: int,
          verifier: Verifier, families: Sequence[str], clock: Clock = no_clock) -> list[Source]:
    """Step 3: the source of each of ``n_children`` children of ``gen`` (``arm.n_candidates`` merges
    screened per pair; merged agents are named ``<gen.tag>c<pair>k<candidate>``).

    Phases: ``screen`` (merge and score the candidates) and ``inherit`` (the sources answer the
    inheritance pool; merged winners also the test pool, for diagnostics).
    """
    if arm.from_teachers and not arm.from_merge:  # crossover: no merge, no screen
        with clock("inherit"):
            pairs = complementary_pairs(gen.sel.parents, gen.ev.distance, n_children)
            return [Source(parents=p, agent="", answers=[], test={}, screen=float("nan"), data=d, teachers=ts)
                    for p, (ts, d) in zip(pairs, teach(agents, gen, arm, pairs, verifier=verifier))]
    if arm.merge is None:
        with clock("inherit"):
            return _copies(agents, gen, n_children)
    with clock("screen"):
        pairs, scored = screen(agents, gen, arm, rng=rng, n_pairs=n_children, verifier=verifier, families=families)
    with clock("inherit"):
        sources = inherit(agents, gen, arm, pairs, scored, verifier=verifier, families=families)
        if arm.from_teachers:  # merge_repair: the merge, repaired on its parents' verified answers
            taught = teach(agents, gen, arm, pairs, verifier=verifier)
            sources = [replace(s, data=d, teachers=ts) for s, (ts, d) in zip(sources, taught)]
    return sources


def teach(agents: Agents, gen: Generation, arm: Arm, pairs: Sequence[tuple[int, int]], *,
          verifier: Verifier) -> list[tuple[tuple[str, ...], list[Task]]]:
    """Per pair, its teachers and their training data on the inheritance pool: the union of the teachers'
    verified answers (:func:`lib.society.crossover.verified_union`; ``gold``: the prompts' gold answers).
    The teachers are the two parents, and with an archive the elite of every cell on which neither parent
    is above the base (:func:`lib.society.crossover.archive_teachers`; ``base``: the bare base). Each teacher
    answers once, all in one batched call."""
    pool = gen.pools.inheritance
    teachers = [tuple(dict.fromkeys([gen.names[a], gen.names[b], *_archive_of(gen, (a, b))])) for a, b in pairs]
    if arm.inherit == "gold":
        return [(ts, gold_data(pool)) for ts in teachers]
    uniq = list(dict.fromkeys(t for ts in teachers for t in ts))
    said = dict(zip(uniq, agents.answer([agents.BASE if t == BASE else t for t in uniq], prompts(pool))))
    return [(ts, verified_union(pool, [said[t] for t in ts], verifier)) for ts in teachers]


def _archive_of(gen: Generation, pair: tuple[int, int]) -> list[str]:
    """The archive's elites that join ``pair`` as teachers (none without an archive)."""
    if gen.archive is None:
        return []
    cells = cell_scores(gen.ev.val_items[list(pair)], gen.pools.val, gen.archive.cells)
    return archive_teachers(gen.archive, cells)


@dataclass(frozen=True)
class Screened:
    """The candidates of one pair: their names and screening scores, the winner, and how many
    candidates shared the top score."""

    names: list[str]
    scores: list[float]
    winner: int
    tied: int


def screen(agents: Agents, gen: Generation, arm: Arm, *, rng: np.random.Generator, n_pairs: int, verifier: Verifier,
           families: Sequence[str]) -> tuple[list[tuple[int, int]], list[Screened]]:
    """Complementary pairs of ``gen``'s parents, ``arm.n_candidates`` merges of each (weights: the plain
    average, then Dirichlet draws from ``rng``), each scored on the screening pool (``g > 0``: verifier
    accuracy; ``g = 0``: agreement with the consensus on the conformity pool); the best wins. Ties are
    broken by a draw from ``rng`` (not by the lowest index, which would favour the plain average)."""
    names, ev, pools, tag, n_candidates = gen.names, gen.ev, gen.pools, gen.tag, arm.n_candidates
    pairs = complementary_pairs(gen.sel.parents, ev.distance, n_pairs)
    weights = [sample_merge_weights(2, n_candidates, rng) for _ in pairs]
    method, scale = MERGES[arm.merge]
    cands = [[agents.merge([names[pa], names[pb]], (scale * weights[c][k]).tolist(), f"{tag}c{c}k{k}", method)
              for k in range(n_candidates)] for c, (pa, pb) in enumerate(pairs)]
    flat = [n for group in cands for n in group]
    if arm.grounded:
        outs = agents.answer(flat, prompts(pools.screen))
        scores = [fitness_of(o, pools.screen, families, verifier)["overall"] for o in outs]
    else:
        outs = agents.answer(flat, prompts(pools.conformity))
        scores = [agreement(o, ev.consensus) for o in outs]
    out = []
    for c, group in enumerate(cands):
        v = scores[c * n_candidates:(c + 1) * n_candidates]
        top = np.flatnonzero(np.asarray(v) == max(v))
        winner = int(top[0]) if len(top) == 1 else int(rng.choice(top))
        out.append(Screened(names=group, scores=v, winner=winner, tied=len(top)))
    return pairs, out


def inherit(agents: Agents, gen: Generation, arm: Arm, pairs, scored: list[Screened], *,
            verifier: Verifier, families: Sequence[str]) -> list[Source]:
    """The winners answer the inheritance pool, and the test pool (and, where screening did not use
    it, the screening pool) for the diagnostics only."""
    ev, pools = gen.ev, gen.pools
    winners = [s.names[s.winner] for s in scored]
    asked = {"inheritance": pools.inheritance if arm.distills else [], "test": pools.test}
    if not arm.grounded:
        asked["screen"] = pools.screen
    ans = answer_pools(agents, winners, asked)
    out = []
    for c, ((pa, pb), s) in enumerate(zip(pairs, scored)):
        w_screen = (s.scores[s.winner] if arm.grounded
                    else fitness_of(ans["screen"][c], pools.screen, families, verifier)["overall"])
        out.append(Source(parents=(pa, pb), agent=winners[c], answers=ans["inheritance"][c],
                          test=test_accuracy(ans["test"][c], pools.test, families=families, verifier=verifier),
                          screen=w_screen, merge_winner=s.winner, merge_tied=s.tied,
                          merge_gain=w_screen - (ev.screen[pa] + ev.screen[pb]) / 2))
    return out


def _copies(agents: Agents, gen: Generation, n_children: int) -> list[Source]:
    """No sex: child ``c`` copies parent ``parents[c mod P]``, which answers the inheritance pool."""
    parents, ev = gen.sel.parents, gen.ev
    src = [parents[c % len(parents)] for c in range(n_children)]
    uniq = sorted(set(src))
    ans = dict(zip(uniq, agents.answer([gen.names[p] for p in uniq], prompts(gen.pools.inheritance))))
    return [Source(parents=(p, p), agent=gen.names[p], answers=ans[p], test=ev.test[p],
                   screen=float(ev.screen[p])) for p in src]


# ----------------------------------------------------------------------------- 4. reproduce


@dataclass(frozen=True)
class Child:
    """One agent of the next generation: an elite (a copy), or a fresh LoRA distilled from ``source``."""

    index: int
    parents: tuple[int, int]
    elite: bool
    data: list[Task]            # the training data: the source's parsed answers (empty for an elite)
    seed: int                   # the LoRA's initialisation and data order
    source: Source | None = None
    starts: tuple[int, ...] = ()  # continue: the parents whose LoRAs its candidates start from (continue_starts)

    @property
    def degenerate(self) -> bool:
        """Too few usable answers to train on: the child is a copy of its source."""
        return not self.elite and len(self.data) < MIN_INHERIT


def continue_starts(children: Sequence[Child], scores: np.ndarray, candidates: str) -> dict[int, tuple[int, ...]]:
    """The parents whose LoRAs each trained ``continue`` child starts from (indices in generation ``t``): both
    parents of the pair, in pair order (``candidates="both"``; one when the pair is a parent twice), or only the
    one with the higher selection score ``scores`` (``"higher"``, population-based training's exploit rule; a tie
    keeps the pair's first parent). ``{child index: parents}``; elites and degenerate children have none."""
    if candidates not in ("both", "higher"):
        raise ValueError(f"candidates must be 'both' or 'higher', got {candidates!r}")
    out = {}
    for ch in children:
        if ch.elite or ch.degenerate:
            continue
        a, b = ch.parents
        if candidates == "higher":
            out[ch.index] = (b,) if scores[b] > scores[a] else (a,)
        else:
            out[ch.index] = tuple(dict.fromkeys((a, b)))
    return out


def pick_candidates(scores: Sequence[Sequence[float]], rng: np.random.Generator) -> list[tuple[int, int]]:
    """Per child, ``(winner, tied)``: the candidate with the best screening accuracy ``scores[c][k]`` and how many
    shared it (1: no tie). Ties are broken by a draw from ``rng`` (not by order, which would favour the first
    parent); a single candidate wins without a draw."""
    out = []
    for v in scores:
        top = np.flatnonzero(np.asarray(v) == max(v))
        out.append((int(top[0]) if len(top) == 1 else int(rng.choice(top)), len(top)))
    return out


def reproduce(sources: Sequence[Source], elites: Sequence[int], inheritance: Sequence[Task], *,
              child_seed: Callable[[int], int], verifier: Verifier | None = None) -> list[Child]:
    """Step 4: the next generation — the elites first, then one child per source, trained on the
    source's answers that parse (``answer_of`` non-empty), labelled with what the source said; with a
    ``verifier`` (the ``verified`` arms) only on those it accepts; a source whose teachers gave its data
    (:func:`teach`) on that data."""
    children = [Child(index=j, parents=(e, e), elite=True, data=[], seed=0) for j, e in enumerate(elites)]
    for c, src in enumerate(sources, start=len(elites)):
        data = src.data if src.data is not None else [
            Task(x.family, x.prompt, answer_of(a)) for x, a in zip(inheritance, src.answers)
            if answer_of(a) and (verifier is None or verifier(a, x))]
        children.append(Child(index=c, parents=src.parents, elite=False, data=data, seed=child_seed(c), source=src))
    return children
