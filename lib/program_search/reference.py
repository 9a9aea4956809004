"""The seed's way of running the program search: one state at a time, recursing over grammar nodes.

A faithful per-state port of seed 004 (``v2_gated_program_search.py``) with one fix: the
``frozen_proposer`` proposal distribution is left untouched (the seed's scraped text admits a
reading that averages an empty elite set and turns it into NaN). It is kept as the oracle for
:mod:`lib.program_search.search` (the batched port must give the same numbers) and as the slow side of
``benchmarks/program_search.py``. Nothing else should import it.
"""
from __future__ import annotations

import time

import numpy as np

from lib.program_search.search import (COST_NOTE, MODE, SearchConfig, Task, heldout_rng, initial_proposal, propose_pair,
                             search_rng, update_proposal)


class Grammar:
    """Gated program nodes; every quantity is computed per state by recursion over the parents."""

    def __init__(self, task: Task):
        self.task = task
        self.m = task.cfg.primitives
        self.nodes = [{"base": i, "depth": 0} for i in range(self.m)]

    @staticmethod
    def gates(params, h):
        logits = params[:, 0] + params[:, 1:] @ h
        weight = np.exp(logits - np.max(logits))
        weight /= weight.sum()
        derivative = weight[:, None] * (params[:, 1:] - weight @ params[:, 1:])
        return weight, derivative

    def coefficients(self, index, h, cache=None):
        if cache is None:
            cache = {}
        if index in cache:
            return cache[index]
        node = self.nodes[index]
        if "base" in node:
            b = np.eye(self.m)[node["base"]]
            db = np.zeros((self.m, len(h)))
        else:
            beta, derivative = self.gates(node["params"], h)
            b = np.zeros(self.m)
            db = np.zeros((self.m, len(h)))
            for j, parent in enumerate(node["parents"]):
                bp, dp = self.coefficients(parent, h, cache)
                b += beta[j] * bp
                db += beta[j] * dp + np.outer(bp, derivative[j])
        cache[index] = (b, db)
        return b, db

    def signature(self, index, anchor, cache=None):
        if cache is None:
            cache = {}
        if index in cache:
            return cache[index]
        node = self.nodes[index]
        if "base" in node:
            e = anchor["a"][:, node["base"]].copy()
        else:
            beta, derivative = self.gates(node["params"], anchor["h"])
            e = np.zeros(anchor["rank"])
            for j, parent in enumerate(node["parents"]):
                ep = self.signature(parent, anchor, cache)
                e += beta[j] * ep + (anchor["ell"] @ ep) * (anchor["gate"] @ derivative[j])
        cache[index] = e
        return e

    def contracted_jet(self, index, anchor, cache=None):
        if cache is None:
            cache = {}
        if index in cache:
            return cache[index]
        node = self.nodes[index]
        if "base" in node:
            z = np.r_[np.eye(self.m)[node["base"]], np.zeros(len(anchor["h"]))]
        else:
            beta, derivative = self.gates(node["params"], anchor["h"])
            z = np.zeros(self.m + len(anchor["h"]))
            for j, parent in enumerate(node["parents"]):
                zp = self.contracted_jet(parent, anchor, cache)
                z += beta[j] * zp
                z[self.m:] += (anchor["q"] @ zp[:self.m]) * derivative[j]
        cache[index] = z
        return z

    def add(self, parents, params):
        node = {"parents": tuple(int(p) for p in parents), "params": params.copy(),
                "depth": 1 + max(self.nodes[int(p)]["depth"] for p in parents)}
        self.nodes.append(node)
        return len(self.nodes) - 1

    def field(self, index, x):
        b, _ = self.coefficients(index, self.task.response(x))
        u = np.einsum("ijk,k->ji", self.task.maps, x)
        return u @ b

    def full_jet(self, index, anchor, cache=None):
        b, db = self.coefficients(index, anchor["h"], cache)
        value = anchor["u"] @ b
        jac = np.einsum("i,ijk->jk", b, self.task.maps) + anchor["u"] @ db @ anchor["dh"]
        return value, jac

    def score(self, left, right, anchor, mode):
        cache = {}
        if mode == "minimal":
            e = self.signature(left, anchor, cache)
            f = self.signature(right, anchor, cache)
            return float(e @ anchor["omega"] @ f)
        if mode == "first_jet":
            z = self.contracted_jet(left, anchor, cache)
            w = self.contracted_jet(right, anchor, cache)
            return float(z @ anchor["t"] @ w)
        b, _ = self.coefficients(left, anchor["h"], cache)
        c, _ = self.coefficients(right, anchor["h"], cache)
        if mode == "gate_blind":
            return float(b @ anchor["c"] @ c)
        if mode == "full_jacobian":
            y, dy = self.full_jet(left, anchor, cache)
            z, dz = self.full_jet(right, anchor, cache)
            return float(anchor["g"] @ (dz @ y - dy @ z))
        raise ValueError(mode)

    def execute(self, left, right, x, eta):
        y = x + eta * self.field(left, x)
        z = y + eta * self.field(right, y)
        return self.task.loss(z) / max(self.task.loss(x), 1e-30)


def evaluate_program(grammar, pair, states, anchors, mode, cfg, rng=None, both=False):
    outcomes, choices = [], []
    left, right = pair
    for x, anchor in zip(states, anchors):
        if both:
            ab = grammar.execute(left, right, x, cfg.step_size)
            ba = grammar.execute(right, left, x, cfg.step_size)
            reverse = ba < ab
            value = min(ab, ba)
        else:
            if mode == "random_order":
                reverse = bool(rng.integers(0, 2))
            else:
                reverse = grammar.score(left, right, anchor, mode) > cfg.score_tolerance
            i, j = (right, left) if reverse else (left, right)
            value = grammar.execute(i, j, x, cfg.step_size)
        outcomes.append(value)
        choices.append(int(reverse))
    return float(np.mean(outcomes)), choices


def one_run(seed: int, method: str, cfg: SearchConfig):
    """One (seed, method) search, state by state, as the seed does it. Returns (records, diagnostics, cost)."""
    setup_start = time.perf_counter()
    task = Task(seed, cfg)
    grammar = Grammar(task)
    train_anchors = [task.anchor(x) for x in task.train]
    test_anchors = [task.anchor(x) for x in task.test]
    rng = search_rng(seed, cfg)
    mean, std = initial_proposal(cfg)
    pool = list(range(cfg.primitives))
    records, diagnostics, best, best_train = [], [], None, float("inf")
    training_program_executions = prediction_anchors = 0
    start = time.perf_counter()
    setup_seconds = start - setup_start
    mode = MODE[method]
    tournament = method == "direct_tournament"

    def held_out(pair):
        local_rng = heldout_rng(seed, cfg)
        return evaluate_program(grammar, pair, task.test, test_anchors, mode, cfg, local_rng, both=tournament)[0]

    for generation in range(cfg.generations):
        number = cfg.candidate_budget // 2 if tournament else cfg.candidate_budget
        candidates = []
        for _ in range(number):
            pair, params = propose_pair(rng, grammar, mean, std, pool, cfg)
            loss, choices = evaluate_program(grammar, pair, task.train, train_anchors, mode, cfg, rng, both=tournament)
            training_program_executions += cfg.train_states * (2 if tournament else 1)
            prediction_anchors += cfg.train_states if method not in ("random_order", "direct_tournament") else 0
            candidates.append((loss, tuple(pair), params.copy(), choices))
            if loss < best_train:
                best_train, best = loss, tuple(pair)
        candidates.sort(key=lambda c: c[0])
        proposal_test_losses = [held_out(c[1]) for c in candidates]
        if method == "no_feedback":
            chosen = rng.choice(len(candidates), size=min(cfg.elite_count, len(candidates)), replace=False)
            elite = [candidates[i] for i in chosen]
        elif method == "frozen_proposer":
            elite = []
        else:
            elite = candidates[:cfg.elite_count]
        if method != "frozen_proposer":  # the fix: a frozen proposer keeps its mean, std and pool
            elite_params = np.asarray([c[2] for c in elite])
            mean, std = update_proposal(mean, std, elite_params)
            pool = [index for c in elite for index in c[1]]
        test_loss = held_out(best)
        gd = np.mean([grammar.execute(0, 0, x, cfg.step_size) for x in task.test])
        records.append({
            "seed": seed, "method": method, "generation": generation + 1,
            "training_program_executions": training_program_executions,
            "train_best_loss_ratio": best_train, "heldout_loss_ratio": test_loss,
            "mean_proposed_training_loss_ratio": float(np.mean([c[0] for c in candidates])),
            "mean_proposed_heldout_loss_ratio": float(np.mean(proposal_test_losses)),
            "fraction_proposals_beating_initial_gd": float(np.mean(np.asarray(proposal_test_losses) < gd)),
            "proposal_mean_change_norm": float(np.linalg.norm(mean)),
            "proposal_std_mean": float(np.mean(std)),
            "best_program_depth": max(grammar.nodes[i]["depth"] for i in best),
            "nodes_generated": len(grammar.nodes) - cfg.primitives,
            "minimal_signature_rank_min": min(a["rank"] for a in train_anchors),
            "minimal_signature_rank_max": max(a["rank"] for a in train_anchors),
            "test_program_executions": cfg.test_states * (number + 1) * (2 if tournament else 1) + cfg.test_states})
        if method == "corrected":
            for _, pair, _, _ in candidates:
                for x, anchor in zip(task.test[:4], test_anchors[:4]):
                    exact = grammar.score(*pair, anchor, "full_jacobian")
                    compiled = grammar.score(*pair, anchor, "minimal")
                    firstjet = grammar.score(*pair, anchor, "first_jet")
                    blind = grammar.score(*pair, anchor, "gate_blind")
                    ab = grammar.execute(*pair, x, cfg.step_size)
                    ba = grammar.execute(pair[1], pair[0], x, cfg.step_size)
                    gap = ab - ba
                    diagnostics.append({
                        "seed": seed, "generation": generation + 1,
                        "depth": max(grammar.nodes[i]["depth"] for i in pair),
                        "compiled_error": abs(compiled - exact), "first_jet_error": abs(firstjet - exact),
                        "blind_error": abs(blind - exact), "exact_bracket": exact,
                        "actual_loss_order_gap": gap, "non_tie": int(abs(gap) > 1e-12),
                        "compiled_correct_actual_order": int((compiled <= cfg.score_tolerance) == (gap <= 0)),
                        "blind_correct_actual_order": int((blind <= cfg.score_tolerance) == (gap <= 0))})
    cost = {
        "seed": seed, "method": method, "seconds_including_diagnostics": time.perf_counter() - start,
        "setup_seconds_including_task_and_anchor_construction": setup_seconds,
        "training_program_executions": training_program_executions,
        "training_primitive_field_evaluations": 2 * cfg.primitives * training_program_executions,
        "training_loss_calls_in_program_execution": 4 * training_program_executions,
        "prediction_score_count": prediction_anchors,
        "base_jacobian_matrices_available": cfg.primitives,
        "test_program_executions_all_checkpoints": sum(r["test_program_executions"] for r in records),
        "diagnostic_program_executions": 2 * len(diagnostics),
        "note": COST_NOTE}
    return records, diagnostics, cost
