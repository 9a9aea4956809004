"""Does the society's test-bed hold at paper scale? Founders alone, seed 0, measured on the CPU in fp32.

The society needs (the preconditions, ``configs/society/cpu.yaml``): a base that answers in a form the
verifier reads and already has each family's *familiar* skill, but not its *novel* one
(:func:`lib.core.tasks.region`), and founders that learn their own family's novel region. The tiny base
is pre-trained on the familiar regions (:mod:`lib.society.tiny_base`); SmolLM2-135M-Instruct is not.
A **trial** here measures, for one recipe:

1. ``bare``: SmolLM2 as loaded (optional, ``--no-bare``);
2. ``base``: SmolLM2 with a **familiar-region warm-up** merged into its weights (one LoRA trained on
   ``warmup_n`` tasks per family from each family's ``pretrain`` part, familiar region only, the same
   part and region the tiny base is pre-trained on; :func:`warmup_tasks`), or the bare model when
   ``warmup_n`` is 0;
3. one founder per family (``founder_<family>``): a LoRA on that base trained on ``spec_train`` tasks of
   its family's ``founders`` part (:func:`lib.society.pools.founder_tasks`, founder seed ``seed*100 + i``)
   for ``spec_epochs``;

each on ``n_eval`` test tasks per family *and* region (:func:`eval_tasks`: distinct tasks of the
``test`` part, drawn with the society's test streams of the seed), greedy, ``max_new`` new tokens.
A model's **parse rate** on a family is the share of outputs whose final answer (:func:`lib.core.tasks.answer_of`)
has the family's shape (:data:`SHAPE`). The task form (``plain``, or ``spaced`` strings,
:func:`lib.core.tasks.in_form`) applies to every pool alike.

``python -m lib.society.paper_testbed --trial NAME [settings]`` appends the trial's rows to
``data/cpu/paper_testbed/founders.csv`` as each model is measured, and records the trial (settings,
commit, versions, device and float path, seconds per stage) in ``manifest.json`` beside it. Adapters
go to ``--work`` (default ``runs/cpu/paper_testbed/<trial>/``); ``--save-warmup DIR`` copies the
warm-up adapter there (``make paper-base``: ``data/base/paper-warmup/``).
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import sys
import time
from pathlib import Path

from lib.core.device import device_name, float_path
from lib.core.errors import UserError, cli_main
from lib.core.jsonfile import write_json
from lib.core.manifest import code_state, package_versions
from lib.core.paths import REPO_ROOT
from lib.core.tasks import FAMILIES, FORMS, REGIONS, Task, answer_of, in_form, normalise, region, verify
from lib.engines import lora, models
from lib.engines.generate import generate
from lib.society.pools import FOUNDER_SEED, TAGS, _pool_seed, draw, founder_seed

OUT = REPO_ROOT / "data" / "cpu" / "paper_testbed"  # python -m: --out; the docs' table (lib.society.studies.paper_scale):
                                                    # data_dir(scale, ...)
CSV = "founders.csv"
WARMUP_SEED = 20_000_000  # the warm-up's tasks: draw(family, "pretrain", ·, WARMUP_SEED + i, familiar_only=True)
WARMUP_LORA_SEED = 7  # its LoRA initialisation and data order
SHAPE = {"lists": re.compile(r"^\d+( \d+)*$"), "strings": re.compile(r"^[a-z]+$"),
         "strings_spaced": re.compile(r"^[a-z]( [a-z])*$"), "arith": re.compile(r"^-?\d+$")}
TARGETS = {"qv": ("q_proj", "v_proj"),
           "all": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")}
SETTINGS = ("form", "targets", "r", "alpha", "lr", "warmup_n", "warmup_epochs", "warmup_lr", "spec_train",
            "spec_epochs", "max_new", "seed")
COLUMNS = ("trial", "model", "family", "region", "n", "correct", "accuracy", "parse_rate", *SETTINGS,
           "train_steps", "train_s", "eval_s")


class TrialError(UserError, ValueError):
    """A trial's settings that cannot run (the message says which)."""


# ----------------------------------------------------------------------------- pure helpers


def shape_of(family: str, form: str) -> re.Pattern:
    """The shape of a parsed answer of ``family`` written in ``form``."""
    return SHAPE["strings_spaced"] if family == "strings" and form == "spaced" else SHAPE[family]


def parses(output: str, task: Task, form: str) -> bool:
    """True when ``output``'s final answer has the shape of an answer of ``task``'s family."""
    return bool(shape_of(task.family, form).match(normalise(answer_of(output))))


def eval_tasks(n: int, seed: int = 0, form: str = "plain", families=FAMILIES) -> list[Task]:
    """``n`` distinct test tasks per family *and* region (familiar first), from each family's ``test`` part
    with the society's test stream of ``seed`` (:func:`lib.society.pools.evaluation_pool`'s), in ``form``."""
    out = []
    for i, f in enumerate(families):
        pool = draw(f, "test", 8 * n, _pool_seed(seed, 0, i, TAGS["test"]), distinct=True)
        for reg in REGIONS:
            got = [t for t in pool if region(t) == reg][:n]
            if len(got) < n:
                raise TrialError(f"only {len(got)} {f} {reg} test tasks among {len(pool)}; ask for fewer (--n-eval)")
            out += [in_form(t, form) for t in got]
    return out


def warmup_tasks(n: int, form: str = "plain", families=FAMILIES) -> list[Task]:
    """The warm-up's training tasks: ``n`` distinct tasks per family from its ``pretrain`` part, familiar
    region only (never a test, val, founder or child task; never a novel one), in ``form``."""
    return [in_form(t, form) for i, f in enumerate(families)
            for t in draw(f, "pretrain", n, WARMUP_SEED + i, distinct=True, familiar_only=True)]


def founder_training(family: str, agent: int, n: int, seed: int = 0, form: str = "plain") -> list[Task]:
    """Founder ``agent``'s training tasks (its family's ``founders`` part, as in the society), in ``form``."""
    return [in_form(t, form) for t in draw(family, "founders", n, FOUNDER_SEED + founder_seed(seed, agent))]


def score(outputs, tasks, form: str) -> list[dict]:
    """Rows ``{family, region, n, correct, accuracy, parse_rate}`` per family and region (and ``all``)."""
    rows = []
    for f in dict.fromkeys(t.family for t in tasks):
        for reg in (*REGIONS, "all"):
            k = [j for j, t in enumerate(tasks) if t.family == f and (reg == "all" or region(t) == reg)]
            if not k:
                continue
            ok = sum(verify(outputs[j], tasks[j]) for j in k)
            ps = sum(parses(outputs[j], tasks[j], form) for j in k)
            rows.append({"family": f, "region": reg, "n": len(k), "correct": ok, "accuracy": round(ok / len(k), 4),
                         "parse_rate": round(ps / len(k), 4)})
    return rows


def targets_met(rows: list[dict]) -> dict[str, bool]:
    """The test-bed's targets on one trial's rows: the base parses >= 95 % on every family, scores >= 0.6
    on every familiar region and <= 0.2 on every novel one; each founder >= 0.6 on its family's novel
    region (>= 0.4 for arith); ``None`` for a founder not measured."""
    base = {(r["family"], r["region"]): r for r in rows if r["model"] == "base"}
    fams = sorted({f for f, _ in base})
    out = {"base_parses": bool(fams) and all(base[(f, "all")]["parse_rate"] >= 0.95 for f in fams),
           "base_familiar": bool(fams) and all(base[(f, "familiar")]["accuracy"] >= 0.6 for f in fams),
           "base_novel_low": bool(fams) and all(base[(f, "novel")]["accuracy"] <= 0.2 for f in fams)}
    for f in fams:
        r = [x for x in rows if x["model"] == f"founder_{f}" and x["family"] == f and x["region"] == "novel"]
        out[f"founder_{f}"] = r[0]["accuracy"] >= (0.4 if f == "arith" else 0.6) if r else None  # None: not measured
    return out


def trial_rows(rows: list[dict], trial: str, base_from: str | None = None) -> list[dict]:
    """The rows of ``trial``, its base's taken from trial ``base_from`` when it reused that trial's warm-up
    adapter without measuring the base again."""
    own = [r for r in rows if r["trial"] == trial]
    if base_from and not any(r["model"] == "base" for r in own):
        own += [r for r in rows if r["trial"] == base_from and r["model"] == "base"]
    return own


def append_rows(path: Path, rows: list[dict]) -> None:
    """Append ``rows`` to the CSV ``path`` (header :data:`COLUMNS` when new)."""
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in COLUMNS})


def trials_in(path: Path) -> set[str]:
    if not path.exists():
        return set()
    with open(path) as fh:
        return {r["trial"] for r in csv.DictReader(fh)}


# ----------------------------------------------------------------------------- the trial


def _log(msg: str, t0: float) -> None:
    print(f"[{time.strftime('%H:%M:%S')} +{time.time() - t0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def _write_manifest(out: Path, trial: str, entry: dict) -> None:
    p = out / "manifest.json"
    import json
    m = json.loads(p.read_text()) if p.exists() else {
        "what": "the paper scale's test-bed, founders alone (python -m lib.society.paper_testbed); rows in "
                "founders.csv",
        "trials": {}}
    m["trials"][trial] = entry
    m.update({"versions": package_versions(), "device": device_name(), "float_path": float_path()})
    write_json(p, m, sort_keys=False)


def run_trial(a: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(a.threads)
    out, t0 = Path(a.out), time.time()
    settings = {k: getattr(a, k) for k in SETTINGS}
    if a.trial in trials_in(out / CSV):
        raise TrialError(f"trial {a.trial!r} already has rows in {out / CSV}; give the trial another name")
    work = Path(a.work) if a.work else REPO_ROOT / "runs" / "cpu" / "paper_testbed" / a.trial
    spec = lora.LoraSpec(r=a.r, alpha=a.alpha, targets=TARGETS[a.targets], lr=a.lr, batch_size=16)
    wspec = lora.LoraSpec(r=a.r, alpha=a.alpha, targets=TARGETS[a.targets], lr=a.warmup_lr, batch_size=16)
    entry = {"settings": settings, "git": code_state(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "threads": a.threads, "base_model": a.base, "dtype": "fp32", "stages_s": {}}
    tests = eval_tasks(a.n_eval, a.seed, a.form)
    prompts = [t.prompt for t in tests]
    base = models.load_base(a.base, device="cpu", dtype="fp32")
    entry["stages_s"]["load"] = round(time.time() - t0, 1)
    entry["base_identity"] = base.info["identity"]
    _log(f"trial {a.trial}: {settings}; {len(tests)} test prompts; base loaded", t0)

    def measure(model: str, adapter=None, family=None, **extra) -> None:
        t = time.time()
        mine = [x for x in tests if family is None or x.family == family]
        outs = generate(base, [x.prompt for x in mine], adapter=adapter, max_new_tokens=a.max_new,
                        batch_size=a.gen_batch)
        dt = round(time.time() - t, 1)
        rows = [{"trial": a.trial, "model": model, **r, **settings, **extra, "eval_s": dt}
                for r in score(outs, mine, a.form)]
        append_rows(out / CSV, rows)
        entry["stages_s"][f"eval_{model}"] = dt
        entry.setdefault("examples", {})[model] = [[t.prompt, o] for t, o in list(zip(mine, outs))[::a.n_eval][:6]]
        _log(f"{model}: " + ", ".join(f"{r['family']}/{r['region']} {r['accuracy']:.2f} (parse {r['parse_rate']:.2f})"
                                      for r in rows if r["region"] != "all"), t0)
        _write_manifest(out, a.trial, entry)

    if a.bare:
        measure("bare")
    if a.warmup_n:
        _warm_up(a, base, work, wspec, entry, t0, measure)
    elif not a.bare:
        measure("base")
    else:  # the bare model is the base: its rows again under the name the targets read
        with open(out / CSV) as fh:
            rows = [dict(r, model="base") for r in csv.DictReader(fh) if r["trial"] == a.trial and r["model"] == "bare"]
        append_rows(out / CSV, rows)
    _founders(a, base, work, spec, entry, t0, measure)
    entry["wall_s"] = round(time.time() - t0, 1)
    with open(out / CSV) as fh:
        mine = [dict(r, accuracy=float(r["accuracy"]), parse_rate=float(r["parse_rate"]))
                for r in csv.DictReader(fh) if r["trial"] in (a.trial, a.base_from)]
    entry["targets_met"] = targets_met(trial_rows(mine, a.trial, a.base_from or None))
    _write_manifest(out, a.trial, entry)
    _log(f"done: targets {entry['targets_met']}", t0)
    return 0


def _warm_up(a: argparse.Namespace, base, work: Path, wspec, entry: dict, t0: float, measure) -> None:
    """The trial's familiar-region warm-up (trained, or copied from ``--warmup-from``), merged into the base, saved
    where ``--save-warmup`` says and the base measured after it (unless ``--base-from`` gives its rows)."""
    wdir = work / "warmup"
    wt = warmup_tasks(a.warmup_n, a.form)
    if a.warmup_from:
        shutil.copytree(a.warmup_from, wdir, dirs_exist_ok=True)
        steps, dt = 0, 0.0
    else:
        t = time.time()
        _log(f"warm-up: {len(wt)} tasks x {a.warmup_epochs} epochs", t0)
        info = {}
        lora.train_lora_on_tasks(base, wt, wdir, epochs=a.warmup_epochs, seed=WARMUP_LORA_SEED, spec=wspec,
                                 counter=lambda **k: info.update(k))
        steps, dt = info.get("train_steps", 0), round(time.time() - t, 1)
        entry["stages_s"]["warmup_train"] = dt
    models.merge_base_adapter(base, wdir)
    entry["base_adapter"] = base.info["base_adapter"]
    if a.save_warmup:
        dst = Path(a.save_warmup)
        dst.mkdir(parents=True, exist_ok=True)
        for f in lora.FILES:
            shutil.copy2(wdir / f, dst / f)
    if a.base_from:  # the same warm-up adapter as trial base_from: its base rows stand for this trial's
        entry["base_rows_from"] = a.base_from
    else:
        measure("base", train_steps=steps, train_s=dt)


def _founders(a: argparse.Namespace, base, work: Path, spec, entry: dict, t0: float, measure) -> None:
    """One founder per family of ``--founders``, trained on its family and measured (``--founder-eval``)."""
    for i, fam in enumerate(a.founders):
        t = time.time()
        ft = founder_training(fam, FAMILIES.index(fam), a.spec_train, a.seed, a.form)
        _log(f"founder {fam}: {len(ft)} tasks x {a.spec_epochs} epochs", t0)
        info = {}
        d = work / f"founder_{fam}"
        lora.train_lora_on_tasks(base, ft, d, epochs=a.spec_epochs, seed=100 * a.seed + FAMILIES.index(fam),
                                 spec=spec, counter=lambda **k: info.update(k))
        dt = round(time.time() - t, 1)
        entry["stages_s"][f"founder_{fam}_train"] = dt
        lora.load_adapter(base, f"founder_{fam}", d)
        measure(f"founder_{fam}", adapter=f"founder_{fam}", family=fam if a.founder_eval == "own" else None,
                train_steps=info.get("train_steps", 0), train_s=dt)
        lora.remove_adapter(base, f"founder_{fam}")


def to_half(folder: Path) -> None:
    """Rewrite ``folder``'s adapter weights in float16 (half the bytes: 9.8 MB for all seven modules at r 16).
    Merged into the base (:func:`lib.engines.models.merge_base_adapter`) they are cast to the base's dtype;
    the relative rounding of each factor is at most 2^-11."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / lora.FILES[1]
    tensors = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in load_file(str(path)).items()}
    save_file(tensors, str(path))


def build_base(a: argparse.Namespace) -> int:
    """``make paper-base``: train the familiar-region warm-up alone and write it to ``a.build_base`` (the
    adapter, and ``build_info.json``: its settings, steps, seconds, commit and the merged base's test
    accuracy per family and region, measured as a trial measures it)."""
    import torch

    torch.set_num_threads(a.threads)
    if not a.warmup_n:
        raise TrialError("--build-base needs a warm-up: --warmup-n >= 1")
    t0, dst = time.time(), Path(a.build_base)
    base = models.load_base(a.base, device="cpu", dtype="fp32")
    wt = warmup_tasks(a.warmup_n, a.form)
    info: dict = {}
    spec = lora.LoraSpec(r=a.r, alpha=a.alpha, targets=TARGETS[a.targets], lr=a.warmup_lr, batch_size=16)
    _log(f"warm-up: {len(wt)} tasks x {a.warmup_epochs} epochs -> {dst}", t0)
    t = time.time()
    lora.train_lora_on_tasks(base, wt, dst, epochs=a.warmup_epochs, seed=WARMUP_LORA_SEED, spec=spec,
                             counter=lambda **k: info.update(k))
    train_s = round(time.time() - t, 1)
    to_half(dst)
    models.merge_base_adapter(base, dst)
    tests = eval_tasks(a.n_eval, a.seed, a.form)
    outs = generate(base, [x.prompt for x in tests], max_new_tokens=a.max_new, batch_size=a.gen_batch)
    write_json(dst / "build_info.json", {
        "what": "LoRA merged into SmolLM2-135M-Instruct at load (config key base_adapter): the familiar-region warm-up",
        "command": "python -m lib.society.paper_testbed " + " ".join(sys.argv[1:]) if a.argv is None else a.argv,
        "base_model": a.base, "base_identity": base.info["identity"], "form": a.form,
        "lora": {"targets": list(TARGETS[a.targets]), "r": a.r, "alpha": a.alpha}, "lr": a.warmup_lr,
        "tasks": f"{a.warmup_n} distinct tasks per family from its pretrain part, familiar region only "
                 f"(lib.society.paper_testbed.warmup_tasks, seeds {WARMUP_SEED} + family index)",
        "epochs": a.warmup_epochs, "train_steps": info.get("train_steps"), "train_s": train_s, "threads": a.threads,
        "dtype": "fp32 (trained), stored in fp16 (to_half)", "git": code_state(),
        "test": {"n_per_family_and_region": a.n_eval, "seed": a.seed,
                 "rows": score(outs, tests, a.form)}}, sort_keys=False)
    _log(f"built {dst}", t0)
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m lib.society.paper_testbed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--trial", default="", help="the trial's name (a new one: rows are appended)")
    ap.add_argument("--build-base", default="", help="only train the warm-up and write it to this folder with "
                                                     "build_info.json (make paper-base); no rows")
    ap.add_argument("--base", default="smollm2-135m", help="base model (default smollm2-135m)")
    ap.add_argument("--form", default="spaced", choices=FORMS, help="task form (lib.core.tasks.in_form)")
    ap.add_argument("--targets", default="all", choices=sorted(TARGETS), help="LoRA modules: all 7 linear, or q/v")
    ap.add_argument("--r", type=int, default=16)
    ap.add_argument("--alpha", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3, help="founders' learning rate")
    ap.add_argument("--warmup-n", type=int, default=300, help="warm-up tasks per family (0: no warm-up)")
    ap.add_argument("--warmup-epochs", type=int, default=2)
    ap.add_argument("--warmup-lr", type=float, default=1e-3)
    ap.add_argument("--warmup-from", default="", help="an adapter folder to use as the warm-up instead of training one")
    ap.add_argument("--save-warmup", default="", help="copy the warm-up adapter to this folder")
    ap.add_argument("--spec-train", type=int, default=400)
    ap.add_argument("--spec-epochs", type=int, default=3)
    ap.add_argument("--founders", nargs="*", default=list(FAMILIES), help="families to train a founder of")
    ap.add_argument("--n-eval", type=int, default=40, help="test tasks per family and region")
    ap.add_argument("--founder-eval", default="all", choices=("all", "own"),
                    help="a founder answers every family's test items, or only its own family's")
    ap.add_argument("--base-from", default="", help="with --warmup-from: that trial's warm-up; its base rows stand "
                                                    "for this trial's (the base is not measured again)")
    ap.add_argument("--max-new", type=int, default=16, help="new tokens per answer")
    ap.add_argument("--gen-batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-bare", dest="bare", action="store_false", help="skip measuring the bare model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--work", default="", help="adapters (default runs/cpu/paper_testbed/<trial>)")
    return ap


def _main(argv=None) -> int:
    a = parser().parse_args(argv)
    a.argv = None if argv is None else " ".join(["python -m lib.society.paper_testbed", *argv])
    if not a.trial and not a.build_base:
        raise TrialError("name the trial (--trial NAME), or build the warm-up (--build-base DIR)")
    bad = [f for f in a.founders if f not in FAMILIES]
    if bad:
        raise TrialError(f"unknown founder families {bad}; known: {list(FAMILIES)}")
    if min(a.r, a.alpha, a.spec_train, a.spec_epochs, a.n_eval, a.max_new, a.warmup_epochs) < 1 or a.warmup_n < 0:
        raise TrialError("r, alpha, spec_train, spec_epochs, n_eval, max_new and warmup_epochs must be >= 1, "
                         "warmup_n >= 0")
    if a.base_from and not a.warmup_from:
        raise TrialError("--base-from needs --warmup-from (the base is that trial's only with its warm-up adapter)")
    if a.warmup_from and not (Path(a.warmup_from) / "adapter_config.json").is_file():
        raise TrialError(f"--warmup-from {a.warmup_from}: no adapter_config.json there")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return build_base(a) if a.build_base else run_trial(a)


def main(argv=None) -> int:
    return cli_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
