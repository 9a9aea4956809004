"""Bounded evolutionary search over two-step optimizer programs with response-gated echoes.

Port of seed 004 (``v2_gated_program_search.py``, Echo-Mirror RSI v2). On a random quadratic
``L(x) = ½ xᵀHx`` in d = 24 dimensions, twelve primitive linear fields ``Fᵢ(x) = -PᵢHx`` (``Pᵢ``
SPD mixtures of four base preconditioners) are combined by a grammar of *gated* nodes: a node has
two parents and softmax gates ``β(h) = softmax(θ₀ + θ₁:h)`` over them, driven by the response
``h(x) = (L(x), cᵀx)``, so its coefficients ``b(x) = Σⱼ βⱼ(h(x)) b_parentⱼ(x)`` stay a convex
mixture of primitives. A *program* is an ordered pair (A, B) executed as two steps
``y = x + η F_A(x)``, ``z = y + η F_B(y)``; its score is the loss ratio ``L(z)/L(x)``.

Each generation proposes candidate pairs (gate parameters ~ N(mean, std), parents from a pool),
chooses each pair's order per state from a bracket predictor (the method), keeps the best train
loss, and updates the proposal from the elite (or, for the controls, from random candidates /
not at all). Held-out states never feed back. The order predictors:

- ``minimal`` (``corrected``, ``no_feedback``, ``frozen_proposer``, ``direct_tournament`` for its
  held-out scoring is replaced by trying both orders): the compiled signature ``e`` in the
  rank-r quotient of the skew bracket form T, score ``eᵀΩf``;
- ``first_jet``: the contracted first jet ``z = (b, ∂h-part)``, score ``zᵀTw``;
- ``full_jacobian``: the exact bracket ``gᵀ(J_B F_A - J_A F_B)``;
- ``gate_blind``: ``bᵀCc`` ignoring the gates' response dependence; ``random_order``: coin flips.

The first three are mathematically equivalent, so they must give the same search trajectory
(checked to 1e-10), and the compiled bracket must equal the exact one (checked to 1e-9).

Speed: the seed recurses over grammar nodes once per state. Here every per-node quantity at the
fixed train/test states (coefficients, their response derivative, signature, contracted jet) is
computed once for *all* states of a set, as arrays over states, and cached on the node (nodes are
immutable); only the second step of an execution, at the new states ``y``, needs a fresh
recursion, which is again batched across states. ``lib.program_search.reference`` keeps the
seed's per-state way as the oracle.

Run: ``python -m lib.program_search --seeds 8 --output DIR`` (the seed's CLI, :mod:`lib.program_search`) or
``python -m lib.experiment configs/program_search/<scale>.yaml``.
"""
from __future__ import annotations

import csv
import math
import shutil
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from lib.core.config import namespace_config
from lib.core import config as config_lib
from lib.core.config import Field
from lib.core.errors import MissingDataError
from lib.core.jsonfile import write_json
from lib.core.manifest import check_resumable, manifest_matches, now, read_manifest, write_manifest
from lib.core.paths import data_dir

METHODS = ("corrected", "generic_first_jet", "full_jacobian", "gate_blind", "random_order",
           "no_feedback", "frozen_proposer", "direct_tournament")
MODE = {"corrected": "minimal", "generic_first_jet": "first_jet", "full_jacobian": "full_jacobian",
        "gate_blind": "gate_blind", "random_order": "random_order", "no_feedback": "minimal",
        "frozen_proposer": "minimal", "direct_tournament": "minimal"}
FILES = {"rows": "v2_program_search.csv", "diagnostics": "v2_bracket_diagnostics.csv",
         "costs": "v2_program_costs.csv", "summary": "v2_program_summary.json"}
COST_NOTE = ("Program/primitive-value budgets match in training. Compiler arithmetic, supplied Jacobians, "
             "model operations, and diagnostic overhead are separately disclosed; no total-FLOP or "
             "wall-clock matching claim.")
STATUS = ("Executed bounded optimizer-program evolution. The proposer learns parent choices and "
          "gate-parameter distributions from measured losses; mutation and selection algorithm remains fixed.")
# The seed's scope notes, verbatim (its scraped text lost some spaces, e.g. "offset203611080").
SCOPE = {
    "train": "four task starting states per independently generated quadratic system",
    "heldout": "24 new initial states of the same quadratic system; never used for selection or distribution updates",
    "not_tested": "new natural task families, LLMs, modification of the search algorithm itself, open-ended RSI",
    "low_rank": "12 primitives are mixtures of four base linear fields, deliberately imposing a small response-relative form",
    "repair_and_confirmation": "An earlier pilot with unbounded affine gates failed from held-out instability. Those outputs are preserved as v2_pilot_*; this convex-softmax repair uses fresh independent seed offset203611080, versus202611080 in the pilot.",
    "protocol_changes": "The repair also removes anchor-fitted field normalization and uses primitive SPD norm bound4 (pilot bound1). Pilot-to-confirmation numerical changes are not a controlled single-factor comparison.",
    "restricted_grammar_rank": "rankT is an exact compiler dimension for the convex grammar; minimality for this restricted grammar is not asserted.",
    "stability": "Primitive preconditioners are SPD with norm at most4; every recursive gate is a convex mixture. H has norm1 and step0.15, so every actual update is a descent step, uniformly over states and program depth.",
    "ordering": "bracket predicts leading order only; selected programs are evaluated on the actual nonlinear gated fields",
    "budget": "each method executes240 training two-step programs per seed; direct tournament uses half as many candidates and evaluates both orders",
    "additional_costs": "All actual program executions charge24 primitive field evaluations. Jacobian matrices are supplied; compiler arithmetic and evolutionary updates are not FLOP-matched.",
    "baseline": "Generic first-jet and full-Jacobian methods are mathematically equivalent and reproduce the same search. No superiority to them in discovery quality is asserted.",
    "oracle": "The explicitly supplied quadratic Hessian admits a Newton step that solves the task. This study is not a state-of-the-art optimization performance claim.",
}
FROZEN_NOTE = ("frozen_proposer keeps its proposal mean, std and parent pool fixed for all generations "
               "(the seed's text admits a reading that averages an empty elite set into NaN after "
               "generation 1; that reading is a defect and is not reproduced).")


@dataclass(frozen=True)
class SearchConfig:
    """The seed's ``Config``: problem size, search budget and seeds."""
    dimension: int = 24
    primitives: int = 12
    underlying_fields: int = 4
    responses: int = 2
    train_states: int = 4
    test_states: int = 24
    generations: int = 5
    candidate_budget: int = 12
    seeds: int = 8
    step_size: float = 0.15
    elite_count: int = 3
    score_tolerance: float = 1e-12
    seed_offset: int = 203611080


# ----------------------------------------------------------------------------- task
class Task:
    """A random quadratic ``L(x) = ½xᵀHx`` (eigenvalues geomspace(0.04, 1)), primitive fields
    ``Fᵢ(x) = mapsᵢ x`` with ``mapsᵢ = -PᵢH``, a response direction c, and unit train/test states."""

    def __init__(self, seed: int, cfg: SearchConfig):
        self.cfg = cfg
        rng = np.random.default_rng(cfg.seed_offset + 10000 * seed)
        d, m = cfg.dimension, cfg.primitives
        rot, _ = np.linalg.qr(rng.normal(size=(d, d)))
        eig = np.geomspace(0.04, 1., d)
        self.H = (rot * eig) @ rot.T
        basis = [np.eye(d)]
        for _ in range(cfg.underlying_fields - 1):
            o, _ = np.linalg.qr(rng.normal(size=(d, d)))
            basis.append((o * rng.uniform(.2, 4., d)) @ o.T)
        mixing = np.vstack((np.eye(cfg.underlying_fields),
                            rng.dirichlet(np.ones(cfg.underlying_fields), size=m - cfg.underlying_fields)))
        preconditioners = np.einsum("ib,bjk->ijk", mixing, np.asarray(basis))
        self.maps = np.asarray([-p @ self.H for p in preconditioners])
        self.c = rng.normal(size=d)
        self.c /= np.linalg.norm(self.c)
        self.train = rng.normal(size=(cfg.train_states, d))
        self.train /= np.linalg.norm(self.train, axis=1)[:, None]
        test_rng = np.random.default_rng(cfg.seed_offset + 10000 * seed + 2222)
        self.test = test_rng.normal(size=(cfg.test_states, d))
        self.test /= np.linalg.norm(self.test, axis=1)[:, None]
        self._flat_maps = self.maps.reshape(m * d, d)

    def loss(self, x):
        return float(.5 * x @ self.H @ x)

    def response(self, x):
        return np.array([self.loss(x), self.c @ x])

    def anchor(self, x) -> dict:
        """Bracket data at state x: u = [F₁(x) … F_m(x)], C = uᵀv - vᵀu (v = Jᵢᵀg), K = ∂h·u,
        T = [[C, Kᵀ], [-K, 0]], its column space basis a (rank r), Ω = aTaᵀ, ℓ = (q, 0)aᵀ."""
        g = self.H @ x
        dh = np.vstack((g, self.c))
        u = np.einsum("ijk,k->ji", self.maps, x)
        v = np.einsum("ijk,j->ki", self.maps, g)
        c = u.T @ v - v.T @ u
        k = dh @ u
        t = np.block([[c, k.T], [-k, np.zeros((len(k), len(k)))]])
        left, s, _ = np.linalg.svd(t)
        rank = int(np.count_nonzero(s > 1e-10 * max(s[0], 1.)))
        a = left[:, :rank].T
        omega = a @ t @ a.T
        q = k[0]
        ell = np.r_[q, np.zeros(len(k))] @ a.T
        return {"x": x, "g": g, "dh": dh, "h": self.response(x), "u": u, "c": c, "k": k, "q": q, "t": t,
                "a": a, "omega": omega, "ell": ell, "gate": a[:, self.cfg.primitives:], "rank": rank}

    # batched versions over states (rows of X)
    def losses(self, X):
        """½ xᵀHx for every row of X."""
        return .5 * np.einsum("sj,sj->s", X @ self.H, X)

    def responses(self, X):
        """h(x) = (L(x), cᵀx) for every row: shape (S, 2)."""
        return np.stack((self.losses(X), X @ self.c), axis=1)

    def primitive_values(self, X):
        """MX[s, i] = Fᵢ(x_s) = mapsᵢ x_s: shape (S, m, d)."""
        return (X @ self._flat_maps.T).reshape(len(X), self.cfg.primitives, self.cfg.dimension)


class AnchorSet:
    """The anchors of a set of states stacked over states (signature arrays zero-padded to the
    largest rank, which leaves every score unchanged)."""

    def __init__(self, task: Task, X):
        self.X = np.asarray(X)
        self.anchors = [task.anchor(x) for x in self.X]
        A = self.anchors
        S, m, r = len(A), task.cfg.primitives, max(a["rank"] for a in A)
        self.ranks = [a["rank"] for a in A]
        self.H = np.stack([a["h"] for a in A])                      # (S, 2)
        self.G = np.stack([a["g"] for a in A])                      # (S, d)
        self.DH = np.stack([a["dh"] for a in A])                    # (S, 2, d)
        self.U = np.stack([a["u"] for a in A])                      # (S, d, m)
        self.C = np.stack([a["c"] for a in A])                      # (S, m, m)
        self.T = np.stack([a["t"] for a in A])                      # (S, m+2, m+2)
        self.Q = np.stack([a["q"] for a in A])                      # (S, m)
        self.Asig = np.zeros((S, r, m + 2))
        self.Omega = np.zeros((S, r, r))
        self.Ell = np.zeros((S, r))
        for s, a in enumerate(A):
            k = a["rank"]
            self.Asig[s, :k] = a["a"]
            self.Omega[s, :k, :k] = a["omega"]
            self.Ell[s, :k] = a["ell"]
        self.Gate = self.Asig[:, :, m:]                             # (S, r, 2)
        self.MX = task.primitive_values(self.X)                     # (S, m, d)
        self.GM = np.einsum("sj,ijk->sik", self.G, task.maps)       # gᵀ mapsᵢ: (S, m, d)
        self.GU = np.einsum("sj,sji->si", self.G, self.U)           # gᵀ u: (S, m)
        self.L0 = np.maximum(task.losses(self.X), 1e-30)

    def __len__(self):
        return len(self.X)


# ----------------------------------------------------------------------------- grammar
def gates(params, H):
    """Softmax gates of a node at responses H (S, R): weights β (S, P) and ∂β/∂h (S, P, R)."""
    logits = params[:, 0][None, :] + H @ params[:, 1:].T
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return w, w[:, :, None] * (params[None, :, 1:] - (w @ params[:, 1:])[:, None, :])


class Grammar:
    """Gated nodes over the primitives, with every per-node quantity at the train and test
    anchor sets computed once for all states of the set and cached."""

    def __init__(self, task: Task, sets: dict[str, AnchorSet]):
        self.task, self.sets = task, sets
        self.m = task.cfg.primitives
        self.eta = task.cfg.step_size
        self.nodes = [{"base": i, "depth": 0} for i in range(self.m)]
        self._cache: dict[tuple, np.ndarray] = {}

    def add(self, parents, params) -> int:
        self.nodes.append({"parents": tuple(int(p) for p in parents), "params": np.array(params, copy=True),
                           "depth": 1 + max(self.nodes[int(p)]["depth"] for p in parents)})
        return len(self.nodes) - 1

    def depth(self, index) -> int:
        return self.nodes[index]["depth"]

    def _gates(self, index, name):
        key = ("gates", name, index)
        if key not in self._cache:
            self._cache[key] = gates(self.nodes[index]["params"], self.sets[name].H)
        return self._cache[key]

    def coefficients(self, index, name):
        """b (S, m) and ∂b/∂h (S, m, R) of a node at every state of anchor set ``name``."""
        key = ("b", name, index)
        if key in self._cache:
            return self._cache[key]
        node, S = self.nodes[index], len(self.sets[name])
        if "base" in node:
            b = np.zeros((S, self.m))
            b[:, node["base"]] = 1.
            db = np.zeros((S, self.m, self.task.cfg.responses))
        else:
            beta, dbeta = self._gates(index, name)
            b, db = 0., 0.
            for j, parent in enumerate(node["parents"]):
                bp, dp = self.coefficients(parent, name)
                b = b + beta[:, j, None] * bp
                db = db + (beta[:, j, None, None] * dp + bp[:, :, None] * dbeta[:, j, None, :])
        self._cache[key] = (b, db)
        return b, db

    def coefficients_at(self, index, H, memo):
        """b (S, m) of a node at arbitrary responses H (S, R); ``memo`` is shared within one batch."""
        if index in memo:
            return memo[index]
        node = self.nodes[index]
        if "base" in node:
            b = np.zeros((len(H), self.m))
            b[:, node["base"]] = 1.
        else:
            beta, _ = gates(node["params"], H)
            b = 0.
            for j, parent in enumerate(node["parents"]):
                b = b + beta[:, j, None] * self.coefficients_at(parent, H, memo)
        memo[index] = b
        return b

    def signature(self, index, name):
        """Compiled signature e (S, r): base e = a[:, i]; node e = Σⱼ βⱼ eⱼ + (ℓ·eⱼ) gate ∂βⱼ."""
        key = ("e", name, index)
        if key in self._cache:
            return self._cache[key]
        node, A = self.nodes[index], self.sets[name]
        if "base" in node:
            e = A.Asig[:, :, node["base"]].copy()
        else:
            beta, dbeta = self._gates(index, name)
            e = 0.
            for j, parent in enumerate(node["parents"]):
                ep = self.signature(parent, name)
                e = e + (beta[:, j, None] * ep
                         + np.einsum("sr,sr->s", A.Ell, ep)[:, None] * np.einsum("srk,sk->sr", A.Gate, dbeta[:, j]))
        self._cache[key] = e
        return e

    def contracted_jet(self, index, name):
        """Raw first jet z = (b, s) (S, m+R): z = Σⱼ βⱼ zⱼ, s += (q·bⱼ) ∂βⱼ."""
        key = ("z", name, index)
        if key in self._cache:
            return self._cache[key]
        node, A = self.nodes[index], self.sets[name]
        S = len(A)
        if "base" in node:
            z = np.zeros((S, self.m + self.task.cfg.responses))
            z[:, node["base"]] = 1.
        else:
            beta, dbeta = self._gates(index, name)
            z = np.zeros((S, self.m + self.task.cfg.responses))
            for j, parent in enumerate(node["parents"]):
                zp = self.contracted_jet(parent, name)
                z += beta[:, j, None] * zp
                z[:, self.m:] += np.einsum("si,si->s", A.Q, zp[:, :self.m])[:, None] * dbeta[:, j]
        self._cache[key] = z
        return z

    def score(self, left, right, name, mode):
        """Predicted order bracket at each state of set ``name``; > tolerance means run (right, left)."""
        A = self.sets[name]
        if mode == "minimal":
            e, f = self.signature(left, name), self.signature(right, name)
            return np.einsum("sr,srq,sq->s", e, A.Omega, f)
        if mode == "first_jet":
            z, w = self.contracted_jet(left, name), self.contracted_jet(right, name)
            return np.einsum("sr,srq,sq->s", z, A.T, w)
        b, db = self.coefficients(left, name)
        c, dc = self.coefficients(right, name)
        if mode == "gate_blind":
            return np.einsum("sr,srq,sq->s", b, A.C, c)
        if mode == "full_jacobian":
            # gᵀ(J_B F_A - J_A F_B) with J = Σ bᵢ mapsᵢ + u ∂b ∂h and F = u b
            y, z = np.einsum("sdi,si->sd", A.U, b), np.einsum("sdi,si->sd", A.U, c)
            gdy = np.einsum("si,sid->sd", b, A.GM) + np.einsum("si,sik,skd->sd", A.GU, db, A.DH)
            gdz = np.einsum("si,sid->sd", c, A.GM) + np.einsum("si,sik,skd->sd", A.GU, dc, A.DH)
            return np.einsum("sd,sd->s", gdz, y) - np.einsum("sd,sd->s", gdy, z)
        raise ValueError(f"unknown bracket mode {mode!r}; use minimal, first_jet, gate_blind or full_jacobian")

    def execute(self, left, right, name, reverse=False, rows=slice(None)):
        """Loss ratio L(z)/max(L(x), 1e-30) of y = x + ηF_first(x), z = y + ηF_second(y) at the
        states of set ``name`` (restricted to ``rows``); ``reverse`` (bool or per-state array)
        runs (right, left) instead of (left, right)."""
        A = self.sets[name]
        X = A.X[rows]
        reverse = np.broadcast_to(np.asarray(reverse, dtype=bool), (len(X),))
        bl, br = self.coefficients(left, name)[0][rows], self.coefficients(right, name)[0][rows]
        first = np.where(reverse[:, None], br, bl)
        Y = X + self.eta * np.einsum("si,sid->sd", first, A.MX[rows])
        HY, memo = self.task.responses(Y), {}
        if reverse.all():
            second = self.coefficients_at(left, HY, memo)
        elif not reverse.any():
            second = self.coefficients_at(right, HY, memo)
        else:
            second = np.where(reverse[:, None], self.coefficients_at(left, HY, memo),
                              self.coefficients_at(right, HY, memo))
        Z = Y + self.eta * np.einsum("si,sid->sd", second, self.task.primitive_values(Y))
        return self.task.losses(Z) / A.L0[rows]


# ----------------------------------------------------------------------------- search
def evaluate_program(grammar, pair, name, mode, tolerance, flags=None, both=False):
    """Mean loss ratio of a pair over set ``name`` and the chosen orders (1 = reversed)."""
    left, right = pair
    if both:
        ab = grammar.execute(left, right, name, False)
        ba = grammar.execute(left, right, name, True)
        reverse = ba < ab
        values = np.where(reverse, ba, ab)
    else:
        reverse = np.asarray(flags, dtype=bool) if mode == "random_order" else \
            grammar.score(left, right, name, mode) > tolerance
        values = grammar.execute(left, right, name, reverse)
    return float(np.mean(values)), [int(r) for r in reverse]


class SeedSetup:
    """What all methods of one seed share: the task, its anchor sets, and the initial-GD baseline."""

    def __init__(self, seed: int, cfg: SearchConfig):
        t0 = time.perf_counter()
        self.seed, self.cfg = seed, cfg
        self.task = Task(seed, cfg)
        self.sets = {"train": AnchorSet(self.task, self.task.train), "test": AnchorSet(self.task, self.task.test)}
        self.initial_gd = float(np.mean(Grammar(self.task, self.sets).execute(0, 0, "test")))
        self.seconds = time.perf_counter() - t0


# The seed's proposal dynamics and random streams, named once (the per-state reference uses them too).
SEARCH_STREAM = 3333    # a search's generator: default_rng(seed_offset + 10000·seed + 3333)
HELDOUT_STREAM = 90000  # random_order's held-out coin flips: default_rng(seed_offset + seed + 90000)
MEAN_KEEP, MEAN_TAKE = .65, .35      # mean ← .65·mean + .35·mean(elite)
STD_KEEP, STD_TAKE = .8, .2          # std  ← clip(.8·std + .2·std(elite), .12, 2.4)
STD_MIN, STD_MAX = .12, 2.4
FRESH_PARENT = .2                    # P(a parent is drawn from all primitives rather than the pool)


def search_rng(seed: int, cfg: SearchConfig) -> np.random.Generator:
    """The generator of one (seed, method) search: proposals, parents, random_order's train flips."""
    return np.random.default_rng(cfg.seed_offset + 10000 * seed + SEARCH_STREAM)


def heldout_rng(seed: int, cfg: SearchConfig) -> np.random.Generator:
    """The generator of random_order's held-out coin flips (restarted for every held-out evaluation)."""
    return np.random.default_rng(cfg.seed_offset + seed + HELDOUT_STREAM)


def initial_proposal(cfg: SearchConfig) -> tuple[np.ndarray, np.ndarray]:
    """The proposal distribution before generation 1: gate parameters ~ N(0, 2²), biases ~ N(0, .8²);
    shape ``(2 sides, 2 parents, responses + 1)``."""
    mean = np.zeros((2, 2, cfg.responses + 1))
    std = 2 * np.ones_like(mean)
    std[:, :, 0] = .8
    return mean, std


def propose_pair(rng: np.random.Generator, grammar, mean: np.ndarray, std: np.ndarray, pool: list[int],
                 cfg: SearchConfig) -> tuple[list[int], np.ndarray]:
    """One candidate program (A, B): gate parameters ~ N(mean, std); each side's two parents drawn from
    the pool (or, with probability :data:`FRESH_PARENT`, from all primitives); the two new nodes are
    added to ``grammar``. Returns (the node indices, the parameters)."""
    params = rng.normal(mean, std)
    pair = []
    for side in range(2):
        parents = []
        for _ in range(2):
            options = list(range(cfg.primitives)) if rng.random() < FRESH_PARENT else pool
            parents.append(int(rng.choice(options)))
        pair.append(grammar.add(parents, params[side]))
    return pair, params


def update_proposal(mean: np.ndarray, std: np.ndarray, elite_params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One proposal update from the elite's gate parameters (shape ``(elite, 2, 2, responses + 1)``):
    ``mean ← .65·mean + .35·mean(elite)``, ``std ← clip(.8·std + .2·std(elite), .12, 2.4)``."""
    return (MEAN_KEEP * mean + MEAN_TAKE * elite_params.mean(axis=0),
            np.clip(STD_KEEP * std + STD_TAKE * elite_params.std(axis=0), STD_MIN, STD_MAX))


@dataclass(frozen=True)
class SearchRun:
    """What stays fixed through one (seed, method) search: who it is, its config, the seed's setup
    and the grammar it grows."""

    seed: int
    method: str
    cfg: SearchConfig
    setup: SeedSetup
    grammar: Grammar

    @property
    def mode(self) -> str:
        return MODE[self.method]

    @property
    def tournament(self) -> bool:
        """``direct_tournament`` runs each candidate both ways round and keeps the better."""
        return self.method == "direct_tournament"

    @property
    def number(self) -> int:
        """Candidates per generation: half the budget for a tournament (each runs twice)."""
        return self.cfg.candidate_budget // 2 if self.tournament else self.cfg.candidate_budget


@dataclass
class SearchState:
    """What a search changes as it goes: the proposal distribution (``mean``, ``std``) and the parent
    ``pool``, the best program on the training states so far, and the work done (training program
    executions, prediction scores)."""

    mean: np.ndarray
    std: np.ndarray
    pool: list[int]
    best: tuple | None = None
    best_train: float = float("inf")
    executions: int = 0
    anchors: int = 0


def generation_record(run: SearchRun, state: SearchState, generation: int, candidates, proposal_test_losses,
                      held_out_best: float) -> dict:
    """The row of one generation of a (seed, method) search (the seed's record keys)."""
    cfg, setup = run.cfg, run.setup
    return {
        "seed": run.seed, "method": run.method, "generation": generation,
        "training_program_executions": state.executions,
        "train_best_loss_ratio": state.best_train, "heldout_loss_ratio": held_out_best,
        "mean_proposed_training_loss_ratio": float(np.mean([c[0] for c in candidates])),
        "mean_proposed_heldout_loss_ratio": float(np.mean(proposal_test_losses)),
        "fraction_proposals_beating_initial_gd": float(np.mean(np.asarray(proposal_test_losses) < setup.initial_gd)),
        "proposal_mean_change_norm": float(np.linalg.norm(state.mean)),
        "proposal_std_mean": float(np.mean(state.std)),
        "best_program_depth": max(run.grammar.depth(i) for i in state.best),
        "nodes_generated": len(run.grammar.nodes) - cfg.primitives,
        "minimal_signature_rank_min": min(setup.sets["train"].ranks),
        "minimal_signature_rank_max": max(setup.sets["train"].ranks),
        "test_program_executions": cfg.test_states * (run.number + 1) * (2 if run.tournament else 1) + cfg.test_states}


def bracket_probes(grammar, candidates, seed: int, generation: int, cfg: SearchConfig) -> list[dict]:
    """The ``corrected`` method's diagnostics: every candidate's bracket predictions against the
    exact bracket and the actual loss order, on the first four test states (never shown to the proposer)."""
    probe = slice(0, min(4, cfg.test_states))
    out = []
    for _, pair, _, _ in candidates:
        exact = grammar.score(*pair, "test", "full_jacobian")[probe]
        compiled = grammar.score(*pair, "test", "minimal")[probe]
        firstjet = grammar.score(*pair, "test", "first_jet")[probe]
        blind = grammar.score(*pair, "test", "gate_blind")[probe]
        ab = grammar.execute(*pair, "test", False, rows=probe)
        ba = grammar.execute(*pair, "test", True, rows=probe)
        depth = max(grammar.depth(i) for i in pair)
        for s in range(len(ab)):
            gap = float(ab[s] - ba[s])
            out.append({
                "seed": seed, "generation": generation, "depth": depth,
                "compiled_error": abs(float(compiled[s] - exact[s])),
                "first_jet_error": abs(float(firstjet[s] - exact[s])),
                "blind_error": abs(float(blind[s] - exact[s])), "exact_bracket": float(exact[s]),
                "actual_loss_order_gap": gap, "non_tie": int(abs(gap) > 1e-12),
                "compiled_correct_actual_order": int((compiled[s] <= cfg.score_tolerance) == (gap <= 0)),
                "blind_correct_actual_order": int((blind[s] <= cfg.score_tolerance) == (gap <= 0))})
    return out


def run_cost(run: SearchRun, state: SearchState, records, diagnostics, seconds: float) -> dict:
    """What one (seed, method) search cost: seconds, program executions and predictor calls."""
    cfg = run.cfg
    return {
        "seed": run.seed, "method": run.method, "seconds_including_diagnostics": seconds,
        "setup_seconds_including_task_and_anchor_construction": run.setup.seconds,
        "training_program_executions": state.executions,
        "training_primitive_field_evaluations": 2 * cfg.primitives * state.executions,
        "training_loss_calls_in_program_execution": 4 * state.executions,
        "prediction_score_count": state.anchors,
        "base_jacobian_matrices_available": cfg.primitives,
        "test_program_executions_all_checkpoints": sum(r["test_program_executions"] for r in records),
        "diagnostic_program_executions": 2 * len(diagnostics),
        "note": COST_NOTE}


def one_run(seed: int, method: str, cfg: SearchConfig, setup: SeedSetup | None = None):
    """One (seed, method) search; returns the seed's (records, diagnostics, cost).

    Each generation proposes its candidates and scores them on the training states
    (:func:`propose_generation`), scores them on the held-out states (never shown to the proposer),
    updates the proposal (:func:`learn_proposal`) and records the generation; the ``corrected``
    method also records its bracket diagnostics (:func:`bracket_probes`).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {list(METHODS)}")
    setup = setup or SeedSetup(seed, cfg)
    run = SearchRun(seed, method, cfg, setup, Grammar(setup.task, setup.sets))
    start = time.perf_counter()
    rng = search_rng(seed, cfg)
    mean, std = initial_proposal(cfg)
    state = SearchState(mean, std, pool=list(range(cfg.primitives)))
    records, diagnostics = [], []
    held_out = held_out_loss(run)
    for generation in range(1, cfg.generations + 1):
        candidates = propose_generation(run, state, rng)
        proposal_test_losses = [held_out(c[1]) for c in candidates]
        learn_proposal(run, state, rng, candidates)
        records.append(generation_record(run, state, generation, candidates, proposal_test_losses,
                                         held_out(state.best)))
        if method == "corrected":
            diagnostics += bracket_probes(run.grammar, candidates, seed, generation, cfg)
    cost = run_cost(run, state, records, diagnostics, seconds=time.perf_counter() - start)
    return records, diagnostics, cost


def held_out_loss(run: SearchRun):
    """``pair -> its mean loss ratio on the held-out states``, cached; evaluation never changes the trained
    program or the proposal state. random_order's held-out coin flips are drawn once: held-out evaluation
    restarts the same local generator each time (:func:`heldout_rng`)."""
    cfg, tournament = run.cfg, run.tournament
    local_rng = heldout_rng(run.seed, cfg)
    test_flags = [bool(local_rng.integers(0, 2)) for _ in range(cfg.test_states)] if run.mode == "random_order" else None
    cache: dict[tuple, float] = {}

    def held_out(pair):
        if pair not in cache:
            cache[pair] = evaluate_program(run.grammar, pair, "test", run.mode, cfg.score_tolerance,
                                           test_flags, both=tournament)[0]
        return cache[pair]
    return held_out


def propose_generation(run: SearchRun, state: SearchState, rng: np.random.Generator) -> list[tuple]:
    """One generation's candidates ``(training loss, pair, gate parameters, order choices)``, best first:
    each proposed (:func:`propose_pair`) and run on the training states (random_order: on coin flips
    drawn from ``rng``); the work is counted and the best program so far kept in ``state``."""
    cfg, mode, tournament = run.cfg, run.mode, run.tournament
    candidates = []
    for _ in range(run.number):
        pair, params = propose_pair(rng, run.grammar, state.mean, state.std, state.pool, cfg)
        flags = [bool(rng.integers(0, 2)) for _ in range(cfg.train_states)] if mode == "random_order" else None
        loss, choices = evaluate_program(run.grammar, pair, "train", mode, cfg.score_tolerance, flags, both=tournament)
        state.executions += cfg.train_states * (2 if tournament else 1)
        state.anchors += cfg.train_states if run.method not in ("random_order", "direct_tournament") else 0
        candidates.append((loss, tuple(pair), params.copy(), choices))
        if loss < state.best_train:
            state.best_train, state.best = loss, tuple(pair)
    candidates.sort(key=lambda c: c[0])
    return candidates


def learn_proposal(run: SearchRun, state: SearchState, rng: np.random.Generator, candidates: list[tuple]) -> None:
    """Proposal update (:func:`update_proposal`) and the next parent pool: learners from the elite (the
    best ``elite_count`` candidates), no_feedback from as many random candidates (same dynamics, no
    selection signal), frozen_proposer not at all."""
    if run.method == "frozen_proposer":
        return
    if run.method == "no_feedback":
        chosen = rng.choice(len(candidates), size=min(run.cfg.elite_count, len(candidates)), replace=False)
        elite = [candidates[i] for i in chosen]
    else:
        elite = candidates[:run.cfg.elite_count]
    elite_params = np.asarray([c[2] for c in elite])
    state.mean, state.std = update_proposal(state.mean, state.std, elite_params)
    state.pool = [index for c in elite for index in c[1]]


def run_seed(seed: int, cfg: SearchConfig, methods=METHODS, search=None):
    """All methods of one seed: (records, diagnostics, costs).

    ``search(seed, method, cfg) -> (records, diagnostics, cost)`` runs one search; by default the
    batched :func:`one_run`, all methods sharing one :class:`SeedSetup`. The seed's per-state way,
    ``lib.program_search.reference.one_run``, is passed in by its callers (the CLI's
    ``--reference``, the benchmark, the tests); this module never imports it.
    """
    rows, diags, costs = [], [], []
    if search is None:
        setup = SeedSetup(seed, cfg)
        runs = (one_run(seed, m, cfg, setup) for m in methods)
    else:
        runs = (search(seed, m, cfg) for m in methods)
    for r, d, c in runs:
        rows += r
        diags += d
        costs.append(c)
    return rows, diags, costs


# ----------------------------------------------------------------------------- summary
def aggregate(rows, cfg: SearchConfig, methods=METHODS):
    """The seed's per-(method, generation) summary over seeds."""
    summary = []
    for method in methods:
        for generation in range(1, cfg.generations + 1):
            part = [r for r in rows if r["method"] == method and r["generation"] == generation]
            x = np.asarray([r["heldout_loss_ratio"] for r in part])
            prop = [r["mean_proposed_heldout_loss_ratio"] for r in part]
            summary.append({
                "method": method, "generation": generation,
                "mean_heldout_loss_ratio": float(x.mean()),
                "std_heldout_loss_ratio": float(x.std(ddof=1)) if len(x) > 1 else 0.,
                "median_heldout_loss_ratio": float(np.median(x)),
                "mean_train_best_loss_ratio": float(np.mean([r["train_best_loss_ratio"] for r in part])),
                "mean_proposed_training_loss_ratio": float(np.mean([r["mean_proposed_training_loss_ratio"] for r in part])),
                "mean_proposed_heldout_loss_ratio": float(np.mean(prop)),
                "std_proposed_heldout_loss_ratio": float(np.std(prop, ddof=1)) if len(part) > 1 else 0.,
                "mean_fraction_proposals_beating_initial_gd": float(np.mean([r["fraction_proposals_beating_initial_gd"] for r in part])),
                "mean_best_program_depth": float(np.mean([r["best_program_depth"] for r in part]))})
    return summary


def equivalence_errors(rows, cfg: SearchConfig):
    """max |held-out(corrected) - held-out(other)| over seeds and generations, for the two
    methods that are mathematically equivalent to ``corrected``."""
    key = {(r["seed"], r["method"], r["generation"]): r["heldout_loss_ratio"] for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    return {other: max(abs(key[s, "corrected", g] - key[s, other, g])
                       for s in seeds for g in range(1, cfg.generations + 1))
            for other in ("generic_first_jet", "full_jacobian")}


def diagnostic_summary(diags, eq_errors):
    nontie = [d for d in diags if d["non_tie"]]
    return {"number_of_probes": len(diags),
            "max_compiler_bracket_absolute_error": max(d["compiled_error"] for d in diags),
            "max_firstjet_bracket_absolute_error": max(d["first_jet_error"] for d in diags),
            "max_gateblind_bracket_absolute_error": max(d["blind_error"] for d in diags),
            "mean_gateblind_bracket_absolute_error": float(np.mean([d["blind_error"] for d in diags])),
            "compiled_actual_order_accuracy": float(np.mean([d["compiled_correct_actual_order"] for d in nontie])),
            "gateblind_actual_order_accuracy": float(np.mean([d["blind_correct_actual_order"] for d in nontie])),
            "non_tie_probes": len(nontie), "equivalent_compiler_search_trajectory_max_difference": eq_errors}


def self_checks(diag_summary) -> None:
    """The seed's two asserts: compiled bracket = exact bracket (< 1e-9), and the three
    equivalent predictors give the same search trajectory (< 1e-10)."""
    err = diag_summary["max_compiler_bracket_absolute_error"]
    if not err < 1e-9:
        raise AssertionError(f"compiled bracket differs from the exact bracket by {err:.3g} (>= 1e-9)")
    eq = diag_summary["equivalent_compiler_search_trajectory_max_difference"]
    if not max(eq.values()) < 1e-10:
        raise AssertionError(f"equivalent predictors gave different search trajectories: {eq} (>= 1e-10)")


def summarize(rows, diags, costs, cfg: SearchConfig, methods=METHODS) -> dict:
    """The seed's ``v2_program_summary.json`` content (runs the two self-checks)."""
    summary = aggregate(rows, cfg, methods)
    diag = diagnostic_summary(diags, equivalence_errors(rows, cfg))
    self_checks(diag)
    return {"status": STATUS, "config": asdict(cfg), "methods": list(methods), "aggregate": summary,
            "diagnostics": diag, "costs": costs, "scope": SCOPE}


def strict_json(obj):
    """Replace non-finite floats by None so the JSON is strict (no bare NaN/Infinity)."""
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def write_csv(path: Path, rows) -> None:
    with Path(path).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def write_outputs(folder, rows, diags, costs, summary) -> list[Path]:
    """The seed's four files in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder / FILES["rows"], rows)
    write_csv(folder / FILES["diagnostics"], diags)
    write_csv(folder / FILES["costs"], costs)
    write_json(folder / FILES["summary"], strict_json(summary), sort_keys=False)
    return [folder / f for f in FILES.values()]


def run_all(cfg: SearchConfig, seeds=None, search=None, progress: bool = False):
    """Every method on every seed: (rows, diagnostics, costs, summary); ``search`` as :func:`run_seed`."""
    seeds = range(cfg.seeds) if seeds is None else seeds
    if progress:
        from tqdm.auto import tqdm
        seeds = tqdm(list(seeds), desc="program search seeds")
    rows, diags, costs = [], [], []
    for seed in seeds:
        r, d, c = run_seed(seed, cfg, search=search)
        rows += r
        diags += d
        costs += c
    return rows, diags, costs, summarize(rows, diags, costs, cfg)


# ----------------------------------------------------------------------------- runner contract
SCHEMA = {
    "seeds": Field(int, default=8, min=1, doc="number of independent quadratic tasks (seeds 0..seeds-1)"),
    "dimension": Field(int, default=24, min=2, doc="state dimension d"),
    "primitives": Field(int, default=12, min=1, doc="number of primitive fields m"),
    "underlying_fields": Field(int, default=4, min=1, doc="base preconditioners the primitives mix"),
    "responses": Field(int, default=2, min=2, max=2, doc="response size: h(x) = (L(x), c.x)"),
    "train_states": Field(int, default=4, min=1, doc="states used for selection"),
    "test_states": Field(int, default=24, min=1, doc="held-out states (never used for selection)"),
    "generations": Field(int, default=5, min=1, doc="search generations"),
    "candidate_budget": Field(int, default=12, min=2, doc="candidate pairs per generation (tournament: half)"),
    "step_size": Field(float, default=0.15, min=0.0, max=1.0, doc="step size eta of each program step"),
    "elite_count": Field(int, default=3, min=1, doc="candidates that update the proposal"),
    "score_tolerance": Field(float, default=1e-12, min=0.0, doc="bracket above this: run the reversed order"),
    "seed_offset": Field(int, default=203611080, min=0, doc="base of every random seed"),
    "shard_seed": Field(int, default=-1, min=-1,
                        doc="-1: run all seeds; s >= 0: run only seed s (one shard of the sweep)"),
}


def _checks(cfg: dict) -> list[str]:
    errs = []
    if cfg["shard_seed"] >= cfg["seeds"]:
        errs.append(f"shard_seed: {cfg['shard_seed']} must be below seeds={cfg['seeds']} (or -1 for all)")
    if cfg["primitives"] < cfg["underlying_fields"]:
        errs.append("primitives must be at least underlying_fields (primitives mix the base fields)")
    if cfg["elite_count"] > cfg["candidate_budget"] // 2:
        errs.append("elite_count must be at most candidate_budget // 2 (the tournament's candidate count)")
    return errs


def validate_config(cfg: dict) -> dict:
    return config_lib.validate(cfg, SCHEMA, _checks)


def search_config(cfg: dict) -> SearchConfig:
    return SearchConfig(**{f.name: cfg[f.name] for f in fields(SearchConfig)})


def shards(cfg: dict) -> list[dict]:
    """One shard per seed (all eight methods of that seed)."""
    cfg = validate_config(cfg)
    return [{**cfg, "shard_seed": s} for s in range(cfg["seeds"])]


def _shard_files(folder: Path, seed: int) -> dict[str, Path]:
    return {k: folder / "shards" / f"{k}_s{seed}.csv" for k in ("rows", "diagnostics", "costs")}


def manifest_config(cfg: dict) -> dict:
    """The config that identifies the folder: the full run's (every seed's shards share it)."""
    return {**cfg, "shard_seed": -1}


def shard_done(cfg: dict) -> bool:
    """True when the seed of shard ``cfg`` is finished (its marker, or the merged folder is complete)."""
    cfg = validate_config(cfg)
    folder = data_dir(cfg["scale"], cfg["experiment"])
    if manifest_matches(folder, manifest_config(cfg)):
        return True
    return cfg["shard_seed"] >= 0 and (folder / "shards" / f"done_s{cfg['shard_seed']}").exists()


def _read_records(path: Path) -> list[dict]:
    if path.stat().st_size == 0:
        return []
    df = pd.read_csv(path, keep_default_na=False, na_values=["nan", "NaN"])
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in df.to_dict("records")]


def _run_shard(folder: Path, seed: int, scfg: SearchConfig) -> None:
    files = _shard_files(folder, seed)
    done = folder / "shards" / f"done_s{seed}"
    if done.exists():
        return
    rows, diags, costs = run_seed(seed, scfg)
    files["rows"].parent.mkdir(parents=True, exist_ok=True)
    for key, recs in (("rows", rows), ("diagnostics", diags), ("costs", costs)):
        tmp = files[key].with_suffix(".tmp")
        if recs:
            write_csv(tmp, recs)
        else:
            tmp.write_text("")
        tmp.replace(files[key])
    done.write_text("complete\n")


def load_results(folder) -> pd.DataFrame:
    folder = Path(folder)
    path = folder / FILES["rows"]
    if not path.is_file():
        raise MissingDataError(f"{path} is missing: run `python -m lib.experiment configs/program_search/<scale>.yaml`")
    return pd.read_csv(path)


def run_experiment(cfg: dict) -> pd.DataFrame:
    """Run (or resume, or reuse) the search under data/<scale>/<experiment>/.

    Each seed's rows go to ``shards/{rows,diagnostics,costs}_s<seed>.csv`` as soon as its eight
    methods finish (a killed run resumes from the finished seeds); once every seed is there, the
    seed's four output files and a complete manifest are written and the shards removed.
    A shard config (``shard_seed >= 0``) runs and writes only its seed; the full config merges.
    """
    cfg = validate_config(cfg)
    full = manifest_config(cfg)
    folder = data_dir(cfg["scale"], cfg["experiment"])
    if manifest_matches(folder, full):
        return load_results(folder)
    check_resumable(folder, full)
    started = (read_manifest(folder) or {}).get("started") or now()
    t0 = time.perf_counter()
    write_manifest(folder, full, started=started, status="running")
    scfg = search_config(cfg)
    todo = range(scfg.seeds) if cfg["shard_seed"] < 0 else [cfg["shard_seed"]]
    try:
        from tqdm.auto import tqdm
        todo = tqdm(list(todo), desc="program search seeds", leave=False)
    except ImportError:  # pragma: no cover
        pass
    for seed in todo:
        _run_shard(folder, seed, scfg)
    if cfg["shard_seed"] >= 0:  # a shard never merges (shards of a sweep finish concurrently)
        return pd.DataFrame(_read_records(_shard_files(folder, cfg["shard_seed"])["rows"]))
    rows, diags, costs = [], [], []
    for s in range(scfg.seeds):
        files = _shard_files(folder, s)
        rows += _read_records(files["rows"])
        diags += _read_records(files["diagnostics"])
        costs += _read_records(files["costs"])
    summary = summarize(rows, diags, costs, scfg)
    written = write_outputs(folder, rows, diags, costs, summary)
    shutil.rmtree(folder / "shards")  # every shard row is now in the four output files
    write_manifest(folder, full, started=started, wall_s=time.perf_counter() - t0, status="complete",
                   extra={"files": [p.name for p in written], "frozen_proposer": FROZEN_NOTE,
                          "self_checks": {k: summary["diagnostics"][k] for k in (
                              "max_compiler_bracket_absolute_error",
                              "equivalent_compiler_search_trajectory_max_difference")}})
    return load_results(folder)


def notebook_config(namespace) -> dict:
    """notebook 04's parameter cell (``globals()``, papermill's injected values included) as its checked config."""
    return namespace_config(namespace, SCHEMA, validate_config)
