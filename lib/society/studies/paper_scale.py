"""The paper scale's page, ``docs/paper-scale.md``, from the data of its runs:

- the test-bed: every trial of ``python -m lib.society.paper_testbed`` (:mod:`lib.society.paper_testbed`, which
  runs them), its recipe, the targets it met and each model's test accuracy per family and region
  (``data/<scale>/paper_testbed/``);
- the engines: one ``full`` generation's phases under each agents engine and dtype, from the JSON of
  ``benchmarks/gpu_society.py`` (``data/<scale>/paper_engines/*.json``);
- the GPU cost: each generation's phases as ``python -m lib.society.gpu_run`` timed them
  (``data/paper/<experiment>/gpu_timings.jsonl``).
"""
from __future__ import annotations

import csv
import json

from lib.core.format import markdown
from lib.core.paths import data_dir
from lib.core.tasks import REGIONS
from lib.society.paper_testbed import CSV, targets_met, trial_rows

ENGINE_PHASES = ("evaluate", "screen", "inherit", "train")  # a generation's phases (benchmarks/gpu_society.py)
GPU_PHASES = ("founders", "evaluate", "screen", "inherit", "train", "baseline")  # gpu_run's, where they ran
GENERATING = ("evaluate", "screen", "inherit")  # the phases that decode

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


def _seconds(phases: list[dict], name: str) -> str:
    x = next((p for p in phases if p["phase"] == name), None)
    return f"{x['wall_s']:.2f}" if x else "—"


def _gen_rate(phases: list[dict]) -> str:
    """Generated tokens per second over the phases that decode (``—`` when none was counted)."""
    dec = [p for p in phases if p["phase"] in GENERATING and p.get("gen_tokens")]
    s = sum(p["wall_s"] for p in dec)
    return f"{sum(p['gen_tokens'] for p in dec) / s:,.0f}" if s else "—"


def engines_table(scale: str = "cpu") -> str:
    """Each benchmark of ``data/<scale>/paper_engines/`` (one ``full`` generation, generation 0): per run (engine,
    dtype, rows per generate call) the seconds of each phase and of the decoding ones (evaluate, screen, inherit;
    training does not depend on the engine, so it runs once per dtype), generated tokens per second, and how many
    of its answers are the reference run's, character for character."""
    files = sorted(f for f in data_dir(scale, "paper_engines").glob("*.json") if f.name != "manifest.json")
    if not files:
        return "No data yet: run `python benchmarks/gpu_society.py` (see above).\n"
    lines = []
    for f in files:
        rec = json.loads(f.read_text())
        base = rec["base"]["name"] if rec.get("base") else "?"
        where = f"`{f.name}`: {base}{' + warm-up' if rec.get('base_adapter') else ''}, {rec['device']}"
        for r in rec["runs"]:
            if "skipped" in r:
                lines.append(f"| {where} | {r['run']} | skipped: {r['skipped']} |" + " |" * 6)
                continue
            same = r.get("same_as_reference", {}).get("all")
            lines.append(f"| {where} | {r['run']} | " + " | ".join(_seconds(r["phases"], p) for p in ENGINE_PHASES)
                         + f" | {sum(p['wall_s'] for p in r['phases'] if p['phase'] in GENERATING):.2f} | "
                         f"{_gen_rate(r['phases'])} | {f'{same[0]}/{same[1]}' if same else '—'} |")
    return markdown(["benchmark", "run (rows per call)", *[f"{p} s" for p in ENGINE_PHASES], "decoding s",
                     "generated tok/s", "answers as the reference's"], lines)


def gpu_cost_table(scale: str = "paper", experiment: str = "society_crossover") -> str:
    """Every generation ``gpu_run`` timed in ``data/<scale>/<experiment>/gpu_timings.jsonl``: its engine, wall
    seconds, the seconds of each phase, and generated and trained tokens per second."""
    p = data_dir(scale, experiment) / "gpu_timings.jsonl"
    if not p.exists():
        return f"No data yet: run `python -m lib.society.gpu_run --config configs/{experiment}/{scale}.yaml`.\n"
    lines = []
    for line in p.read_text().splitlines():
        g = json.loads(line)
        train = [x for x in g["phases"] if x.get("train_tok_per_s")]
        rate = f"{max(x['train_tok_per_s'] for x in train):,.0f}" if train else "—"
        lines.append(f"| `{g['arm']}` | {g['seed']} | {g['generation']} | {g.get('engine', 'auto (peft)')} | "
                     f"{g['wall_s']:.0f} | " + " | ".join(_seconds(g["phases"], x) for x in GPU_PHASES)
                     + f" | {_gen_rate(g['phases'])} | {rate} | {g['device']} |")
    return markdown(["design", "seed", "generation", "engine", "wall s", *[f"{x} s" for x in GPU_PHASES],
                     "generated tok/s", "trained tok/s", "device"], lines)


def trial_steps(trial: str):
    """The value ``paper-steps-<trial>``: the LoRA steps its trained models took (the rows' ``train_steps``) and the
    minutes each took (``train_s``), a range where several models trained; ``—`` without the trial's rows."""
    def value(scale: str = "cpu") -> str:
        done = {}
        for r in read_rows(scale):
            if r["trial"] == trial and r.get("train_steps"):
                done[r["model"]] = (float(r["train_steps"]), float(r["train_s"]) / 60)
        if not done:
            return "—"
        steps = sorted({round(v[0]) for v in done.values()})
        mins = sorted(round(v[1]) for v in done.values())
        step_text = f"{steps[0]}" if len(steps) == 1 else f"{steps[0]}–{steps[-1]}"
        min_text = f"{mins[0]}" if mins[0] == mins[-1] else f"{mins[0]}–{mins[-1]}"
        return f"{step_text} LoRA steps, {min_text} min{' each' if len(done) > 1 else ''}"
    return value


TABLES = {"paper-testbed": testbed_table, "paper-engines": engines_table, "paper-gpu-cost": gpu_cost_table}
VALUES: dict = {f"paper-steps-{t}": trial_steps(t) for t in ("t1", "t2", "t3", "t4", "t5")}
