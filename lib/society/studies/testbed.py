"""The paper scale's test-bed in ``docs/paper-scale.md``: every trial of ``python -m lib.society.paper_testbed``
(:mod:`lib.society.paper_testbed`, which runs them), its recipe, the targets it met and each model's test accuracy
per family and region, read from ``data/<scale>/paper_testbed/``.
"""
from __future__ import annotations

import csv

from lib.core.format import markdown
from lib.core.paths import data_dir
from lib.core.tasks import REGIONS
from lib.society.paper_testbed import CSV, targets_met, trial_rows

def read_rows(scale: str = "cpu") -> list[dict]:
    """The committed trials' rows of ``scale`` (``data/<scale>/paper_testbed/founders.csv``), numbers as numbers."""
    p = data_dir(scale, "paper_testbed") / CSV
    if not p.exists():
        return []
    with open(p) as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in ("n", "correct"):
            r[k] = int(r[k])
        for k in ("accuracy", "parse_rate"):
            r[k] = float(r[k])
    return rows


def read_manifest_trials(scale: str = "cpu") -> dict:
    """``{trial: its manifest entry}`` of ``data/<scale>/paper_testbed/manifest.json`` (``{}`` when none)."""
    import json
    p = data_dir(scale, "paper_testbed") / "manifest.json"
    return json.loads(p.read_text()).get("trials", {}) if p.exists() else {}


def _model_label(m: str) -> str:
    return {"bare": "bare SmolLM2", "base": "base (after warm-up)"}.get(m, m.replace("founder_", "founder: "))


def testbed_table(scale: str = "cpu") -> str:
    """Every trial: its recipe and which targets it met, then each model's test accuracy per family and region
    (familiar / novel) and its lowest parse rate over the families."""
    rows = read_rows(scale)
    if not rows:
        return "No data yet: run `python -m lib.society.paper_testbed` (see above).\n"
    trials = list(dict.fromkeys(r["trial"] for r in rows))
    base_from = {t: e.get("base_rows_from") for t, e in read_manifest_trials(scale).items()}
    lines = []
    for t in trials:
        r0 = next(r for r in rows if r["trial"] == t)
        warm = (f"{r0['warmup_n']}/family × {r0['warmup_epochs']}, lr {r0['warmup_lr']}" if int(r0["warmup_n"])
                else "none") + (f" (the adapter of {base_from[t]}, its base rows)" if base_from.get(t) else "")
        met = targets_met(trial_rows(rows, t, base_from.get(t)))
        unmeasured = [k for k, v in met.items() if v is None]
        founders = (f"{r0['spec_train']} × {r0['spec_epochs']}, lr {r0['lr']}"
                    if any(r["trial"] == t and r["model"].startswith("founder_") for r in rows) else "none trained")
        lines.append(f"| {t} | {r0['form']} | {r0['targets']}, r {r0['r']}, alpha {r0['alpha']} | {warm} | "
                     f"{founders} | "
                     f"{', '.join(k for k, v in met.items() if v) or 'none'} | "
                     f"{', '.join(k for k, v in met.items() if v is False) or 'none'}"
                     f"{'; not measured: ' + ', '.join(unmeasured) if unmeasured else ''} |")
    out = markdown(["trial", "strings form", "LoRA", "warm-up (familiar regions)", "founders (tasks × epochs)",
                    "targets met", "targets missed"], lines) + "\n"
    fams = list(dict.fromkeys(r["family"] for r in rows))
    lines = []
    for t in trials:
        for m in dict.fromkeys(r["model"] for r in rows if r["trial"] == t):
            cell = {(r["family"], r["region"]): r for r in rows if r["trial"] == t and r["model"] == m}
            acc = [f"{cell[(f, g)]['accuracy']:.2f}" if (f, g) in cell else "—" for f in fams for g in REGIONS]
            n = sorted({cell[k]["n"] for k in cell if k[1] != "all"})
            parse = min(cell[(f, "all")]["parse_rate"] for f in fams if (f, "all") in cell)
            lines.append(f"| {t} | {_model_label(m)} | " + " | ".join(acc) + f" | {parse:.2f} | "
                         f"{'/'.join(map(str, n))} |")
    return out + markdown(["trial", "model", *[f"{f} {g}" for f in fams for g in REGIONS], "parse (lowest)",
                           "n per cell"], lines)


TABLES = {"paper-testbed": testbed_table}
VALUES: dict = {}
