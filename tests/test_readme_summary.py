"""The README's summary of the society says in words what its one society table shows: a test reads both."""
from __future__ import annotations

import re

import pytest

from lib.core.paths import REPO_ROOT
from lib.society.tables_skills import SUMMARY_SEEDS

README = (REPO_ROOT / "README.md").read_text()


def _value(name: str) -> str:
    return re.search(rf"<!-- value:{name} cpu -->(.*?)<!-- /value -->", README)[1]


def _designs() -> dict[str, dict]:
    """The society table: per model, its seeds and the chosen agent's mean and 95 % interval."""
    block = re.search(r"<!-- table:society-designs cpu -->\n(.*?)<!-- /table:society-designs -->", README, re.S)[1]
    out = {}
    for line in block.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.match(r"([\d.]+) \[([\d.]+), ([\d.]+)\]", cells[3])
        if m:
            name = re.sub(r"[*`]", "", cells[0]).split(" (")[0]
            out[name] = {"n": int(cells[2]), "mean": float(m[1]), "lo": float(m[2]), "hi": float(m[3]),
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


def test_the_summary_names_the_tables_best_designs_with_their_numbers(table):
    named = re.findall(r"`([^`]+)` ([\d.]+)", _value("society-best-designs"))
    designs = {k: v for k, v in table.items() if k not in ("bare base", "best one-shot model", "multitask")
               and v["n"] >= SUMMARY_SEEDS and not v["interim"]}  # a running study's rows make no headline
    top = sorted(designs, key=lambda k: -designs[k]["mean"])[:3]
    assert [a for a, _ in named] == top
    assert all(float(m) == pytest.approx(table[a]["mean"], abs=5e-4) for a, m in named)


def test_the_summary_words_agree_with_the_intervals(table):
    best = max((v for k, v in table.items() if k not in ("bare base", "best one-shot model", "multitask")
                and v["n"] >= SUMMARY_SEEDS and not v["interim"]), key=lambda v: v["mean"])
    base = float(_value("society-base-chosen"))
    one_shot = float(_value("society-best-one-shot").split()[-1])
    multitask = float(_value("society-multitask-chosen"))
    assert base == pytest.approx(table["bare base"]["mean"], abs=5e-4)
    assert one_shot == pytest.approx(table["best one-shot model"]["mean"], abs=5e-4)
    assert multitask == pytest.approx(table["multitask"]["mean"], abs=5e-4)
    assert _said(README, {"end where the bare base starts": best["lo"] <= base <= best["hi"],
                          "end above the bare base": base < best["lo"], "end below the bare base": base > best["hi"]})
    assert _said(README, {"reach the best one-shot model": best["lo"] <= one_shot <= best["hi"],
                          "beat the best one-shot model": one_shot < best["lo"],
                          "stay below the best one-shot model": one_shot > best["hi"]})
    assert "stay far below multitask" in README and multitask > best["hi"] + 0.05
    held = float(_value("society-held-most").split()[0])
    most = max(v["held"] for k, v in table.items() if v["held"] is not None and v["n"] >= SUMMARY_SEEDS
               and not v["interim"])
    assert re.search(r"holds at\s+most", README) and held == pytest.approx(most, abs=5e-3)
