"""The README's summary of the society says in words what its one society table shows (docs/designs.md): a
test reads both."""
from __future__ import annotations

import re

import pytest

from lib.core.paths import REPO_ROOT
from lib.society.studies.lineage.tables import verdict_groups
from lib.society.studies.skills.tables import SUMMARY_SEEDS

README = (REPO_ROOT / "README.md").read_text()
DESIGNS = (REPO_ROOT / "docs" / "designs.md").read_text()  # the society table the summary speaks of
WORDS = " ".join(README.split())  # the README's words, not its line breaks


def _value(name: str) -> str:
    return re.search(rf"<!-- value:{name} cpu -->(.*?)<!-- /value -->", README)[1]


def _designs() -> dict[str, dict]:
    """The society table: per model, its seeds and the chosen agent's mean and 95 % interval."""
    block = re.search(r"<!-- table:society-designs cpu -->\n(.*?)<!-- /table:society-designs -->", DESIGNS, re.S)[1]
    out = {}
    for line in block.split("\n\n")[0].splitlines()[2:]:  # the ranked table; the population-only one follows
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.match(r"([\d.]+) \[([\d.]+), ([\d.]+)\]", cells[3])
        if m:
            name = re.sub(r"[*`]", "", cells[0]).split(" (")[0]
            out[name] = {"n": int(cells[2]), "mean": float(m[1]), "lo": float(m[2]), "hi": float(m[3]),
                         "study": re.sub(r"[`]|\s*\(interim\)", "", cells[1]),
                         "interim": "(interim)" in cells[1],
                         "held": float(cells[5]) if re.fullmatch(r"[\d.]+", cells[5]) else None}
    return out


def _said(text: str, claims: dict[str, bool]) -> bool:
    """Exactly one of the ``claims`` (phrase -> whether the table bears it out) is in ``text``, and it is true."""
    made = [phrase for phrase in claims if phrase in text]
    return len(made) == 1 and claims[made[0]]


@pytest.fixture(scope="module")
def table():
    t = _designs()
    if not t:
        pytest.skip("no society table at cpu scale")
    return t


REFERENCES = ("bare base", "best one-shot model", "multitask")


def test_the_summary_names_the_best_preregistered_designs_with_their_numbers(table):
    """The headline names the three designs a study pre-registered as its own (no secondary control such as
    ``crossover@gold``) whose chosen agents score highest on the selection pool, the studies' rule."""
    from lib.society.arms import spec
    from lib.society.data import society_rows
    from lib.society.studies.skills.comparisons import chosen_agents
    named = re.findall(r"`([^`]+)` ([\d.]+)", _value("society-best-designs"))
    designs = {k for k, v in table.items() if k not in REFERENCES and v["n"] >= SUMMARY_SEEDS and not v["interim"]
               and spec(k) is not None and spec(k).name == k and spec(k).role in ("primary", "reference")
               and not spec(k).added}
    select = {}  # each design's mean selection-pool accuracy, from the folder its table line names
    for folder in {table[a]["study"] for a in designs}:
        ch = chosen_agents(society_rows("cpu", folder, finished=True), ["lists", "strings", "arith"])
        select.update({a: m for a, m in ch.groupby("arm")["select_overall"].mean().items() if a in designs
                       and table[a]["study"] == folder})
    assert [a for a, _ in named] == sorted(select, key=lambda a: -select[a])[:3]
    assert not {a for a, _ in named} & {"crossover@gold", "niche_crossover"}  # controls and secondary designs
    assert all(float(m) == pytest.approx(table[a]["mean"], abs=5e-4) for a, m in named)


def test_the_summary_words_agree_with_the_intervals(table):
    best = table[re.findall(r"`([^`]+)`", _value("society-best-designs"))[0]]  # the headline's first design
    base = float(_value("society-base-chosen"))
    one_shot = float(_value("society-best-one-shot").split()[-1])
    multitask = float(_value("society-multitask-chosen"))
    assert base == pytest.approx(table["bare base"]["mean"], abs=5e-4)
    assert one_shot == pytest.approx(table["best one-shot model"]["mean"], abs=5e-4)
    assert multitask == pytest.approx(table["multitask"]["mean"], abs=5e-4)
    assert _said(README, {"ends where the bare base starts": best["lo"] <= base <= best["hi"],
                          "ends above the bare base": base < best["lo"], "ends below the bare base": base > best["hi"]})
    assert _said(README, {"reaches the best one-shot model": best["lo"] <= one_shot <= best["hi"],
                          "beats the best one-shot model": one_shot < best["lo"],
                          "stays below the best one-shot model": one_shot > best["hi"]})
    assert "stays far below multitask" in README and multitask > best["hi"] + 0.05
    held = float(_value("society-held-most").split()[0])
    most = max(v["held"] for k, v in table.items() if v["held"] is not None and v["n"] >= SUMMARY_SEEDS
               and not v["interim"] and k not in REFERENCES)
    assert re.search(r"society agent holds at\s+most", README) and held == pytest.approx(most, abs=5e-3)


def test_the_words_on_compute_follow_the_placement_of_every_design():
    """"every society design sits below the one-shot frontier" only while the placement (Fig. 3i's) finds every
    measured design below it; "above it" or "on it" would need words of its own."""
    counts = re.match(r"of (\d+) society designs, (\d+) above it, (\d+) on it, (\d+) below it", _value("lineage-frontier"))
    if counts is None:
        pytest.skip("no placement at cpu scale yet")
    n, above, on, below = map(int, counts.groups())
    claims = {"every society design sits below the one-shot frontier": below == n,
              "some society designs sit above the one-shot frontier": above > 0,
              "no society design sits above the one-shot frontier": above == 0 and below < n}
    assert _said(README.split("## Quick start")[0], claims)
    if "is the one society design on the one-shot frontier" in README:  # said of continue_archive's lineage
        assert on == 1 and "the closest, `continue_archive`" in _value("lineage-frontier")


def test_the_lineage_words_follow_its_verdicts_and_its_cost():
    """The lineage study's words in the summary and under its table say what its four verdicts say (ties: "ends
    where", losses: "below"), and "more LoRA steps than any model it is compared with" only while the compute table bears it."""
    from lib.society.studies.lineage import comparisons as lineage
    said = _value("lineage-verdicts")
    if not said.startswith("wins:"):
        pytest.skip("the lineage study's primary comparisons are not all in")
    is_ = verdict_groups(said)
    assert _said(WORDS, {"end where `crossover` and distill-all end": {1, 2} <= is_["tie"],
                         "end above `crossover` and distill-all": {1, 2} <= is_["win"],
                         "end below `crossover` and distill-all": {1, 2} <= is_["loss"]})
    assert _said(WORDS, {"and below one-shot training at a lineage's steps": {3, 4} <= is_["loss"],
                         "and with one-shot training at a lineage's steps": {3, 4} <= is_["tie"]})
    answer = ("`continue` ends where `crossover` ends (1) and where one LoRA distilled once on generation 0's verified "
              "answers ends (2), and below one LoRA trained once on every generation's verified answers for a "
              "lineage's steps (3) and below multitask LoRA (4)")
    assert answer in WORDS and {1, 2} <= is_["tie"] and {3, 4} <= is_["loss"]
    d = lineage.load_data("cpu")
    t = lineage.compute_table(d["everything"], d["families"], None)
    compared = {arm for _, a, b in lineage.LINEAGE_PRIMARY for arm in (a, b)}
    steps = t[t["arm"].isin(compared)].set_index("arm")["steps"]
    assert "while spending more LoRA steps than any model it is compared with" in WORDS and steps.idxmax() == "continue"


def test_the_lineage_secondary_words_follow_its_secondary_table():
    """Under the lineage study, each secondary comparison is said the way its sign-flip interval (which agrees with
    its exact raw p) places it: "ends above" / "ties" / "ends below"; and the archive's lineage is said to hold two
    skills only where its chosen agent does on most seeds."""
    from lib.society.studies.lineage import comparisons as lineage
    if _value("lineage-secondary-said").startswith(("not in yet", "not measured")):
        pytest.skip("the lineage study's secondary comparisons are not all in")
    d = lineage.load_data("cpu")
    for _, r in lineage.secondary(d["rows"], d["families"]).iterrows():
        a, b = f"`{r.arm_a}`", f"`{r.arm_b}`"
        assert _said(WORDS, {f"{a} ends above {b}": r.lo > 0, f"{a} ties {b}": r.lo <= 0 <= r.hi,
                             f"{a} ends below {b}": r.hi < 0}), (r.arm_a, r.arm_b)
    k, n = map(int, _value("lineage-archive-held").split()[:3:2])
    assert _said(WORDS, {"a continued lineage does accumulate": 2 * k > n,
                         "even with the archive a lineage does not accumulate": 2 * k <= n})
