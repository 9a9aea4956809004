"""One breeding generation of the society (arm ``full``, generation 0) phase by phase under each agents
engine and dtype, for one GPU call: which engine makes population generation fast with the same answers.

The base is loaded once (float32; the bf16 base is a cast copy, as ``load_base(dtype="bf16")`` rounds the
same weights), the founders are trained once (on the float32 base) and every run starts from them. A run
is an (engine, dtype) of :func:`lib.engines.agents.make_agents`, by default

- ``peft`` bf16: peft's mixed-adapter batches through HF ``generate`` (the GPU pilot's path, the reference);
- ``multilora`` bf16: :class:`lib.engines.multilora.MultiLoraAgents`, then the same in batches of 2048 rows
  instead of the config's ``gen_batch`` (a decode step costs about the same for 256 or 2048 rows on a GPU:
  fewer, larger batches, the same answers up to float rounding);
- ``multilora`` fp32, then ``folded`` fp32 (:class:`lib.engines.folded.FoldedAgents`);

float32 runs with TF32 matmuls on CUDA. Each run goes through the society's own steps
(:mod:`lib.society.generation`) with the config's sizes, timed by a :class:`lib.engines.timing.PhaseTimer`:
``load`` (the founders as agents), ``evaluate`` (every agent on test, val and conformity, and the bare
base on test, as generation 0 does), ``screen`` (each pair's ``n_candidates`` merges on the screening
pool) and ``inherit`` (the winners on the inheritance and test pools), then ``train`` (the children,
:func:`lib.society.children.train_children`; it does not depend on the engine, so it runs once per
dtype). Selection (parents, pairs) and the screening's winners are the reference run's, so that every
run answers the very same questions; the answers of each run are counted against the reference's and
against the other run of its dtype (identical strings).

    python benchmarks/gpu_society.py --out gpu_society.json                  # paper config, one GPU (< 4 min)
    python benchmarks/gpu_society.py --micro --out /tmp/micro.json          # tiny base, a few prompts, CPU
    python benchmarks/gpu_society.py --runs multilora:bf16,peft:bf16 --out x.json
    python benchmarks/gpu_society.py --micro --set base_model=smollm2-135m --runs peft:fp32,multilora:fp32,folded:fp32 \
        --budget-s 3600 --out /tmp/smol.json                                # SmolLM2, micro sizes, on a CPU

``--budget-s`` (default 220, from the start of the work: the load and the founders included) skips a run whose
expected time (the longest run but the reference so far; before any, an eighth of the reference's) no longer
fits, so the default runs end within 4 minutes on one GPU even where the reference alone takes most of them
(the pilot: 158-184 s per ``full`` generation with peft); what was skipped is said in the table and the JSON.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path

import yaml

from lib.core.device import float_path
from lib.core.manifest import code_state
from lib.core.paths import REPO_ROOT
from lib.core.tasks import verify
from lib.engines.agents import ENGINES, make_agents
from lib.engines.models import base_adapter_path, load_base
from lib.engines.timing import PhaseClock, PhaseTimer
from lib.society import generation as step
from lib.society.children import save_merged_sources, train_children
from lib.society.config import load_file, validate_config
from lib.society.founders import ensure_founders
from lib.society.pools import pools_for
from lib.society.streams import child_seed, generation_rng, selection_rng

PAPER = REPO_ROOT / "configs" / "society" / "paper.yaml"
RUNS = "peft:bf16,multilora:bf16,multilora:bf16:2048,multilora:fp32,folded:fp32"
DTYPES = ("bf16", "fp32")
PHASES = ("load", "evaluate", "screen", "inherit", "train")
# --micro: the tiny base, 4 agents, 2 test / 2 val items per family, 3 merge candidates per pair
MICRO = {"base_model": "tiny", "agents": 4, "n_test": 2, "n_val": 2, "n_screen": 0, "n_conf": 4, "n_inherit": 12,
         "n_candidates": 3, "n_parents": 4, "elitism": 0, "epochs": 1, "spec_train": 24, "spec_epochs": 1,
         "lora": {"r": 4, "alpha": 8}, "batch_size": 12, "gen_batch": 48, "dtype": "fp32", "hard": False,
         "base_adapter": ""}  # the paper base's warm-up fits SmolLM2 only: --set base_adapter=... with its base


def parse_runs(text: str) -> list[tuple[str, str, int | None]]:
    """``"engine:dtype[:batch],..."`` → ``[(engine, dtype, batch or None), ...]`` (None: the config's
    ``gen_batch``); a :class:`ValueError` naming the choices."""
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        engine, dtype, *rest = item.split(":") + [""]
        batch = rest[0] if rest else ""
        if (engine not in ENGINES or engine == "auto" or dtype not in DTYPES or len(rest) > 2
                or (batch and not (batch.isdigit() and int(batch) > 0))):
            raise ValueError(f"--runs {item!r}: expected ENGINE:DTYPE[:BATCH] with ENGINE one of "
                             f"{[e for e in ENGINES if e != 'auto']}, DTYPE one of {list(DTYPES)} and BATCH "
                             f"a number of rows")
        if engine == "folded" and dtype != "fp32":
            raise ValueError(f"--runs {item!r}: the folded engine needs a float32 base")
        out.append((engine, dtype, int(batch) if batch else None))
    if not out:
        raise ValueError("--runs names no run")
    return out


class Recorder:
    """The agents of a run, recording every answer call's outputs under the phase being timed."""

    def __init__(self, agents):
        self.agents, self.phase, self.said = agents, None, {}
        self.BASE = agents.BASE

    def answer(self, names, prompts):
        outs = self.agents.answer(names, prompts)
        self.said.setdefault(self.phase, []).append([list(o) for o in outs])
        return outs

    def __getattr__(self, name):  # merge, load, save, forget, counter
        return getattr(self.agents, name)


@contextmanager
def tf32(on: bool):
    """TF32 matmuls (CUDA only) inside the block, the previous settings restored after."""
    import torch
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def same_answers(a: dict, b: dict) -> dict:
    """Per phase ``[identical answers, answers]`` of two runs' recordings (the same calls in the same order)."""
    out = {}
    for phase in a:
        pairs = [(x, y) for ca, cb in zip(a[phase], b.get(phase, [])) for oa, ob in zip(ca, cb) for x, y in zip(oa, ob)]
        total = sum(len(o) for c in a[phase] for o in c)
        out[phase] = [sum(x == y for x, y in pairs), total]
    out["all"] = [sum(v[0] for v in out.values()), sum(v[1] for v in out.values())]
    return out


def one_run(base, cfg, arm, dirs, pools, engine: str, *, batch: int, ref: dict | None, train_out: Path | None,
            cuda: bool) -> dict:
    """Generation 0 of ``arm`` under ``engine`` (batches of ``batch`` rows) on ``base``; ``ref``: the reference
    run's selection and
    screening (None: this run is the reference); ``train_out``: where to train the children (None: no train
    phase). Returns the run's record (its phases, and its answers under ``said``)."""
    timer = PhaseTimer(cuda=cuda)
    clock = PhaseClock(timer)
    agents = Recorder(make_agents(base, engine=engine, hard=cfg.hard, batch_size=batch, counter=clock.count))
    names = [f"t0a{i}" for i in range(cfg.agents)]
    seed, fam = cfg.seed_list()[0], cfg.families
    tic = time.perf_counter()
    with clock("load"):
        for n, d in zip(names, dirs):
            agents.load(n, d)
    agents.phase = "evaluate"
    with clock("evaluate"):
        ev = step.evaluate(agents, names, pools, verifier=verify, families=fam)
        step.base_accuracy(agents, pools.test, verifier=verify, families=fam)
    if ref is None:
        sel = step.select(ev, arm, n_parents=cfg.resolved_n_parents, lam=cfg.lam, rng=selection_rng(seed, arm.label, 0))
        gen = step.Generation(t=0, names=names, pools=pools, ev=ev, sel=sel)
    else:
        gen = ref["gen"]
    agents.phase = "screen"
    with clock("screen"):
        pairs, scored = step.screen(agents, gen, arm, rng=generation_rng(seed, arm.label, 0),
                                    n_pairs=cfg.agents - arm.elitism, verifier=verify, families=fam)
    scored = scored if ref is None else ref["scored"]
    agents.phase = "inherit"
    with clock("inherit"):
        sources = step.inherit(agents, gen, arm, pairs, scored, verifier=verify, families=fam)
    if train_out is not None:
        children = step.reproduce(sources, gen.sel.elites, pools.inheritance,
                                  child_seed=lambda c: child_seed(seed, arm.label, 0, c),
                                  verifier=verify if arm.inherit == "verified" else None)
        save_merged_sources(agents, children, train_out)
        agents.forget()
        with clock("train"):
            train_children(base, children, dirs, train_out, arm=arm, cfg=cfg, counter=clock.count)
    else:
        agents.forget()
    wall = time.perf_counter() - tic
    return {"gen": gen, "scored": scored, "said": agents.said, "wall_s": round(wall, 2), "phases": timer.rows()}


def bases(cfg, dtypes: set[str], device: str | None):
    """The config's base in float32 (loaded once) and, if asked, its bf16 copy: ``{dtype: Base}``."""
    import torch
    fp32 = load_base(cfg.base_model, device=device, dtype="fp32", adapter=base_adapter_path(cfg.base_adapter))
    out = {"fp32": fp32}
    if "bf16" in dtypes:
        model = copy.deepcopy(fp32.model).to(torch.bfloat16)
        out["bf16"] = replace(fp32, model=model, info={**fp32.info, "dtype": "bfloat16"}, _ids={})
    return out


def table(record: dict) -> str:
    """The runs side by side: seconds per phase, generated tokens per second, identical answers."""
    lines = [f"{'run (batch)':<22} {'tf32':>4} " + " ".join(f"{p:>9}" for p in PHASES)
             + f" {'total s':>8} {'gen tok/s':>10} {'same as ' + record['reference']:>22}"
             f" {'same as other dtype run':>24}"]
    for r in record["runs"]:
        if "skipped" in r:
            lines.append(f"{r['run']:<22} skipped: {r['skipped']}")
            continue
        ph = {x["phase"]: x for x in r["phases"]}
        gen_s = sum(ph[p]["wall_s"] for p in ("evaluate", "screen", "inherit") if p in ph)
        tok = sum(ph[p].get("gen_tokens", 0) for p in ("evaluate", "screen", "inherit") if p in ph)
        ref, other = r.get("same_as_reference", {}).get("all"), r.get("same_as_dtype_twin", {}).get("all")
        fmt = (lambda v: f"{v[0]}/{v[1]}" if v else "-")
        lines.append(f"{r['run']:<22} {'on' if r['tf32'] else 'off':>4} "
                     + " ".join(f"{ph[p]['wall_s']:>9.2f}" if p in ph else f"{'-':>9}" for p in PHASES)
                     + f" {sum(x['wall_s'] for x in r['phases']):>8.2f} {tok / gen_s if gen_s else 0:>10.1f}"
                     f" {fmt(ref):>22} {fmt(other):>24}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/gpu_society.py", description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(PAPER), help="a society config (default: the paper scale)")
    ap.add_argument("--micro", action="store_true", help="the tiny base and a few prompts (a CPU check of this script)")
    ap.add_argument("--arm", default="full", help="the arm whose generation 0 is timed (default full)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", default=RUNS, help=f"ENGINE:DTYPE runs, the first the reference (default {RUNS})")
    ap.add_argument("--budget-s", type=float, default=220.0, help="skip runs that would end after this (default 220)")
    ap.add_argument("--device", default=None, help="torch device (default: cuda if visible, else cpu)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config value (YAML), after --micro: e.g. --set base_model=smollm2-135m")
    ap.add_argument("--out", help="the JSON file to write")
    ap.add_argument("--manifest", metavar="FOLDER", help="only (re)write FOLDER/manifest.json from its records")
    args = ap.parse_args(argv)
    if args.manifest:
        print(f"wrote {write_folder_manifest(Path(args.manifest))}")
        return 0
    if not args.out:
        print("error: --out is required (or --manifest FOLDER)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        runs = parse_runs(args.runs)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    import torch
    from lib.society.gpu_run import environment
    raw = {**load_file(args.config), **(MICRO if args.micro else {})}
    for kv in args.set:
        k, sep, v = kv.partition("=")
        if not sep or k not in raw:
            print(f"error: --set {kv!r}: expected KEY=VALUE with a key of {args.config}", file=sys.stderr)
            return 2
        raw[k] = yaml.safe_load(v)
    tmp = Path(tempfile.mkdtemp(prefix="gpu_society_"))
    cfg = validate_config({**raw, "arms": [args.arm], "seeds": [args.seed], "adapters_dir": str(tmp / "runs")})
    arm = cfg.resolve_arm(args.arm)
    if arm.merge is None or arm.from_teachers:
        print(f"error: arm {args.arm!r} screens no merges; use a merging arm such as full", file=sys.stderr)
        return 2
    env = environment()
    print("environment: " + json.dumps(env))
    tic = time.perf_counter()
    bs = bases(cfg, {d for _, d, _ in runs}, args.device)
    cuda = str(bs["fp32"].device).startswith("cuda")
    load_s = time.perf_counter() - tic
    print(f"base {cfg.base_model} loaded in {load_s:.1f} s on {bs['fp32'].device}")
    tic = time.perf_counter()
    with tf32(cuda):
        dirs = ensure_founders(bs["fp32"], cfg, args.seed)
    founders_s = time.perf_counter() - tic
    pools = pools_for(cfg, args.seed, n_inherit=arm.n_inherit).at(0)
    print(f"founders ({cfg.agents}, fp32) trained in {founders_s:.1f} s; pools: test {len(pools.test)}, val "
          f"{len(pools.val)}, screen {len(pools.screen)}, conformity {len(pools.conformity)}, inheritance "
          f"{len(pools.inheritance)}; {cfg.agents - arm.elitism} pairs x {arm.n_candidates} candidates")
    record = {"config": repo_relative(args.config), "micro": args.micro, "set": args.set, "arm": args.arm, "seed": args.seed,
              "git": code_state(), "float_path": float_path(), "base": bs["fp32"].info.get("identity"),
              "base_adapter": bs["fp32"].info.get("base_adapter"), "environment": env,
              "device": str(bs["fp32"].device), "load_s": round(load_s, 2), "founders_s": round(founders_s, 2),
              "reference": f"{runs[0][0]} {runs[0][1]}", "sizes": {k: cfg[k] for k in (
                  "agents", "n_test", "n_val", "n_conf", "n_inherit", "n_candidates", "gen_batch", "lora")},
              "runs": []}
    ref, said, trained = None, {}, set()
    for k, (engine, dtype, batch) in enumerate(runs):
        batch = batch or cfg.gen_batch
        entry = {"run": f"{engine} {dtype} ({batch})", "engine": engine, "dtype": dtype, "batch": batch,
                 "tf32": cuda and dtype == "fp32"}
        others = [r["wall_s"] for r in record["runs"][1:] if "wall_s" in r]
        est = max(others) if others else record["runs"][0]["wall_s"] / 8 if record["runs"] else 0.0
        left = args.budget_s - (time.perf_counter() - t0)
        if k > 0 and left < est:
            entry["skipped"] = f"{left:.0f} s left in the budget < {est:.0f} s expected"
            record["runs"].append(entry)
            continue
        out = tmp / f"gen1_{engine}_{dtype}_{batch}"
        with tf32(entry["tf32"]) if cuda else nullcontext():
            res = one_run(bs[dtype], cfg, arm, dirs, pools, engine, batch=batch, ref=ref, cuda=cuda,
                          train_out=None if dtype in trained else out)
        trained.add(dtype)
        ref = ref or res
        said[(engine, dtype, batch)] = res["said"]
        entry.update(wall_s=res["wall_s"], phases=res["phases"],
                     answers=sum(len(o) for c in res["said"].values() for x in c for o in x))
        entry["same_as_reference"] = same_answers(next(iter(said.values())), res["said"])
        twin = next((key for key in said if key[1] == dtype and key[0] != engine), None)
        if twin is not None:
            entry["same_as_dtype_twin"] = {"run": "{} {} ({})".format(*twin), **same_answers(said[twin], res["said"])}
        record["runs"].append(entry)
        print(f"{entry['run']}: {res['wall_s']:.1f} s", flush=True)
    record["wall_s"] = round(time.perf_counter() - t0, 1)
    print(table(record))
    print(f"benchmark wall time {record['wall_s']:.0f} s (budget {args.budget_s:.0f} s)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    if repo_relative(Path(args.out).parent).startswith("data/"):  # a committed data folder: its manifest too
        print(f"wrote {write_folder_manifest(Path(args.out).parent)}")
    return 0


def repo_relative(path) -> str:
    """``path`` relative to the repository when it lies inside it (a record names no machine's folders), else as
    given."""
    p = Path(path).resolve()
    try:
        return p.relative_to(REPO_ROOT.resolve()).as_posix()
    except ValueError:
        return str(path)


def write_folder_manifest(folder: Path) -> Path:
    """``folder/manifest.json`` for a folder of benchmark records (``data/<scale>/paper_engines/``): what wrote it,
    and per record its config, commit, float path, device and wall time, read from the records themselves; the
    commits of every record (``git.commits``, oldest record first). Paths are the repository's, relative."""
    records = {f.name: json.loads(f.read_text()) for f in sorted(folder.glob("*.json")) if f.name != "manifest.json"}
    commits = list(dict.fromkeys((r.get("git") or {}).get("commit") for r in records.values()))
    m = {"kind": "benchmark", "experiment": folder.name, "written_by": "benchmarks/gpu_society.py",
         "git": {"commit": commits[-1] if commits else None, **({"commits": commits} if len(commits) > 1 else {}),
                 "dirty": any((r.get("git") or {}).get("dirty") for r in records.values())},
         "records": {name: {"config": repo_relative(r.get("config")) if r.get("config") else None,
                            "micro": r.get("micro"), "set": r.get("set"), "arm": r.get("arm"), "seed": r.get("seed"),
                            "git": r.get("git"), "float_path": r.get("float_path"), "device": r.get("device"),
                            "wall_s": r.get("wall_s")} for name, r in records.items()},
         "note": "each record is one benchmark run (python benchmarks/gpu_society.py --out FILE); this manifest "
                 "only gathers what the records say (python benchmarks/gpu_society.py --manifest FOLDER rewrites it)"}
    out = folder / "manifest.json"
    out.write_text(json.dumps(m, indent=1) + "\n")
    return out


if __name__ == "__main__":
    sys.exit(main())
