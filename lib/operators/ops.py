"""The population operators of the paper, as pure functions of answers, scores and distances.

A population of ``N`` agents answers the same ``M`` prompts; ``outputs_per_agent[i][j]`` is agent
``i``'s raw output on prompt ``j``. Every operator reads only these answers (and scores derived from
them): no model, no file, no global random state. These are the functions the society loop
(:mod:`lib.society.run`) calls, under the seed's names (``society_ops``).

Notation: ``a_ij = normalise(answer_of(outputs_per_agent[i][j]))`` is agent i's normalised final
answer on prompt j; ``""`` means the agent gave no answer.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from typing import Callable, Sequence

import numpy as np

from lib.core.tasks import REGIONS, Task, answer_of, normalise, region, verify

def answers_matrix(outputs_per_agent: Sequence[Sequence[str]]) -> list[list[str]]:
    """``a_ij`` for all agents and prompts; raises if agents answered different numbers of prompts."""
    lengths = {len(o) for o in outputs_per_agent}
    if len(lengths) > 1:
        raise ValueError(f"every agent must answer the same prompts; got lengths {sorted(lengths)}")
    return [[normalise(answer_of(o)) for o in outs] for outs in outputs_per_agent]


def answer_key(*outputs: Sequence[str]) -> str:
    """A stable key made from what an agent said: the SHA-256 of its raw outputs (each sequence in turn).

    The operators break an exact tie between agents by this key (the smaller first), never by an agent's
    seat: it travels with the agent when the agents are relabelled, and two agents share it only when their
    outputs are identical (then the tie is between agents nobody can tell apart)."""
    h = hashlib.sha256()
    for outs in outputs:
        for o in outs:
            h.update(str(o).encode("utf-8"))
            h.update(b"\x1f")
        h.update(b"\x1e")
    return h.hexdigest()


def answer_keys(*pools_per_agent: Sequence[Sequence[str]]) -> list[str]:
    """:func:`answer_key` of each agent over the given pools: ``pools_per_agent[p][i]`` is agent ``i``'s outputs on
    pool ``p``; returns one key per agent."""
    n = {len(p) for p in pools_per_agent}
    if len(n) != 1:
        raise ValueError(f"every pool must hold the same agents; got {sorted(n)} agents")
    return [answer_key(*(pool[i] for pool in pools_per_agent)) for i in range(n.pop())]


def _keys(keys: Sequence[str] | None, n: int) -> list[str]:
    if keys is None or len(keys) != n:
        raise ValueError(f"the tie keys must name all {n} agents (lib.operators.ops.answer_keys), got "
                         f"{None if keys is None else len(keys)}")
    return list(keys)


def ranked(values, keys: Sequence[str]) -> list[int]:
    """The agents in descending ``values``; an exact tie in ascending :func:`answer_key` (no seat is read)."""
    v = np.asarray(values, dtype=float)
    k = _keys(keys, v.size)
    return sorted(range(v.size), key=lambda i: (-v[i], k[i]))


def best(values, keys: Sequence[str]) -> int:
    """The agent with the highest ``values``; an exact tie goes to the smallest :func:`answer_key`."""
    return ranked(values, keys)[0]


def modal(answers: Sequence[str]) -> str:
    """The answer strictly more of ``answers`` give than any other (``""`` answers ignored); ``""`` where two or
    more answers tie for the most (every one different included) or nothing was answered.

    The paper's consensus is the population's modal answer; where answers tie there is no mode, and giving the
    tie to one of them (the first said, the lowest seat) would make that agent the consensus for its place."""
    counts = Counter(a for a in answers if a)
    if not counts:
        return ""
    top = counts.most_common(2)
    return "" if len(top) == 2 and top[1][1] == top[0][1] else top[0][0]


def consensus_answers(outputs_per_agent: Sequence[Sequence[str]]) -> list[str]:
    """The population's consensus per prompt, ``c_j = modal({a_ij : i})`` (:func:`modal`): the normalised answer
    strictly more agents give than any other; ``""`` (no consensus) where answers tie for the most or nobody
    answered. Invariant under relabelling the agents."""
    A = answers_matrix(outputs_per_agent)
    if not A:
        return []
    return [modal([row[j] for row in A]) for j in range(len(A[0]))]


def consensus_share(consensus: Sequence[str]) -> float:
    """The share of prompts that have a consensus (``c_j ≠ ""``), in [0, 1]; NaN with no prompts."""
    return float(np.mean([c != "" for c in consensus])) if len(consensus) else float("nan")


def agreement(outputs: Sequence[str], consensus: Sequence[str]) -> float:
    """Fraction of prompts on which one agent's answer equals a non-empty consensus answer, in [0, 1]."""
    if len(outputs) != len(consensus):
        raise ValueError(f"{len(outputs)} outputs against {len(consensus)} consensus answers")
    if not outputs:
        return 0.0
    hits = [c != "" and normalise(answer_of(o)) == c for o, c in zip(outputs, consensus)]
    return float(np.mean(hits))


def conformity_scores(outputs_per_agent: Sequence[Sequence[str]], consensus: Sequence[str]) -> np.ndarray:
    """Each agent's conformity ``κ_i = (1/M) Σ_j [a_ij = c_j ≠ ""]``, shape ``(N,)``, in [0, 1]."""
    return np.array([agreement(outs, consensus) for outs in outputs_per_agent], dtype=float)


def behavioural_distance(outputs_per_agent: Sequence[Sequence[str]]) -> np.ndarray:
    """Pairwise disagreement rate ``D_ik = (1/M) Σ_j [a_ij ≠ a_kj]``, shape ``(N, N)``.

    Symmetric, zero diagonal, in [0, 1]. Two agents that both gave no answer agree.
    """
    A = np.array(answers_matrix(outputs_per_agent), dtype=object)
    n = len(A)
    if n == 0:
        return np.zeros((0, 0))
    if A.shape[1] == 0:
        return np.zeros((n, n))
    return np.array([[float(np.mean(A[i] != A[k])) for k in range(n)] for i in range(n)])


def fitness_of(outputs: Sequence[str], tasks: Sequence[Task], families: Sequence[str],
               verifier: Callable[[str, Task], bool] = verify) -> dict:
    """Verifier accuracy: ``{family: mean verifier(o, t) over that family's tasks, "overall": over all}``.

    A family with no tasks in ``tasks`` is reported as NaN; ``overall`` averages all tasks equally.
    ``verifier`` is the grounded signal (:func:`lib.core.tasks.verify`; tests swap it).
    """
    if len(outputs) != len(tasks):
        raise ValueError(f"{len(outputs)} outputs for {len(tasks)} tasks")
    ok = np.array([bool(verifier(o, t)) for o, t in zip(outputs, tasks)], dtype=float)
    fam = np.array([t.family for t in tasks])
    res = {f: float(ok[fam == f].mean()) if np.any(fam == f) else float("nan") for f in families}
    res["overall"] = float(ok.mean()) if ok.size else float("nan")
    return res


def region_accuracy(outputs: Sequence[str], tasks: Sequence[Task], families: Sequence[str],
                    verifier: Callable[[str, Task], bool] = verify) -> dict:
    """Verifier accuracy per family and region (:func:`lib.core.tasks.region`):
    ``{"<family>_familiar": …, "<family>_novel": …}``; NaN where a family has no task of a region."""
    if len(outputs) != len(tasks):
        raise ValueError(f"{len(outputs)} outputs for {len(tasks)} tasks")
    ok = np.array([bool(verifier(o, t)) for o, t in zip(outputs, tasks)], dtype=float)
    key = np.array([f"{t.family}_{region(t)}" for t in tasks])
    return {k: float(ok[key == k].mean()) if np.any(key == k) else float("nan")
            for k in (f"{f}_{r}" for f in families for r in REGIONS)}


def select_parents(scores, dist, n_parents: int, *, keys: Sequence[str], diversity: bool = True,
                   lam: float = 0.3) -> list[int]:
    """Choose ``n_parents`` distinct agents, in selection order.

    Without ``diversity``: top-P by score. With ``diversity``: greedy quality-diversity (maximal marginal
    relevance). The first parent is the best-scoring agent; each next one maximises
    ``s_i − λ · max_{k∈S} (1 − D_ik)``, its score minus ``λ`` times its behavioural similarity to the closest
    already-selected parent. With ``λ = 0`` this is exactly top-P. An exact tie (in score or in gain) goes to the
    agent with the smaller :func:`answer_key`, never to a seat: relabelling the agents relabels the parents.

    Args:
        scores: shape ``(N,)`` selection scores.
        dist: shape ``(N, N)`` behavioural distances in [0, 1].
        n_parents: 1 ≤ P ≤ N.
        keys: the agents' :func:`answer_key`, the tie-break.
        lam: ``λ ≥ 0``, the weight of similarity against score.
    """
    s = np.asarray(scores, dtype=float)
    D = np.asarray(dist, dtype=float)
    n = s.size
    if not 1 <= n_parents <= n:
        raise ValueError(f"n_parents must be between 1 and the population size {n}, got {n_parents}")
    if D.shape != (n, n):
        raise ValueError(f"dist must have shape ({n}, {n}), got {D.shape}")
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    order = ranked(s, keys)
    if not diversity:
        return order[:n_parents]
    return _fill_diverse([order[0]], s, D, n_parents, keys=keys, lam=lam)


def _fill_diverse(chosen: list[int], s: np.ndarray, D: np.ndarray, n_parents: int, *, keys: Sequence[str],
                  lam: float) -> list[int]:
    """Add agents to ``chosen`` until it holds ``n_parents``, each the best by ``s_i − λ · max_{k∈S} (1 − D_ik)``
    (ties: the smaller key)."""
    chosen = list(chosen)
    while len(chosen) < n_parents:
        rest = [i for i in range(s.size) if i not in chosen]
        gain = [s[i] - lam * max(1.0 - D[i, k] for k in chosen) for i in rest]
        chosen.append(rest[best(gain, [keys[i] for i in rest])])
    return chosen


def niche_parents(family_val, scores, dist, n_parents: int, *, keys: Sequence[str], diversity: bool = True,
                  lam: float = 0.3) -> list[int]:
    """Parents with a niche per family: first each family's best agent on that family's val (in family order;
    ties → the higher score, then the smaller :func:`answer_key`; an agent best on two families takes one slot),
    then the remaining slots as :func:`select_parents` fills them (quality-diversity greedy from the niche
    winners, or by score). With more families than slots, the first ``n_parents`` families' winners.

    This project's addition, after MAP-Elites / CycleQD (an elite per behaviour cell or task) and
    lexicase selection (specialists kept although their total score is poor).

    Args:
        family_val: shape ``(N, F)`` val accuracy of each agent on each family.
        scores, dist, n_parents, keys, diversity, lam: as :func:`select_parents`.
    """
    V = np.asarray(family_val, dtype=float)
    s = np.asarray(scores, dtype=float)
    n = s.size
    if V.ndim != 2 or V.shape[0] != n:
        raise ValueError(f"family_val must have shape ({n}, F), got {V.shape}")
    if not 1 <= n_parents <= n:
        raise ValueError(f"n_parents must be between 1 and the population size {n}, got {n_parents}")
    k = _keys(keys, n)
    chosen: list[int] = []
    for f in range(V.shape[1]):
        winner = min(range(n), key=lambda i: (-V[i, f], -s[i], k[i]))
        if winner not in chosen and len(chosen) < n_parents:
            chosen.append(winner)
    if not diversity:
        return chosen + [i for i in ranked(s, k) if i not in chosen][:n_parents - len(chosen)]
    return _fill_diverse(chosen, s, np.asarray(dist, dtype=float), n_parents, keys=k, lam=lam)


def lexicase_parents(case_scores, n_parents: int, rng: np.random.Generator, *, keys: Sequence[str],
                     eps: float = 0.0) -> list[int]:
    """``n_parents`` distinct parents by lexicase selection (Spector 2012; Helmuth, Pantridge &
    Spector 2020), one selection event per parent, without replacement.

    An event shuffles the cases; starting from the agents not yet chosen, each case in turn keeps
    only those scoring ``≥ max − eps`` on it; the event ends when one agent is left or the cases run
    out, and picks uniformly among the survivors (listed by :func:`answer_key`, so that the draw's index names
    the same agent whatever the seats). An agent best on a case that comes early is chosen
    whatever its total: specialists keep their slots. ``eps = 0`` is plain lexicase, the right one
    for 0/1 cases (a verifier's verdict per val item); ε-lexicase's per-case ε (La Cava et al. 2016,
    the cases' median absolute deviation) is meant for continuous errors, and on 0/1 cases a
    population split in half gets ε = 0.5, so the most informative cases would filter nothing.

    Args:
        case_scores: shape ``(N, C)``, each agent's score on each case (higher is better).
        n_parents: 1 ≤ P ≤ N.
        rng: the random stream of the case orders and the survivors' draw.
        keys: the agents' :func:`answer_key`.
        eps: ``ε ≥ 0``, the tolerance below the best on a case.
    """
    S = np.asarray(case_scores, dtype=float)
    if S.ndim != 2 or S.shape[1] < 1:
        raise ValueError(f"case_scores must have shape (N, C) with C >= 1, got {S.shape}")
    n = S.shape[0]
    if not 1 <= n_parents <= n:
        raise ValueError(f"n_parents must be between 1 and the population size {n}, got {n_parents}")
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    k = _keys(keys, n)
    chosen: list[int] = []
    while len(chosen) < n_parents:
        pool = np.array(sorted((i for i in range(n) if i not in chosen), key=lambda i: k[i]))
        for c in rng.permutation(S.shape[1]):
            col = S[pool, c]
            pool = pool[col >= col.max() - eps]
            if pool.size == 1:
                break
        chosen.append(int(pool[rng.integers(pool.size)]) if pool.size > 1 else int(pool[0]))
    return chosen


def elite_indices(scores, k: int, *, keys: Sequence[str]) -> list[int]:
    """The ``k`` top-scoring agents (ties → the smaller :func:`answer_key`), as the seed's comment says: the
    elites are the best by score, not the first parents in quality-diversity order."""
    return ranked(scores, keys)[:k]


def complementary_pairs(parents: Sequence[int], dist, n_pairs: int) -> list[tuple[int, int]]:
    """``n_pairs`` pairs of distinct parents, the most behaviourally distant first.

    All unordered pairs ``(p_a, p_b)`` (``a < b`` in selection order) are ranked by ``D`` descending,
    ties kept in selection order (which no seat decides: :func:`select_parents`); when more pairs are needed
    than exist, the ranking is reused in turn (pair ``k`` is ranked pair ``k mod K``). Needs at least two
    distinct parents.
    """
    parents = list(parents)
    if len(set(parents)) != len(parents):
        raise ValueError(f"parents must be distinct, got {parents}")
    if len(parents) < 2:
        raise ValueError(f"complementary pairing needs at least 2 parents, got {parents}")
    D = np.asarray(dist, dtype=float)
    pairs = [(parents[a], parents[b]) for a in range(len(parents)) for b in range(a + 1, len(parents))]
    order = sorted(pairs, key=lambda p: -D[p[0], p[1]])  # sorted() is stable: ties stay in selection order
    return [order[k % len(order)] for k in range(n_pairs)]


def founder_family(families: Sequence[str], agent: int) -> str:
    """The family founder ``agent`` specialises in: ``families[agent mod F]``."""
    return families[int(agent) % len(families)]


def sample_merge_weights(n_parents: int, n_candidates: int, rng: np.random.Generator) -> np.ndarray:
    """Candidate merge-weight vectors, shape ``(n_candidates, n_parents)``, each on the simplex.

    Row 0 is the plain average ``(1/n, …, 1/n)`` — the merge to beat; the other rows are drawn from
    a flat Dirichlet(1, …, 1), uniform on the simplex. Convex weights keep an exact merge
    ``Σ wᵢ·BᵢAᵢ`` inside the hull of the parents' updates (weights summing to more than 1
    overshoot: with three specialists, linear weights of 1 each wrecked the merge, 1/3 each kept it).
    """
    if n_parents < 1 or n_candidates < 1:
        raise ValueError(f"need n_parents >= 1 and n_candidates >= 1, got {n_parents}, {n_candidates}")
    w = np.empty((n_candidates, n_parents))
    w[0] = 1.0 / n_parents
    if n_candidates > 1:
        w[1:] = rng.dirichlet(np.ones(n_parents), size=n_candidates - 1)
    return w
