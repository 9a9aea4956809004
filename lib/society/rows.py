"""The society's rows: one per (arm, seed, generation, agent, metric), in :data:`COLUMNS`, written by
:class:`RowWriter` (the seed's metrics and the operators' diagnostics, :data:`DIAGNOSTICS`)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from lib.core.tasks import region
from lib.society.generation import Child, Evaluation, Selection

COLUMNS = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score",
           "metric", "value"]

# Metrics written besides the seed's (test_<family>, test_overall, val_overall, consensus_acc,
# diversity_behav, parents); rows about a child's birth carry the child's generation t+1.
DIAGNOSTICS = {
    "val_half_a": "val accuracy on the even-indexed val tasks (split-half reliability of the signal)",
    "val_half_b": "val accuracy on the odd-indexed val tasks",
    "base_test_<family>": "the bare base on the test pool (agent -1, generation 0 only)",
    "consensus_share": "share of the conformity prompts that have a consensus (an answer strictly more agents give "
                       "than any other; a tie has none), agent -1",
    "pair_rank": "a child's role: the rank of its parent pair (0: the most distant pair), its seat less the elites'",
    "elite": "1 for an agent copied unchanged from the previous generation (its parents row is e*100+e)",
    "inherit_n": "usable (parsed) answers the child was trained on (< 8: the child is a copy)",
    "source_val_overall": "accuracy of the child's source at t on the screening pool (val's first n_screen per family)",
    "merge_winner": "index of the screened winner among the n_candidates merges (0 = plain average)",
    "merge_tied": "candidates tied at the top screening score (1 = no tie; ties are broken by a seeded draw)",
    "merge_gain_val": "winner's screening-pool accuracy minus its two parents' mean on the same tasks",
    "test_<family>_<region>": "test accuracy on the family's familiar region (the base's pre-training "
                              "kind of task) or novel region (never pre-trained: where founders can teach)",
    "source_test_<key>": "the child's source at t on the test pool, per family, overall and region",
    "cost_train_steps": "LoRA optimizer steps of the run so far: founders + trained children (last generation)",
    "cost_val_evals": "model evaluations on val (selection) or its screening part (screening), last generation",
    "select_overall": "accuracy on the selection pool (n_select > 0; last generation, and each baseline): the "
                      "best society arm and the best one-shot merge are chosen on it",
    "teachers_n": "crossover, merge_repair: the child's teachers (its two parents, and archive elites)",
    "inherit_n_<family>_<region>": "crossover, merge_repair: the child's training answers per family and region",
    "archive_val_<family>_<region>": "crossover_archive: the archive elite's val accuracy on that cell (agent -1)",
    "continue_from": "continue arms: the parent (index at t) whose LoRA the child continues",
    "continue_screen_<k>": "continue: the screening-pool accuracy of the candidate that started from the pair's "
                           "parent k (a: first, b: second); the better one is the child",
    "continue_tied": "continue: candidates tied at the top screening score (1 = no tie; ties drawn)",
    "inherit_energy": "inherit_merge arms: share of the merge's update energy (sum of squared singular values) "
                      "kept by its truncation to rank r",
}


@dataclass(frozen=True)
class RowWriter:
    """Rows of one (experiment, arm, seed) in the society's schema (:data:`COLUMNS`)."""

    experiment: str
    arm: str
    seed: int

    def row(self, t: int, agent: int, metric: str, value, *, selected: bool = False,
            conformity: float = float("nan"), score: float = float("nan")) -> dict:
        return {"experiment": self.experiment, "arm": self.arm, "seed": self.seed, "generation": t,
                "agent": agent, "selected": bool(selected), "conformity": conformity, "score": score,
                "metric": metric, "value": float(value)}

    def generation(self, t: int, ev: Evaluation, sel: Selection, base_test: dict | None) -> list[dict]:
        """Generation ``t``'s rows: each agent's accuracies (with its selection, conformity and
        score), then the population's consensus accuracy and diversity, then (t = 0) the bare base."""
        out = []
        for i, test in enumerate(ev.test):
            mine = {"selected": i in sel.parents, "conformity": float(ev.conformity[i]),
                    "score": float(sel.scores[i])}
            out += [self.row(t, i, f"test_{k}", v, **mine) for k, v in test.items()]
            out += [self.row(t, i, "val_overall", ev.val[i], **mine),
                    self.row(t, i, "val_half_a", ev.val_halves[i][0], **mine),
                    self.row(t, i, "val_half_b", ev.val_halves[i][1], **mine)]
        out += [self.row(t, -1, "consensus_acc", ev.consensus_acc), self.row(t, -1, "consensus_share", ev.consensus_share),
                self.row(t, -1, "diversity_behav", ev.diversity)]
        if base_test is not None:  # the bare base on the test pool: the founders' reference
            out += [self.row(t, -1, f"base_test_{k}", v) for k, v in base_test.items()]
        return out

    def births(self, t: int, children: list[Child], energy: dict | None = None,
               continued: dict | None = None) -> list[dict]:
        """How each agent of generation ``t`` was born (written with generation ``t``); ``energy``:
        per child of an ``inherit_merge`` arm, the update energy its truncation kept; ``continued``: per child of
        a ``continue`` arm, the parent it continues and its candidates' screening accuracies
        (:func:`lib.society.shard.screen_candidates`)."""
        out = []
        energy, continued = energy or {}, continued or {}
        n_elites = sum(ch.elite for ch in children)
        for ch in children:
            pa, pb = ch.parents
            out.append(self.row(t, ch.index, "parents", pa * 100 + pb))
            if ch.elite:
                out.append(self.row(t, ch.index, "elite", 1.0))
                continue
            out.append(self.row(t, ch.index, "pair_rank", ch.index - n_elites))
            src = ch.source
            if ch.index in energy:  # inherit_merge: nothing distilled, the merge truncated
                out.append(self.row(t, ch.index, "inherit_energy", energy[ch.index]))
            if ch.index not in energy or src.data is not None:
                out.append(self.row(t, ch.index, "inherit_n", len(ch.data)))
            if src.teachers:  # crossover, merge_repair: who taught, and where the union's answers lie
                out.append(self.row(t, ch.index, "teachers_n", len(src.teachers)))
                cells = Counter(f"{x.family}_{region(x)}" for x in ch.data)
                out += [self.row(t, ch.index, f"inherit_n_{c}", n) for c, n in sorted(cells.items())]
            if ch.index in continued:
                info = continued[ch.index]
                out.append(self.row(t, ch.index, "continue_from", info["from"]))
                for k, p in zip("ab", ch.parents):
                    if p in info["scores"]:
                        out.append(self.row(t, ch.index, f"continue_screen_{k}", info["scores"][p]))
                if info["scores"]:
                    out.append(self.row(t, ch.index, "continue_tied", info["tied"]))
            if not src.agent:  # crossover: no merge, so no source model to measure
                continue
            out += [self.row(t, ch.index, f"source_test_{k}", v) for k, v in src.test.items()]
            out.append(self.row(t, ch.index, "source_val_overall", src.screen))
            if src.merge_winner is not None:
                out += [self.row(t, ch.index, "merge_winner", src.merge_winner),
                        self.row(t, ch.index, "merge_tied", src.merge_tied),
                        self.row(t, ch.index, "merge_gain_val", src.merge_gain)]
        return out

    def costs(self, t: int, cost: dict) -> list[dict]:
        """The run's cost so far (written at its last generation): LoRA optimizer steps and model
        evaluations on val (selection) or its screening part (screening)."""
        return [self.row(t, -1, f"cost_{k}", v) for k, v in cost.items()]
