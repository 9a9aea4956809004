"""Every arm of the society, declared once: :data:`ARMS`.

An arm is named as configs and rows name it: a *base arm* (``full``, ``verified``, ``baseline_ties``) or a
*named variant* ``<arm>@<modifiers>`` (``full@matched``, ``full@breeding``) with a role or look of its own.
Any other variant (``full@g0.25``, ``no_grounding@e1``) is its base arm with the modifiers that
:func:`lib.society.config.parse_arm` reads, drawn in its base's look as a variant. Each record says

- what the arm switches (base arms): grounding (``g`` used, else 0), the merge that recombines two parents
  (``None``: children are copies), quality-diversity selection (else top-P), the selection scheme,
  what a child inherits, and its training budget;
- its ``role`` in the study that pre-registered it (:data:`ROLES`) and whether it was added after that
  pre-registration (never a candidate for the study's "best society arm");
- what it changes against ``full`` and which design of the field it borrows (the README's tables);
- its look (colour, marker, label; Paul Tol's colour-blind-safe schemes).

Everything else is derived from this table: the config check (:func:`lib.society.config.validate_config`),
the run, the tables, the figures and the study's comparisons (:data:`STUDY_PRIMARY` ... below, the only
other place arm names are written). Adding an arm is one entry here plus its code.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from lib.core.palette import TOL_BRIGHT, TOL_EXTRA, TOL_MUTED, TOL_VIBRANT

ROLES = ("reference", "primary", "secondary", "baseline")
SELECTIONS = ("qd", "top", "niche", "lexicase", "lineages")  # lib.society.generation.select; lineages: the climb's
# population without selection (child c continues its own parent c)
# what a child learns from (lib.society.generation): its source's answers (distill), only the verified ones
# (verified), nothing: it is the screened merge (merge); the union of several teachers' verified answers, as a
# fresh LoRA (crossover) or as a repair of the screened merge (repair) or as one parent's LoRA trained further
# (continue); "gold" is crossover's control (@gold)
INHERITS = ("distill", "verified", "merge", "crossover", "repair", "gold", "continue")
# the climb (lib.society.climb, configs/society_climb/): which sampled answers join the learners' data — those the
# verifier accepts, those a vote keeps (a population's: at least vote_m agents; one learner's: the same share of its
# own samples), none (the one-shot baseline on the hints), the gold answers of the climb prompts (the ceiling)
CLIMB_DATA = ("verifier", "vote", "hints", "gold")
MERGE_KINDS = ("exact", "linear", "sum", "ties")  # lib.society.generation.MERGES


@dataclass(frozen=True)
class Look:
    """How figures draw an arm: a colour, a marker and a legend label (``None``: the arm's name)."""

    colour: str
    marker: str
    label: str | None = None


@dataclass(frozen=True)
class ArmSpec:
    """One arm (see the module's docstring). The switches are read for base arms only; a named variant takes
    its base arm's switches and its own modifiers."""

    name: str
    role: str
    what: str = ""                 # what changes against full (tables)
    borrows: str = ""              # the field's design it borrows, and from whom (tables)
    look: Look | None = None       # None: its base arm's look, drawn as a variant (dashed, hollow)
    grounded: bool = True          # score = g·fitness + (1−g)·conformity with the config's g; else g = 0
    merge: str | None = "exact"    # MERGE_KINDS, or None: children are copies of one parent
    diversity: bool = True         # quality-diversity selection (else top-P)
    selection: str | None = None   # SELECTIONS; None: "qd" with diversity, else "top"
    inherit: str = "distill"       # INHERITS
    budget: str | None = None      # "matched": a child trains as long as a founder
    seed_arm: bool = False         # one of the seed's v1 arms (kind llm_society accepts only these)
    added: bool = False            # added after its study's pre-registration (secondary, never "best")
    one_shot: bool = False         # a baseline that is a one-shot merge of the founders (not trained)
    archive: bool = False          # teachers include a per-cell archive of elites (lib.society.crossover.Archive)
    climb: str | None = None       # a climb arm (lib.society.climb): what its learners' new data is, CLIMB_DATA
    single: bool = False           # climb: one learner with the population's samples and steps, not a population

    @property
    def base(self) -> str:
        return self.name.split("@", 1)[0]

    @property
    def is_baseline(self) -> bool:
        return self.role == "baseline"


B, M, V, X = TOL_BRIGHT, TOL_MUTED, TOL_VIBRANT, TOL_EXTRA
ARMS: tuple[ArmSpec, ...] = (
    # the seed's arms (002: v1 full, no_grounding, no_sex, no_diversity; v2 adds sex_linear)
    ArmSpec("full", "reference", "the exact merge; the reference, run beside them",
            "the seed's loop (distillation of 240 answers x 1 epoch)", Look(B["blue"], "o"), seed_arm=True),
    ArmSpec("no_grounding", "primary", "selection by conformity only (g = 0)", "the seed's ablation (g = 0)",
            Look(B["red"], "s"), grounded=False, seed_arm=True),
    ArmSpec("no_sex", "secondary", "children distilled from copies", "", Look(B["green"], "^"), merge=None,
            seed_arm=True),
    ArmSpec("no_diversity", "secondary", "top-P selection", "", Look(B["purple"], "D"), diversity=False,
            seed_arm=True),
    ArmSpec("sex_linear", "secondary", "peft's linear merge of the factors", "", Look(B["yellow"], "v"),
            merge="linear"),
    # this project's recombination without dilution (configs/society_recombination/)
    ArmSpec("sex_sum", "secondary", "the parents' updates added; this project's", "", Look(B["cyan"], "P"),
            merge="sum"),
    ArmSpec("sex_ties", "secondary", "TIES of the updates, weights 2w; this project's", "",
            Look(V["orange"], "X"), merge="ties"),
    # the society study's designs (configs/society_study/)
    ArmSpec("verified", "primary", "a child trains only on its source's answers the verifier accepts, at a "
            "founder's budget", "STaR / verified synthetic data (Feng et al. 2024)", Look(B["purple"], "H"),
            inherit="verified", budget="matched"),
    ArmSpec("niche", "primary", "each family's best agent on that family's val is a parent",
            "MAP-Elites / CycleQD / lexicase: a niche per family", Look(B["yellow"], "^"), selection="niche"),
    ArmSpec("inherit_merge", "primary", "the child is the screened merge, truncated to rank r and mutated",
            "GENOME / evolutionary merging: parameters, not answers", Look(V["orange"], "D"), inherit="merge"),
    ArmSpec("niche_inherit_merge", "secondary", "niches and parameter inheritance",
            "CycleQD-like: niches + parameter inheritance", Look(B["cyan"], "s"), selection="niche",
            inherit="merge"),
    ArmSpec("niche_verified", "secondary", "niches and verified inheritance", "niches + verified inheritance",
            Look(X["dark_yellow"], "v"), selection="niche", inherit="verified", budget="matched"),
    ArmSpec("lexicase", "secondary", "lexicase selection over the val items",
            "lexicase selection (Helmuth, Pantridge & Spector 2020) over the val items", Look(M["cyan"], "X"),
            selection="lexicase", added=True),
    # the skill-combining study's designs (configs/society_crossover/): a child learns from several teachers
    ArmSpec("crossover", "primary", "a fresh child trained on the union of its two parents' verified answers, at "
            "a founder's budget; no merge", "rejection-sampling fine-tuning on several models' samples (Yuan et al. "
            "2023)", Look(V["blue"], "o"), merge=None, inherit="crossover", budget="matched"),
    ArmSpec("crossover_archive", "primary", "crossover; the teachers also include the archive's elite of every "
            "cell neither parent is above the base on", "MAP-Elites / GENOME / CycleQD: an elite per skill, "
            "never lost", Look(V["red"], "s"), merge=None, inherit="crossover", budget="matched", archive=True),
    ArmSpec("merge_repair", "primary", "the inherit_merge child, then trained on its parents' verified answers "
            "for a share of a founder's budget", "ColD Fusion (Don-Yehiya et al. 2023): merge, then train",
            Look(X["dark_red"], "D"), inherit="repair", budget="repair"),
    ArmSpec("niche_crossover", "secondary", "crossover with a niche per family", "niches + data crossover",
            Look(V["magenta"], "^"), merge=None, selection="niche", inherit="crossover", budget="matched"),
    # the lineage study's designs (configs/society_lineage/): a child continues one parent's LoRA
    ArmSpec("continue", "primary", "two candidate children per pair, each one parent's LoRA trained further at "
            "crossover's budget on both parents' verified answers; the one better on the screening pool is the child",
            "population-based training: copy a member's weights and keep training (Jaderberg et al. 2017)",
            Look(X["dark_blue"], "*"), merge=None, inherit="continue", budget="matched"),
    ArmSpec("continue_archive", "secondary", "continue; the teachers also include the archive's elite of every "
            "cell neither parent is above the base on", "population-based training with MAP-Elites' elites as teachers",
            Look(X["ochre"], "P"), merge=None, inherit="continue", budget="matched", archive=True),
    # the climb's designs (configs/society_climb/): past the founders, up a ladder of harder rungs (lib.society.climb)
    ArmSpec("climb", "primary", "a population climbs a rung: every agent samples answers to fresh prompts of the "
            "rung, the verified ones are kept, grounded selection picks parents, each child continues a parent's LoRA "
            "on the kept answers with replay", "expert iteration / ReST-EM (Singh et al. 2024) in a population",
            Look(B["green"], "*"), merge=None, inherit="continue", climb="verifier"),
    ArmSpec("climb_vote", "primary", "climb without a verifier anywhere in the loop: an answer is kept where at least "
            "vote_m agents give it, selection by conformity", "a population's vote as the filter (Lee et al. 2025)",
            Look(X["dark_red"], "v"), grounded=False, merge=None, inherit="continue", climb="vote"),
    ArmSpec("climb_single", "primary", "one learner with the verifier, the population's samples and LoRA steps",
            "expert iteration at equal samples, verifier calls and steps", Look(X["light_orange"], "o"), merge=None,
            diversity=False, inherit="continue", climb="verifier", single=True),
    ArmSpec("climb_single_vote", "primary", "one learner without a verifier, keeping an answer where its own samples "
            "agree (self-consistency), at the same samples and steps", "self-consistency filtering (Huang et al. 2023)",
            Look(M["indigo"], "D"), grounded=False, merge=None, diversity=False, inherit="continue", climb="vote",
            single=True),
    ArmSpec("baseline_hints", "baseline", "one LoRA on distill-all's data and the hints, for a climbing population's "
            "steps (no climbing)", "one-shot training on what was given", Look(X["olive"], "h", "hints, one-shot"),
            climb="hints", single=True),
    ArmSpec("baseline_gold_climb", "baseline", "as baseline_hints, plus every round's climb prompts with their gold "
            "answers (the ceiling)", "supervised training on the rung", Look(X["black"], "X", "gold climb data"),
            climb="gold", single=True),
    # the climb's secondary designs (issue 53 §4, pre-registered in configs/society_climb/fair.yaml): why one learner
    # beat the population
    ArmSpec("climb_single@child", "secondary", "one learner with the verifier at one child's samples and steps per "
            "round (the population's per-model budget)", "expert iteration at a population member's budget",
            merge=None, diversity=False, inherit="continue", climb="verifier", single=True, budget="child"),
    ArmSpec("climb@lineages", "secondary", "climb with no selection: child c continues its own parent c",
            "four independent expert-iteration lineages sharing kept answers", merge=None, inherit="continue",
            climb="verifier", selection="lineages"),
    # named variants with a role or look of their own
    ArmSpec("full@matched", "primary", "each child trains as long as a founder",
            "distillation at a founder's budget", Look(B["green"], "8")),
    ArmSpec("full@inherit1000x1", "secondary", "1000 inherited answers x 1 epoch",
            "distillation of 1000 answers x 1 epoch", Look(M["indigo"], "8")),
    ArmSpec("full@seed_budget", "secondary", "the seed's own child budget",
            "the seed's own child budget (6 merges screened, 2 epochs)", Look(X["brown"], "P"), added=True),
    ArmSpec("full@breeding", "reference", "the exact merge; the reference, run beside them",
            "full, run beside the breeding arms in their folder", Look(M["indigo"], "H")),
    ArmSpec("crossover@gold", "secondary", "crossover on the gold answers of the same prompts",
            "the control: what verification loses by covering only what the teachers solve", Look(V["cyan"], "P")),
    ArmSpec("verified@g0", "secondary", "verified inheritance, selection ungrounded",
            "verified inheritance, selection ungrounded"),
    ArmSpec("continue@higher", "secondary", "continue with one candidate only, from the parent with the higher "
            "selection score", "population-based training's exploit rule (copy the better member)"),
    # the field's one-shot merges and multitask training on the same founders (lib.society.baselines)
    ArmSpec("baseline_soup", "baseline", look=Look(M["wine"], "h", "soup"), one_shot=True),
    ArmSpec("baseline_task_arithmetic", "baseline", look=Look(M["olive"], "<", "task arith."), one_shot=True),
    ArmSpec("baseline_ties", "baseline", look=Look(M["teal"], ">", "TIES"), one_shot=True),
    ArmSpec("baseline_dare_ties", "baseline", look=Look(M["sand"], "p", "DARE-TIES"), one_shot=True),
    ArmSpec("baseline_lorahub", "baseline", look=Look(M["indigo"], "*", "LoraHub"), one_shot=True),
    ArmSpec("baseline_multitask", "baseline", look=Look(M["rose"], "d", "multitask")),
    ArmSpec("baseline_distill_all", "baseline", "one LoRA on the union of all founders' and the base's verified "
            "answers, at a founder's budget", "rejection-sampling fine-tuning on several models (Yuan et al. 2023)",
            Look(M["green"], "8", "distill all")),
    ArmSpec("baseline_distill_all@iterated", "baseline", "distill all, repeated once per breeding generation on "
            "the last round's, the founders' and the base's verified answers", "STaR (Zelikman et al. 2022)",
            Look(M["cyan"], "H", "distill all, iterated")),
    ArmSpec("baseline_multitask@steps", "baseline", "multitask at one child's steps: a founder's budget of its "
            "gold tasks", "multitask at matched steps", Look(M["purple"], "d", "multitask, 1 child's steps")),
    ArmSpec("baseline_distill_all@lineage", "baseline", "one fresh LoRA on the union of all founders' and the base's "
            "verified answers to every generation's inheritance prompts, for as many steps as a continue lineage "
            "(lineage_steps)", "rejection-sampling fine-tuning at a lineage's compute",
            Look(X["black"], "8", "distill all, a lineage's steps")),
    ArmSpec("baseline_continue_all", "baseline", "the founder best on the selection pool, continued on distill "
            "all@lineage's data for its steps", "sequential fine-tuning from the best specialist",
            Look(X["pear"], "<", "best founder, continued")),
)
del B, M, V, X
SPECS: dict[str, ArmSpec] = {a.name: a for a in ARMS}
CLIMB_ARMS = tuple(a.name for a in ARMS if a.climb)  # the climb's own loop (lib.society.climb), not the society's
if len(SPECS) != len(ARMS):
    raise RuntimeError("lib.society.arms: an arm is declared twice")

# ----------------------------------------------------------------------------- derived names

REFERENCE = next(a.name for a in ARMS if a.role == "reference" and "@" not in a.name)  # "full"
BASE_ARMS = tuple(a.name for a in ARMS if "@" not in a.name and not a.is_baseline  # runnable evolving arms
                  and not a.climb)
SEED_ARMS = tuple(a.name for a in ARMS if a.seed_arm)                                 # v1: the seed's four
# what switching off each arm of the paper's ablation removes (the README's words)
OPERATOR_OFF = {"no_grounding": "grounding", "no_sex": "recombination", "no_diversity": "diverse selection"}
BASELINES = tuple(a.name for a in ARMS if a.is_baseline and not a.climb)  # the society's (lib.society.baselines)
ONE_SHOT = tuple(a.name for a in ARMS if a.one_shot)
MULTITASK = next(a for a in BASELINES if a not in ONE_SHOT)
ADDED_AFTER_PREREGISTRATION = tuple(a.name for a in ARMS if a.added and "@" in a.name)
ADDED_ARMS = tuple(a.name for a in ARMS if a.added)
# the recombination folder's own full, read as full@breeding beside the arms that breed differently
BESIDE = next(a.name for a in ARMS if a.role == "reference" and "@" in a.name)
BREEDING_ARMS = tuple(a.name for a in ARMS if a.base == a.name and a.merge != "exact" and a.grounded
                      and a.diversity and a.inherit == "distill" and not a.is_baseline)
SEED_V2_ARMS = SEED_ARMS + ("sex_linear",)  # the arms the seed's v2 loop runs (Fig. 3a's order)
KIND_ARMS = {"llm_society": SEED_ARMS, "llm_society_v2": BASE_ARMS}
NO_GROUNDING = "no_grounding"          # the seed's ablation of grounding (g = 0)
SEED_BUDGET_ARM = "full@seed_budget"   # full at the seed's own child budget
BASELINE_PREFIX = "baseline_"
if not {NO_GROUNDING, SEED_BUDGET_ARM} <= set(SPECS):
    raise RuntimeError("lib.society.arms: a named arm is missing from ARMS")
if not all(a.startswith(BASELINE_PREFIX) for a in BASELINES):
    raise RuntimeError(f"lib.society.arms: every baseline is named {BASELINE_PREFIX}<method>")


# The one-shot frontier (configs/society_lineage/): ``<baseline>@k<k>`` trains that baseline's one LoRA for k x one
# founder's optimizer steps (lib.society.baselines.frontier_steps), any k > 0.
FRONTIER = ("baseline_distill_all", "baseline_multitask")


LINEAGE_BASELINES = ("baseline_distill_all@lineage", "baseline_continue_all")  # they train for lineage_steps
if not set(LINEAGE_BASELINES) <= set(BASELINES):
    raise RuntimeError("lib.society.arms: a lineage baseline is missing from ARMS")


def frontier_k(arm: str) -> float | None:
    """``k`` of a frontier arm ``<baseline>@k<k>`` (``baseline_distill_all@k0.25`` → 0.25); ``None`` otherwise."""
    base, _, mod = str(arm).partition("@")
    if base not in FRONTIER or not mod.startswith("k"):
        return None
    try:
        k = float(mod[1:])
    except ValueError:
        return None
    return k if k > 0 and math.isfinite(k) else None


def known_baseline(arm: str) -> bool:
    """A baseline of :data:`ARMS` or a frontier point ``<baseline>@k<k>``."""
    return arm in BASELINES or frontier_k(arm) is not None


def spec(name: str) -> ArmSpec | None:
    """The record of ``name``: its own, else its base arm's (``full@g0.25`` → ``full``), else ``None``."""
    name = str(name)
    return SPECS.get(name) or SPECS.get(name.split("@", 1)[0])


def is_baseline(arm: str) -> bool:
    """A baseline (``baseline_<method>``): one model measured once on a seed's founders, no generations."""
    return str(arm).startswith(BASELINE_PREFIX)


def is_primary_arm(arm: str) -> bool:
    """An arm of the study's primary comparisons (:data:`STUDY_PRIMARY`) or a baseline; the others are secondary."""
    return is_baseline(arm) or any(arm in (a, b) for _, a, b in STUDY_PRIMARY)


def label(arm: str) -> str:
    """The legend label of ``arm``: its look's label, else its name."""
    a = SPECS.get(str(arm))
    return a.look.label if a is not None and a.look is not None and a.look.label else str(arm)


def borrows(arm: str) -> str:
    """What ``arm`` borrows from the field (``""`` for an unnamed variant or a baseline)."""
    a = SPECS.get(str(arm))
    return a.borrows if a is not None else ""


def what(arm: str) -> str:
    """What ``arm`` changes against ``full`` (its own record only)."""
    a = SPECS.get(str(arm))
    return a.what if a is not None else ""


def switches(arm: str, g: float) -> dict:
    """The switches of base arm ``arm``: ``{"g", "sex", "diversity"}`` (``g`` 0 for an ungrounded arm).

    ``g`` is the grounding weight in ``score = g·fitness + (1−g)·conformity``; ``sex`` is ``None``
    (children are copies of selected parents), ``"exact"`` (merge = Σ wᵢ·BᵢAᵢ), ``"linear"`` (peft's
    linear merge of the A and B factors), ``"sum"`` (Σ 2wᵢ·BᵢAᵢ) or ``"ties"`` (TIES of the updates with
    weights 2wᵢ); ``diversity`` switches quality-diversity selection on (off: top-P). Raises ``ValueError``
    naming the known arms for any other name.
    """
    a = SPECS.get(arm)
    if a is None or "@" in arm or a.is_baseline:
        raise ValueError(f"unknown arm {arm!r}; known arms are {list(BASE_ARMS)}")
    if not 0.0 <= g <= 1.0:
        raise ValueError(f"g must lie in [0, 1], got {g}")
    return {"g": float(g) if a.grounded else 0.0, "sex": a.merge, "diversity": a.diversity}


def design(arm: str) -> dict:
    """How base arm ``arm`` selects, inherits and budgets its children: ``{"selection", "inherit", "budget",
    "archive"}``."""
    a = SPECS[arm]
    return {"selection": a.selection or ("qd" if a.diversity else "top"), "inherit": a.inherit, "budget": a.budget,
            "archive": a.archive}


def order(arms) -> list[str]:
    """``arms`` in the table's order of their base arms, other arms after them and baselines last; a
    variant ``<arm>@<tag>`` right after its base arm (variants sorted by name)."""
    present = list(dict.fromkeys(arms))
    bases = list(dict.fromkeys(a.split("@", 1)[0] for a in present))
    bases = ([b for b in BASE_ARMS if b in bases] + [b for b in bases if b not in BASE_ARMS and not is_baseline(b)]
             + [b for b in bases if is_baseline(b)])
    return [a for b in bases for a in ([b] if b in present else []) + sorted(
        x for x in present if x.split("@", 1)[0] == b and x != b)]


# ----------------------------------------------------------------------------- the studies' comparisons

# The society study (configs/society_study/, pre-registered): (label, arm a, arm b), a − b; "best society arm"
# and "best one-shot merge" are chosen on the selection pool. Holm's correction over the six.
BEST_ARM, BEST_MERGE = "best society arm", "best one-shot merge"
STUDY_PRIMARY = (
    (f"{BEST_ARM} − {BEST_MERGE}", BEST_ARM, BEST_MERGE),
    ("full@matched − full", "full@matched", "full"),
    ("verified − full@matched", "verified", "full@matched"),
    ("niche − full", "niche", "full"),
    ("inherit_merge − full", "inherit_merge", "full"),
    ("full − no_grounding", "full", "no_grounding"),
)
# (arm a, arm b, what a − b isolates): the study's secondary comparisons, each one switch between two arms,
# reported with their raw p
STUDY_SECONDARY = (
    ("verified@g0", "verified", "grounded selection and screening, with verified inheritance (g 0 vs 0.5)"),
    ("niche_verified", "verified", "a niche per family, with verified inheritance"),
    ("niche_inherit_merge", "inherit_merge", "a niche per family, with parameter inheritance"),
    ("niche_inherit_merge", "niche", "parameter inheritance instead of distillation, with niches"),
    ("full@inherit1000x1", "full", "1000 inherited answers instead of 240 (1 epoch)"),
    ("full@matched", "full@inherit1000x1", "3 epochs over the 1000 answers instead of 1"),
    ("full@e1", "full", "one elite copied unchanged (S3g)"),
    ("no_grounding@e1", "no_grounding", "one elite copied unchanged, without grounding (S3g)"),
    ("full@g0", "full", "the grounding knob g = 0 against 0.5 (S3b)"),
    ("full@g0.25", "full", "g = 0.25 against 0.5 (S3b)"),
    ("full@g0.75", "full", "g = 0.75 against 0.5 (S3b)"),
    ("full@g1", "full", "g = 1 against 0.5 (S3b)"),
    ("full@seed_budget", "full", "the seed's own budget: 6 merges screened and 2 epochs, instead of 2 and 1"),
)
# configs/society_lexicase/ (added after the study's data; secondary, raw p): lexicase beside its own full and
# niche, on one machine and its own founders; niche − full there replicates comparison 4 on another CPU
LEXICASE = (
    ("lexicase", "full", "lexicase over the val items instead of quality-diversity on the score"),
    ("lexicase", "niche", "lexicase over the val items instead of a niche per family"),
    ("niche", "full", "a niche per family (the study's comparison 4, replicated in this folder)"),
)
# The skill-combining study (configs/society_crossover/, pre-registered there). Outcome: the test accuracy of the
# one model a reader would take away, the last generation's agent best on the selection pool (a baseline: its one
# model). (label, a, b), a − b, Holm over the five; "the best new society arm" is chosen among CROSSOVER_CANDIDATES
# and "the best one-shot model" among the one-shot merges and distill-all, both on the selection pool.
BASE_MODEL = "bare base"  # the base without adapter: its rows are every shard's base_test_* rows
BEST_NEW, BEST_ONE_SHOT = "best new society arm", "best one-shot model"
CROSSOVER_CANDIDATES = ("crossover", "crossover_archive", "merge_repair")
DISTILL_ALL = "baseline_distill_all"
ONE_SHOT_MODELS = ONE_SHOT + (DISTILL_ALL,)
CROSSOVER_PRIMARY = (
    (f"{BEST_NEW} − {BASE_MODEL}", BEST_NEW, BASE_MODEL),
    (f"{BEST_NEW} − {BEST_ONE_SHOT}", BEST_NEW, BEST_ONE_SHOT),
    ("crossover − verified", "crossover", "verified"),
    ("crossover_archive − crossover", "crossover_archive", "crossover"),
    ("crossover_archive − distill all", "crossover_archive", DISTILL_ALL),
)
CROSSOVER_SECONDARY = (
    ("crossover@gold", "crossover", "gold answers instead of the teachers' verified ones (what verification loses)"),
    ("niche_crossover", "crossover", "a niche per family, with data crossover"),
    ("merge_repair", "inherit_merge", "the merge repaired on the parents' verified answers"),
    ("crossover_archive", "baseline_distill_all@iterated", "a population against one model iterated as long"),
    ("baseline_distill_all@iterated", DISTILL_ALL, "iterating distill-all once per breeding generation"),
    ("baseline_multitask@steps", "baseline_multitask", "multitask at one child's steps instead of six founders'"),
)
if not set(CROSSOVER_CANDIDATES) <= set(SPECS) or DISTILL_ALL not in SPECS:
    raise RuntimeError("lib.society.arms: the skill-combining study names an arm missing from ARMS")

# The lineage study (configs/society_lineage/, pre-registered there): the same outcome as the skill-combining
# study's; (label, a, b), a − b, Holm over the four.
CONTINUE, CONTINUE_ARCHIVE, LINEAGE_ONE_SHOT = "continue", "continue_archive", "baseline_distill_all@lineage"
LINEAGE_PRIMARY = (
    ("continue − crossover", CONTINUE, "crossover"),
    ("continue − distill all", CONTINUE, DISTILL_ALL),
    ("continue − distill all at a lineage's steps", CONTINUE, LINEAGE_ONE_SHOT),
    ("continue − multitask", CONTINUE, MULTITASK),
)
LINEAGE_SECONDARY = (
    (CONTINUE_ARCHIVE, CONTINUE, "the archive's elites among the teachers"),
    ("continue@higher", CONTINUE, "one candidate, from the higher-scored parent, instead of the screened better of two"),
    (CONTINUE, "baseline_continue_all", "a population of lineages against one founder continued as long"),
)
if not {a for _, a, b in LINEAGE_PRIMARY} | {b for _, a, b in LINEAGE_PRIMARY} <= set(SPECS):
    raise RuntimeError("lib.society.arms: the lineage study names an arm missing from ARMS")

# The climb (configs/society_climb/, pre-registered there). Outcome: the chosen agent's (a single learner's one
# model's) test accuracy on the climbed rung, mean over the families, after the last round; paired by seed, Holm
# over the four.
CLIMB, CLIMB_VOTE, CLIMB_SINGLE, CLIMB_SINGLE_VOTE, CLIMB_HINTS = (
    "climb", "climb_vote", "climb_single", "climb_single_vote", "baseline_hints")
CLIMB_PRIMARY = (
    ("climb − climb_single", CLIMB, CLIMB_SINGLE),
    ("climb_vote − climb_single_vote", CLIMB_VOTE, CLIMB_SINGLE_VOTE),
    ("climb − climb_vote", CLIMB, CLIMB_VOTE),
    ("climb − hints, one-shot", CLIMB, CLIMB_HINTS),
)
CLIMB_GOLD = "baseline_gold_climb"
# Why one learner beat the population (issue 53 §4; secondary, raw p, pre-registered in configs/society_climb_fair/):
# (label, a, b), a − b on the outcome; CLIMB_ENSEMBLE is the last population's consensus read-out of climb's rows
CLIMB_ENSEMBLE = "climb (ensemble)"
CLIMB_POPULATIONS = tuple(a.name for a in ARMS if a.climb == "verifier" and not a.single)  # their pick's gain
CLIMB_WHY = (
    ("climb_single@child − climb", "climb_single@child", CLIMB),
    ("climb@lineages − climb", "climb@lineages", CLIMB),
    ("ensemble − climb_single", CLIMB_ENSEMBLE, CLIMB_SINGLE),
)
# Secondary (raw p, the same seeds), as pre-registered: (measure, a, b). Measures (lib.society.studies.climb): "rung"
# the outcome; "forgetting" the easy level's test after the last round minus at the start (a = b: one arm against
# its own start, the generalists'); "wrong" the share of the last round's kept answers that is wrong; "pass" pass@k
# on the last round's climb prompts (a learner's k samples: 8 in a population, 32 for one learner, so only arms of
# one kind are compared); "next" the next rung's test (no hints there).
CLIMB_SECONDARY = (
    ("rung", CLIMB, CLIMB_GOLD),
    *(("forgetting", a, a) for a in (CLIMB, CLIMB_SINGLE, CLIMB_VOTE, CLIMB_SINGLE_VOTE, CLIMB_HINTS, CLIMB_GOLD)),
    ("wrong", CLIMB_VOTE, CLIMB_SINGLE_VOTE),
    ("pass", CLIMB, CLIMB_VOTE),
    ("pass", CLIMB_SINGLE, CLIMB_SINGLE_VOTE),
    ("next", CLIMB, CLIMB_SINGLE),
)
if not {x for _, a, b in (*CLIMB_PRIMARY, *CLIMB_SECONDARY) for x in (a, b)} <= set(CLIMB_ARMS):
    raise RuntimeError("lib.society.arms: the climb names an arm missing from ARMS")

# the first verdict (configs/society/, pre-registered there): (label, other), full − other, Holm over the
# three; the best one-shot merge is chosen on val there
FIRST_VERDICT = (("no_grounding", "no_grounding"), (BEST_MERGE, BEST_MERGE), ("multitask", MULTITASK))

# {arm: (colour, marker)}: every society figure module registers them with lib.style.register_looks
LOOKS = {a.name: (a.look.colour, a.look.marker) for a in ARMS if a.look is not None}
