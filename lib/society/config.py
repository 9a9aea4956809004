"""The society's config: one typed, frozen object, built once at the door from the YAML.

A society config (``configs/society*/<scale>.yaml``, an overlay of ``configs/society/base.yaml``: the
``extends`` key, :func:`lib.core.config.load_layers`) is read with :func:`load` / :func:`load_file`
(overlays resolved, then checked: one :class:`lib.core.config.ConfigError` naming every bad key, then
frozen) into a :class:`SocietyConfig`. Its fields are the config keys, each declared once with its
check and its role in the data folder's identity; :data:`SCHEMA` is derived from them. The loop reads it
by attribute (``cfg.g``, ``cfg.families``), the tables by key (``cfg["g"]``); derived values are its
properties and methods (:meth:`SocietyConfig.resolve_arm`: one arm of the ablation with its modifiers
and its children's budget resolved, an :class:`Arm`, ``full@g0.25@e1``).
"""
from __future__ import annotations

import os
from functools import lru_cache
from dataclasses import dataclass, replace
from pathlib import Path

from lib.core.config import COMMON, Field, Frozen, TypedConfig, key, load_layers
from lib.core.errors import DataMismatchError, DeviceError
from lib.core.paths import DATA, REPO_ROOT, config_path, runs_dir
from lib.core.tasks import FAMILIES, FORMS

from lib.engines.lora import ALL_LINEAR, TARGETS
from lib.society.arms import (BASELINES, KIND_ARMS as KINDS, LINEAGE_BASELINES, SEED_ARMS, design, known_baseline,
                              switches)

# The seed's own child budget (seed 002: ``n_candidates`` 6 merges screened per pair, ``epochs`` 2 of child
# SFT over the 240 inherited answers), the arm modifier ``@seed_budget``; the cpu configs screen 2 and train 1.
SEED_BUDGET = {"epochs": 2, "n_candidates": 6}


# ----------------------------------------------------------------------------- arms


@dataclass(frozen=True)
class Arm:
    """One arm with its modifiers resolved.

    ``label`` is the arm as written in the config and the rows (``"full@e1"``); ``name`` the seed's
    arm (``"full"``); ``g`` its grounding knob (0 for ``no_grounding``: the verifier never enters
    its loop); ``merge`` its recombination (None: children are copies; ``"exact"``: Σ wᵢ BᵢAᵢ;
    ``"linear"``: peft's linear merge of the factors; ``"sum"``, ``"ties"``: the additions that do not
    dilute, :data:`lib.society.generation.MERGES`); ``diversity`` quality-diversity selection
    (else top-P); ``elitism`` the top scorers copied unchanged; ``selection``, ``inherit`` and the
    children's budget (``n_inherit`` answers × ``epochs``, ``n_candidates`` merges screened per pair) as
    :func:`arm_design` resolves them.
    """

    label: str
    name: str
    g: float
    merge: str | None
    diversity: bool
    elitism: int
    selection: str = "qd"      # "qd" | "top" | "niche" | "lexicase" (:func:`arm_design`)
    inherit: str = "distill"   # "distill" | "verified" | "merge"
    n_inherit: int = 240       # the inheritance pool a child learns from (per generation) ...
    epochs: int = 1            # ... and its epochs over it
    n_candidates: int = 2      # merges screened per pair of parents
    archive: bool = False      # the teachers include the archive's elites (lib.society.crossover)
    candidates: str = "both"   # continue: a child from each parent, screened ("both"), or from the higher-scored

    @property
    def grounded(self) -> bool:
        return self.g > 0

    @property
    def distills(self) -> bool:
        """Children are fresh LoRAs trained on their source's (one agent's) answers."""
        return self.inherit in ("distill", "verified")

    @property
    def from_merge(self) -> bool:
        """A child starts from its pair's screened merge (``merge``: is it; ``repair``: is trained from it)."""
        return self.inherit in ("merge", "repair")

    @property
    def from_teachers(self) -> bool:
        """A child trains on its teachers' verified answers (``crossover``, ``repair``) or their prompts' gold
        answers (``gold``): :mod:`lib.society.crossover`."""
        return self.inherit in ("crossover", "repair", "gold", "continue")

    @property
    def continues(self) -> bool:
        """A child is one parent's LoRA trained further on its teachers' verified answers (``continue``)."""
        return self.inherit == "continue"

    @property
    def trains(self) -> bool:
        """Children take optimizer steps (every design but ``merge``)."""
        return self.inherit != "merge"


def parse_arm(arm: str, g: float, elitism: int = 0) -> dict:
    """An arm name with optional modifiers:
    ``<arm>[@g<value>][@e<count>][@matched | @inherit<n>x<epochs> | @seed_budget][@gold][@higher]``.

    ``"full"`` → ``{"name": "full", "g": g, "elitism": elitism, "budget": None}``; ``"full@g0.25"``
    runs the arm at its own grounding knob (the grounding-knob sweep); ``"full@e1"`` with its own
    number of elites (the elitism comparison); ``"full@matched"`` trains each child as long as a
    founder, ``"full@inherit1000x1"`` on 1000 answers for 1 epoch (the inheritance budget),
    ``"full@seed_budget"`` screens and trains as the seed does (:data:`SEED_BUDGET`);
    ``"crossover@gold"`` trains on the gold answers of its teachers' prompts; ``"continue@higher"`` trains one
    candidate child only, from the parent with the higher selection score. Raises ``ValueError`` on a
    malformed name.
    """
    name, *mods = arm.split("@")
    out = {"name": name, "g": float(g), "elitism": int(elitism), "budget": None, "gold": False, "higher": False}
    seen = set()
    for m in mods:
        kind = ("budget" if m in ("matched", "seed_budget") or m.startswith("inherit") else
                m if m in ("gold", "higher") else m[:1])
        try:
            if kind in seen:
                raise ValueError
            seen.add(kind)
            if kind == "gold":
                out["gold"] = True
            elif kind == "higher":
                out["higher"] = True
            elif kind == "g":
                out["g"] = float(m[1:])
            elif kind == "e":
                out["elitism"] = int(m[1:])
            elif m in ("matched", "seed_budget"):
                out["budget"] = m.removesuffix("_budget")
            elif kind == "budget":
                n, x, e = m.removeprefix("inherit").partition("x")
                if not x or int(n) < 1 or int(e) < 1:
                    raise ValueError
                out["budget"] = (int(n), int(e))
            else:
                raise ValueError
        except ValueError:
            raise ValueError(f"arm {arm!r}: expected <arm>[@g<number>][@e<integer>][@matched | @inherit<n>x<epochs> | "
                             f"@seed_budget][@gold][@higher] with each modifier once, e.g. full@g0.25, full@e1, "
                             f"full@matched, full@inherit1000x1, full@seed_budget, crossover@gold or continue@higher"
                             ) from None
    return out


def arm_settings(arm: str, g: float, elitism: int = 0) -> dict:
    """:func:`lib.society.arms.switches` of ``arm`` with its modifiers, plus ``elitism``."""
    p = parse_arm(arm, g, elitism)
    return {**switches(p["name"], p["g"]), "elitism": p["elitism"]}


def arm_design(arm: str, g: float, elitism: int = 0) -> dict:
    """How ``arm`` selects, inherits and how long its children train: ``{"selection", "inherit",
    "budget"}`` (:func:`lib.society.arms.design`; a budget modifier overrides the arm's). Raises ``ValueError``
    for a contradictory combination: a budget for an arm that trains no child."""
    p = parse_arm(arm, g, elitism)
    st = switches(p["name"], p["g"])
    d = design(p["name"])
    if p["budget"] is not None:
        if d["inherit"] == "merge":
            raise ValueError(f"arm {arm!r}: {p['name']} trains no child (it inherits the merge itself), "
                             f"so a budget modifier (@matched, @inherit<n>x<e>, @seed_budget) contradicts it")
        d["budget"] = p["budget"]
    if p["gold"]:
        if d["inherit"] != "crossover":
            raise ValueError(f"arm {arm!r}: @gold replaces the verified answers of a crossover arm's teachers by the "
                             f"gold ones; {p['name']} inherits {d['inherit']!r}")
        d["inherit"] = "gold"
    d["candidates"] = "both"
    if p["higher"]:
        if d["inherit"] != "continue":
            raise ValueError(f"arm {arm!r}: @higher continues only the parent with the higher selection score, so it "
                             f"needs a continue arm; {p['name']} inherits {d['inherit']!r}")
        d["candidates"] = "higher"
    if d["selection"] in ("niche", "lexicase") and st["g"] == 0:
        what = "each family's val accuracy" if d["selection"] == "niche" else "the verifier's verdict on each val item"
        raise ValueError(f"arm {arm!r}: {d['selection']} selection reads {what} (the verifier), which "
                         f"contradicts g = 0 (no grounding); use g > 0")
    return d


def resolve_arm(cfg, label: str) -> Arm:
    """The :class:`Arm` of ``label`` under config ``cfg`` (a complete config mapping; v1 merges every sexual
    arm linearly, as the seed), its children's budget resolved from its modifiers."""
    s = arm_settings(label, cfg["g"], cfg["elitism"])
    d = arm_design(label, cfg["g"], cfg["elitism"])
    merge = None if s["sex"] is None else ("linear" if cfg["kind"] == "llm_society" else s["sex"])
    budget = d["budget"]
    n_inherit, epochs = ((cfg["n_inherit"], cfg["epochs"]) if budget is None else
                         (cfg["spec_train"], cfg["spec_epochs"]) if budget == "matched" else
                         (round(cfg["repair_share"] * cfg["spec_train"]), cfg["spec_epochs"]) if budget == "repair" else
                         (cfg["n_inherit"], SEED_BUDGET["epochs"]) if budget == "seed" else budget)
    n_candidates = SEED_BUDGET["n_candidates"] if budget == "seed" else cfg["n_candidates"]
    return Arm(label=label, name=parse_arm(label, cfg["g"])["name"], g=s["g"], merge=merge,
               diversity=s["diversity"], elitism=s["elitism"], selection=d["selection"], inherit=d["inherit"],
               n_inherit=n_inherit, epochs=epochs, n_candidates=n_candidates, archive=d["archive"],
               candidates=d["candidates"])


# ----------------------------------------------------------------------------- the config


@dataclass(frozen=True)
class SocietyConfig(TypedConfig):
    """One society config, complete and checked (:meth:`of`, :func:`load`). Every field is the config key
    of the same name; lists are tuples, mappings read-only. See :class:`lib.core.config.TypedConfig` for
    the mapping view, :attr:`core` and :attr:`hash` (the data folder's identity: the keys of role
    ``shard`` choose which (arm, seed) shards run and are left out of it)."""

    experiment: str = key(COMMON["experiment"])
    kind: str = key(COMMON["kind"])
    scale: str = key(COMMON["scale"])
    base_model: str = key(Field(str, "tiny", doc="tiny | smollm2-135m | any from_pretrained id or folder"))
    families: tuple[str, ...] = key(Field(list, list(FAMILIES), choices=FAMILIES, item=str, doc="task families"))
    agents: int = key(Field(int, 6, min=2, doc="population size N"))
    generations: int = key(Field(int, 8, min=1, doc="generations G"))
    arms: tuple[str, ...] = key(Field(list, list(SEED_ARMS), item=str, doc="ablation arms (lib.society.arms)",
                                      role="shard"))
    g: float = key(Field(float, 0.5, min=0.0, max=1.0, doc="grounding knob: score = g*fitness + (1-g)*conformity"))
    lam: float = key(Field(float, 0.3, min=0.0, doc="quality-diversity similarity weight"))
    n_test: int = key(Field(int, 40, min=1, doc="test tasks per family (reporting only)"))
    n_val: int = key(Field(int, 30, min=1, doc="validation tasks per family (grounded selection signal)"))
    n_screen: int = key(Field(int, 0, min=0, doc="val tasks per family that screen the candidate merges (the first "
                                                  "n_screen of each family's val tasks); 0 = all n_val (seed)"))
    n_conf: int = key(Field(int, 60, min=1, doc="conformity-pool tasks per generation (split over families)"))
    n_inherit: int = key(Field(int, 240, min=1, doc="inheritance-pool tasks per generation (split over families)"))
    n_candidates: int = key(Field(int, 6, min=1, doc="merge-weight candidates screened per pair"))
    epochs: int = key(Field(int, 2, min=1, doc="child SFT epochs"))
    elitism: int = key(Field(int, 0, min=0, doc="top-scoring agents copied unchanged into the next generation "
                                                 "(an arm may override it: <arm>@e<count>)"))
    n_parents: int = key(Field(int, 0, min=0, doc="parents per generation; 0 = max(2, agents // 2)"))
    spec_train: int = key(Field(int, 300, min=1, doc="founder specialist training tasks"))
    spec_epochs: int = key(Field(int, 2, min=1, doc="founder specialist epochs"))
    hard: bool = key(Field(bool, False, doc="hard task level"))
    keep_all_adapters: bool = key(Field(bool, False, doc="keep every generation's adapters (else only the latest)"))
    seed: int = key(Field(int, 0, doc="seed (when seeds is empty)", role="shard"))
    seeds: tuple[int, ...] = key(Field(list, [], item=int, doc="several seeds: one shard per (arm, seed)",
                                       role="shard"))
    arm_seeds: Frozen = key(Field(dict, {}, doc="seeds of particular arms instead of seeds ({arm: [seeds]}), e.g. "
                                                "32 seeds of the arms a comparison needs more of", role="shard"))
    n_select: int = key(Field(int, 0, min=0, doc="selection-pool tasks per family (from the val part, disjoint from "
                                                  "val and test): the best society arm and the best one-shot merge are "
                                                  "chosen on it; 0 = none", role="later"))
    lora: Frozen = key(Field(dict, {"r": 16, "alpha": 32}, doc="LoRA rank r, alpha and targets (default q_proj, v_proj)"))
    lr: float = key(Field(float, 3e-3, min=0.0, doc="LoRA learning rate (AdamW)"))
    batch_size: int = key(Field(int, 16, min=1, doc="LoRA training batch"))
    gen_batch: int = key(Field(int, 2048, min=1, doc="rows per generate call"))
    dtype: str = key(Field(str, "auto", choices=("auto", "fp32", "bf16"),
                           doc="base dtype (auto: bf16 on CUDA, else fp32; auto keeps the tiny base in fp32)"))
    grids: str = key(Field(str, "seed", choices=("seed", "wide"), role="later",
                           doc="the baselines' hyperparameter grids on val (lib.society.baselines.GRIDS); wide: to "
                               "the natural bounds"))
    repair_share: float = key(Field(float, 0.25, min=0.0, max=1.0, role="later",
                                    doc="merge_repair: the repair's share of a founder's budget (round(share * "
                                        "spec_train) prompts x spec_epochs)"))
    lineage_steps: int = key(Field(int, 0, min=0, role="later",
                                   doc="baseline_distill_all@lineage, baseline_continue_all: their LoRA's optimizer "
                                       "steps (a continue lineage's, founder to last generation); 0 = no such arm"))
    base_adapter: str = key(Field(str, "", role="later",
                                  doc="a LoRA adapter folder (relative to the repository) merged into the base when "
                                      "it loads: the paper base's familiar-region warm-up (make paper-base); "
                                      "empty = none"))
    task_form: str = key(Field(str, "plain", choices=FORMS, role="later",
                               doc="how tasks are written (lib.core.tasks.in_form): plain, or spaced (strings with "
                                   "their letters separated by spaces, one BPE token per letter)"))
    adapters_dir: str = key(Field(str, "", doc="adapter root; empty = runs/<scale>/<experiment>/ (never data/)"))

    @staticmethod
    def checks(cfg: dict) -> list[str]:
        return _checks(cfg)

    # --- derived values

    @property
    def resolved_n_parents(self) -> int:
        """Parents per generation: ``n_parents``, or ``max(2, agents // 2)`` when it is 0."""
        return n_parents(self)

    @property
    def last_step(self) -> int:
        """The step a finished shard's progress file records as its last done: generation ``generations - 1``
        (a climb's: its last round, :attr:`lib.society.climb.config.ClimbConfig.last_step`)."""
        return self.generations - 1

    @property
    def resolved_n_screen(self) -> int:
        """Val tasks per family that screen the merges: ``n_screen``, or all ``n_val`` when it is 0."""
        return self.n_screen or self.n_val

    @property
    def lora_r(self) -> int:
        return self.lora.get("r", 16)

    @property
    def lora_alpha(self) -> int:
        return self.lora.get("alpha", 32)

    @property
    def lora_targets(self) -> tuple[str, ...]:
        return tuple(self.lora.get("targets", TARGETS))

    def lora_kw(self) -> dict:
        """Keyword arguments of every LoRA the run trains (founders and children)."""
        return {"r": self.lora_r, "alpha": self.lora_alpha, "targets": self.lora_targets, "lr": self.lr,
                "batch_size": self.batch_size}

    def seed_list(self) -> list[int]:
        """The config's seeds: ``seeds``, or ``[seed]`` when it is empty."""
        return list(self.seeds) if self.seeds else [int(self.seed)]

    def seeds_of(self, arm: str) -> list[int]:
        """The seeds ``arm`` runs on: its own list in ``arm_seeds``, else the config's."""
        return list(self.arm_seeds.get(arm) or self.seed_list())

    def arm_runs(self) -> list[tuple[str, int]]:
        """Every ``(arm, seed)`` run, arm by arm (the order of shards and rows)."""
        return [(a, s) for a in self.arms for s in self.seeds_of(a)]

    def runs(self) -> list[tuple[str, int]]:
        """Every ``(arm, seed)`` run, seed by seed (so the first seeds of every arm finish first)."""
        seeds = sorted({s for a in self.arms for s in self.seeds_of(a)})
        return [(a, s) for s in seeds for a in self.arms if s in self.seeds_of(a)]

    def shard(self, arm: str, seed: int) -> "SocietyConfig":
        """The config of the one shard ``(arm, seed)``: the same data folder, only that run."""
        return replace(self, arms=(arm,), seeds=(seed,), arm_seeds=Frozen({}))

    def resolve_arm(self, label: str) -> "Arm":
        """The :class:`Arm` of ``label`` under this config, its children's budget resolved."""
        return resolve_arm(self, label)

    def merge_method(self, label: str) -> str | None:
        return self.resolve_arm(label).merge

    def adapters_root(self) -> Path:
        """Where the run's adapters live: ``adapters_dir``, else ``runs/<scale>/<experiment>/``."""
        if self.adapters_dir:
            p = Path(self.adapters_dir)
            return p if p.is_absolute() else REPO_ROOT / p
        return runs_dir(self.scale, self.experiment)


SCHEMA = {k: f for k, f in SocietyConfig.schema().items() if k not in COMMON}  # the keys besides experiment/kind/scale
SHARD_KEYS = tuple(k for k, f in SCHEMA.items() if f.role == "shard")  # which shards run; not what the data means
# keys added after data was committed: left out of the folder's identity at their default, so
# folders written before them keep their config hash
LATER_KEYS = {k: f.default for k, f in SCHEMA.items() if f.role == "later"}


def validate_config(cfg) -> SocietyConfig:
    """The complete, checked, frozen config (raises ``ConfigError`` naming every problem); a
    :class:`SocietyConfig` was checked at its door and is returned as it is."""
    return SocietyConfig.of(cfg)


def load_file(path: str | Path) -> SocietyConfig:
    """The config in ``path``, its overlays (``extends``) resolved, checked and frozen."""
    return validate_config(load_layers(path))


@lru_cache(maxsize=None)
def config_of(experiment: str, scale: str) -> SocietyConfig | None:
    """The checked config ``configs/<experiment>/<scale>.yaml`` (``None`` without one)."""
    p = config_path(experiment, scale)
    return load_file(p) if p.is_file() else None


def load(experiment: str, scale: str) -> SocietyConfig:
    """``configs/<experiment>/<scale>.yaml`` (:func:`load_file`)."""
    return load_file(config_path(experiment, scale))


# The same values for a caller holding a config mapping (the tables read validated configs by key).

def n_parents(cfg) -> int:
    """Parents per generation: ``n_parents``, or ``max(2, agents // 2)`` when it is 0."""
    return cfg["n_parents"] or max(2, cfg["agents"] // 2)


def seed_list(cfg) -> list[int]:
    return validate_config(cfg).seed_list()


def arm_seeds(cfg, arm: str) -> list[int]:
    return validate_config(cfg).seeds_of(arm)


def arm_runs(cfg) -> list[tuple[str, int]]:
    return validate_config(cfg).arm_runs()


def runs_of(cfg) -> list[tuple[str, int]]:
    return validate_config(cfg).runs()


def core_config(cfg) -> Frozen:
    """What the data means (:attr:`SocietyConfig.core`): the folder's identity."""
    return validate_config(cfg).core


# ----------------------------------------------------------------------------- the device


CPU_BF16_ENV = "GE_CPU_BF16"  # "1": allow bf16 without CUDA (tests of the GPU path's dtype handling)
DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def base_dtype(cfg: dict) -> str:
    """The dtype the base runs in: ``dtype``, with ``auto`` = bf16 on CUDA, fp32 elsewhere — except
    that ``auto`` keeps the ``tiny`` base in fp32 everywhere (cpu-scale rows must not depend on
    whether a GPU is present); an explicit ``dtype: bf16`` is honoured for every base."""
    import torch
    if cfg["dtype"] != "auto":
        return cfg["dtype"]
    if cfg["base_model"] == "tiny":
        return "fp32"
    return "bf16" if torch.cuda.is_available() else "fp32"


def loaded_dtype(base) -> str:
    """The dtype a loaded :class:`lib.engines.models.Base` runs in, named as a config names it (``fp32``, ``bf16``)."""
    d = str(base.info.get("dtype", ""))
    return DTYPE_NAMES.get(d, d)


def cpu_bf16_allowed() -> bool:
    """True when the user opted in to bf16 on a CPU (``GE_CPU_BF16=1``)."""
    return os.environ.get(CPU_BF16_ENV, "").strip().lower() in ("1", "true", "yes")


def check_device(cfg: dict) -> None:
    """The paper scale (and bf16) needs CUDA: refuse on a CPU before any expensive work.

    ``GE_CPU_BF16=1`` lets a non-paper config run bf16 on the CPU: the same dtype handling as on a
    GPU (a bf16 base, float32 adapters, peft's mixed batches and merges), slowly, to find a dtype
    mismatch before paying for a GPU.
    """
    import torch
    if torch.cuda.is_available():
        return
    if cfg["scale"] == "paper" or (base_dtype(cfg) == "bf16" and not cpu_bf16_allowed()):
        raise DeviceError(f"{cfg['experiment']} at scale {cfg['scale']!r} (base {cfg['base_model']}, "
                          f"dtype {cfg['dtype']}) needs a CUDA GPU with bf16; none is visible. Run the "
                          f"cpu scale here (configs/society/cpu.yaml) or move to a GPU machine"
                          + ("" if cfg["scale"] == "paper" else f" ({CPU_BF16_ENV}=1 runs bf16 on the CPU, "
                             f"slowly, to check the GPU path)") + ".")


def check_dtype(cfg: dict, folder, recorded: str | None, resolved: str) -> None:
    """Refuse to add rows computed with the base in ``resolved`` to the data folder ``folder``
    whose rows were computed in ``recorded`` (``dtype: auto`` resolves per machine, and the config
    hash cannot see it): a bf16 shard must not resume in fp32."""
    if recorded is not None and recorded != resolved:
        raise DataMismatchError(
            f"{folder} holds rows computed with the base in {recorded}, and this run would add rows in "
            f"{resolved} (dtype: {cfg['dtype']}{', resolved on this machine' if cfg['dtype'] == 'auto' else ''}): "
            f"resume it where the base runs in {recorded} (dtype: {recorded}"
            f"{'; bf16 needs CUDA' if recorded == 'bf16' else ''}), or move that folder aside to start anew")


# ----------------------------------------------------------------------------- validation


def _checks(cfg: dict) -> list[str]:
    allowed = KINDS.get(cfg["kind"])
    if allowed is None:
        return [f"kind: {cfg['kind']!r} is not a society kind; use one of {list(KINDS)}"]
    return (_arm_checks(cfg, allowed) + _population_checks(cfg, allowed) + _pool_checks(cfg) + _lora_checks(cfg)
            + _place_checks(cfg))


def _arm_ok(cfg: dict, allowed, a: str) -> bool:
    """``a`` is a baseline, or a well-formed arm of this kind with its modifiers in range."""
    if known_baseline(a):
        return True
    try:
        p = parse_arm(a, cfg["g"], cfg["elitism"])
    except ValueError:
        return False
    return p["name"] in allowed and 0.0 <= p["g"] <= 1.0 and p["elitism"] >= 0 and (
        not isinstance(p["budget"], tuple) or p["budget"][0] >= len(cfg["families"]))


def _arm_checks(cfg: dict, allowed) -> list[str]:
    errs, bad = [], []
    for a in cfg["arms"]:
        if known_baseline(a):
            continue
        try:
            parse_arm(a, cfg["g"], cfg["elitism"])
        except ValueError as e:  # a malformed name: say what the form is
            errs.append(f"arms: {e}")
            continue
        if not _arm_ok(cfg, allowed, a):
            bad.append(a)
            continue
        try:
            arm_design(a, cfg["g"], cfg["elitism"])
        except ValueError as e:
            errs.append(f"arms: {e}")
    stray = sorted(set(cfg["arm_seeds"]) - set(cfg["arms"]))
    if stray:
        errs.append(f"arm_seeds: {stray} are not in arms {cfg['arms']}")
    for a, ss in cfg["arm_seeds"].items():
        if not isinstance(ss, list) or not ss or not all(isinstance(x, int) for x in ss) or len(set(ss)) != len(ss):
            errs.append(f"arm_seeds.{a}: need a non-empty list of distinct integer seeds, got {ss!r}")
    if bad or not cfg["arms"]:
        errs.append(f"arms: {bad or 'none given'} not allowed for kind {cfg['kind']}; choose from {list(allowed)} "
                    f"(or <arm>@g<value in [0, 1]>, <arm>@e<elites>, <arm>@matched, <arm>@inherit<n >= families>x<epochs>) "
                    f"or the baselines {list(BASELINES)} (or baseline_distill_all@k<k>, baseline_multitask@k<k>: k x "
                    f"a founder's steps, k > 0)")
    if len(set(cfg["arms"])) != len(cfg["arms"]):
        errs.append(f"arms: duplicates in {cfg['arms']}")
    return errs


def _population_checks(cfg: dict, allowed) -> list[str]:
    errs = []
    if not cfg["families"] or len(set(cfg["families"])) != len(cfg["families"]):
        errs.append(f"families: need distinct families, got {cfg['families']}")
    N, P = cfg["agents"], n_parents(cfg)
    if P > N:
        errs.append(f"n_parents ({P}) > agents ({N})")
    evolving = [a for a in cfg["arms"] if not known_baseline(a) and _arm_ok(cfg, allowed, a)]
    if P < 2 and any(arm_settings(a, cfg["g"])["sex"] or _design_or_none(cfg, a) in PAIRED for a in evolving):
        errs.append(f"n_parents ({P}) < 2: sexual and crossover arms need two parents per child")
    if any(_design_or_none(cfg, a) == "repair" for a in evolving) and round(
            cfg["repair_share"] * cfg["spec_train"]) < len(cfg["families"]):
        errs.append(f"repair_share ({cfg['repair_share']}) x spec_train ({cfg['spec_train']}) leaves fewer repair "
                    f"prompts than families ({len(cfg['families'])}); raise repair_share")
    lineage = [a for a in cfg["arms"] if a in LINEAGE_BASELINES]
    if lineage and cfg["lineage_steps"] < 1:
        errs.append(f"lineage_steps: {lineage} train for a lineage's optimizer steps; set lineage_steps (> 0) to the "
                    f"steps of a continue lineage from founder to last generation")
    for e in sorted({parse_arm(a, cfg["g"], cfg["elitism"])["elitism"] for a in evolving} | {cfg["elitism"]}):
        if e > min(P, N - 1):
            errs.append(f"elitism ({e}) must be <= n_parents ({P}) and < agents ({N})")
    return errs


PAIRED = ("crossover", "gold", "repair", "continue")  # designs whose child has two parents besides the merging arms


def _design_or_none(cfg: dict, a: str) -> str | None:
    """The inheritance of arm ``a`` (None for a name :func:`arm_design` rejects: reported by the arm checks)."""
    try:
        return arm_design(a, cfg["g"], cfg["elitism"])["inherit"]
    except ValueError:
        return None


def _pool_checks(cfg: dict) -> list[str]:
    errs = []
    if cfg["n_screen"] > cfg["n_val"]:
        errs.append(f"n_screen ({cfg['n_screen']}) must be <= n_val ({cfg['n_val']}): it screens on a part of val")
    nf = len(cfg["families"])
    for k in ("n_conf", "n_inherit"):
        if cfg[k] < nf:
            errs.append(f"{k} ({cfg[k]}) must be >= the number of families ({nf})")
    return errs


def _lora_checks(cfg: dict) -> list[str]:
    errs = []
    extra = set(cfg["lora"]) - {"r", "alpha", "targets"}
    if extra or not all(isinstance(cfg["lora"].get(k, 1), int) and cfg["lora"].get(k, 1) > 0 for k in ("r", "alpha")):
        errs.append(f"lora: only positive ints r and alpha (and a list targets) allowed, got {cfg['lora']}")
    tg = cfg["lora"].get("targets", list(TARGETS))
    if not isinstance(tg, list) or not tg or any(t not in ALL_LINEAR for t in tg):
        errs.append(f"lora.targets: {tg!r}; choose a non-empty list from {list(ALL_LINEAR)}")
    return errs


def _place_checks(cfg: dict) -> list[str]:
    errs = []
    if cfg["adapters_dir"]:
        p = Path(cfg["adapters_dir"])
        p = (p if p.is_absolute() else REPO_ROOT / p).resolve()
        if p == DATA.resolve() or DATA.resolve() in p.parents:
            errs.append(f"adapters_dir {cfg['adapters_dir']!r} is under data/: adapters belong under runs/")
    seeds = list(cfg["seeds"]) if cfg["seeds"] else [int(cfg["seed"])]
    if len(set(seeds)) != len(seeds):
        errs.append(f"seeds: duplicates in {cfg['seeds']}")
    return errs
