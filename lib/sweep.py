"""Fan the independent runs of an experiment out on Ray: ``python -m lib.sweep CFG [options]``.

A config is split by its runner's ``shards(cfg)`` into independent runs — one per (arm, seed) for
tool mutation and the society, one per seed for the program search — and each run is one Ray task
(``ray.remote(num_cpus=--cpus-per-run, num_gpus=--gpus-per-run)``) that calls the runner's
``run_experiment`` on its shard config. Every run writes only its own shard
(``<data root>/<scale>/<experiment>/<arm>_s<seed>.csv``; adapters and checkpoints under
``<runs root>/<scale>/<experiment>/``); when all have finished, the shards are merged into the
tidy table (``lib.core.rows.read_rows``; the program search's own merge) and the manifest gains a
``sweep`` entry (who ran what, where, how long).

Where it runs:

- no ``--ray-address``: a local Ray started in this process on this machine's cores
  (``--num-cpus``, default all), so the same command works on a laptop;
- ``--ray-address auto`` (or ``HOST:PORT``): join a running cluster (``ray start --head`` on one
  node, ``ray start --address HEAD:6379`` on the others); every node needs the same checkout
  installed (``pip install -e .[cluster]``);
- ``--serial``: no Ray; the runs one after the other in this process (the reference).

``--data-root DIR`` / ``--runs-root DIR`` set ``GE_DATA_DIR`` / ``GE_RUNS_DIR`` for the driver
and, through Ray's ``runtime_env`` ``env_vars`` (and the task's own arguments), for every worker:
on a cluster, point them at storage every node can reach.

Resume: a run whose shard already holds its final block is skipped; a half-finished one resumes
from its last completed block (the runners' resume), so a killed sweep or a preempted node loses
at most the block (generation / logging interval) in flight. Ray retries a task whose worker or
node died (``--max-retries``); an exception in a run is not retried but reported with its arm,
seed and the tail of its log (kept in ``<runs root>/<scale>/<experiment>/logs/<arm>_s<seed>.log``)
while the other runs go on. A data folder whose manifest records another config is refused before
anything runs, and so is writing ``cpu``/``paper`` data from a git tree with uncommitted changes
unless ``--allow-dirty`` (passed on to the workers as ``GE_ALLOW_DIRTY=1``, recorded in the
manifest). Exit status: 0 all runs succeeded and were merged, 1 some failed (re-launch the same
command to finish them), 2 a user error (bad config or arguments, unknown base model, a folder of
another config, a dirty tree, Ray missing, the cluster unreachable): one line on stderr.

Same rows: each run uses ``int(--cpus-per-run)`` torch threads (default 1), so a sweep's merged
rows equal those of the same runs made serially with that many threads (the society's LoRA
numerics depend on the thread count; tool mutation fixes its own with its ``threads`` key).

Fault injection (tests): ``GE_FAULT="ARM:SEED:BLOCK"`` (or the hidden ``--fault``) makes the run
of (ARM, SEED) raise :class:`InjectedFault` in the middle of block BLOCK: its rows are appended
but the block is not marked done (the runner's ``mark_done`` raises), so a re-launch must drop and
redo them. ``"ARM:SEED:BLOCK:exit"`` instead kills the worker process there (``os._exit``, as a
preempted node would), once per sweep, so that Ray's retry resumes and finishes the run. ARM may
be ``*``; runners without blocks (program search, whose shards have arm ``all``) fail before
their seed's work instead.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from lib import experiment as _experiment
from lib.core.config import ConfigError
from lib.core.errors import MissingDependencyError, UserError, cli_main
from lib.core.device import device_name, float_path
from lib.core.jsonfile import write_json
from lib.core.locks import folder_lock
from lib.core.manifest import ALLOW_DIRTY_ENV, CODE_STATE_ENV, MANIFEST, git_state, now, pinned_code_state, read_manifest
from lib.core.paths import data_dir, data_root, recorded_root, runs_dir, runs_root
from lib.core.rows import last_done, read_rows, shard_path

RAY_MISSING = ("lib.sweep needs Ray, an optional extra: install it with `pip install -e .[cluster]` "
               "(or `pip install 'ray[default]>=2.40,<3'`), or run the shards one by one with --serial.")
TAIL_LINES = 25


class ClusterError(UserError, RuntimeError):
    """Ray could not be started or joined."""


class InjectedFault(RuntimeError):
    """Raised by a run chosen with ``GE_FAULT`` / ``--fault`` (tests only)."""


# ----------------------------------------------------------------------------- shards


def shard_label(cfg: dict) -> tuple[str, int]:
    """``(arm, seed)`` of one shard config; ``arm`` is ``"all"`` where a shard holds every arm."""
    arms = cfg.get("arms")
    arm = str(arms[0]) if isinstance(arms, list) and len(arms) == 1 else "all"
    if isinstance(cfg.get("shard_seed"), int) and cfg["shard_seed"] >= 0:
        seed = cfg["shard_seed"]
    elif isinstance(cfg.get("seeds"), list) and len(cfg["seeds"]) == 1:
        seed = cfg["seeds"][0]
    else:
        seed = cfg.get("seed", -1)
    return arm, int(seed)


def shard_done(cfg: dict) -> bool:
    """True when the shard ``cfg`` has all its rows on disk — the runner's own ``shard_done``."""
    return bool(_experiment.runner(cfg["kind"]).shard_done(cfg))


def parse_fault(spec: str | None) -> tuple[str, int, int, str] | None:
    """``"ARM:SEED:BLOCK[:exit]"`` -> ``(arm, seed, block, "raise" | "exit")``; ``None``/empty -> ``None``."""
    if not spec:
        return None
    parts = spec.split(":")
    mode = parts.pop() if len(parts) == 4 and parts[-1] in ("raise", "exit") else "raise"
    try:
        arm, seed, block = parts
        return arm, int(seed), int(block), mode
    except ValueError:
        raise ConfigError(f"fault {spec!r} must read ARM:SEED:BLOCK or ARM:SEED:BLOCK:exit, "
                          f"e.g. mutate_promote:1:40") from None


@contextlib.contextmanager
def _injected(mod, arm: str, seed: int, fault, marker: Path):
    """Patch ``mod`` (or the modules it names in ``BLOCK_MODULES``, where its blocks are marked done) so
    that the run (arm, seed) fails mid-block ``fault[2]`` (see module doc).

    ``raise``: an :class:`InjectedFault`. ``exit``: the worker process dies (``os._exit``), as on a
    preempted node, once per sweep (``marker`` records it) so that Ray's retry can finish the run;
    outside Ray it raises instead.
    """
    if fault is None or fault[0] not in ("*", arm) or fault[1] != seed:
        yield
        return
    block, mode = fault[2], fault[3]
    if mode == "exit" and marker.exists():
        yield
        return
    mods = getattr(mod, "BLOCK_MODULES", (mod,))  # where the runner marks its blocks done
    name = ("mark_done" if all(hasattr(m, "mark_done") for m in mods) else
            "run_seed" if all(hasattr(m, "run_seed") for m in mods) else None)

    def fail():
        if mode == "exit" and _in_ray_worker():
            marker.write_text("fired\n")
            sys.stdout.flush()
            os._exit(17)
        raise InjectedFault(f"injected fault in {arm} s{seed} at block {block} (GE_FAULT)")

    if name is None:
        fail()

    def faulty(real):
        def call(*args, **kw):
            if name == "run_seed" or int(args[1]) == block:
                fail()
            return real(*args, **kw)
        return call

    reals = [getattr(m, name) for m in mods]
    for m, real in zip(mods, reals):
        setattr(m, name, faulty(real))
    try:
        yield
    finally:
        for m, real in zip(mods, reals):
            setattr(m, name, real)


def _in_ray_worker() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE


class _Tee(io.TextIOBase):
    """Writes to a log file (flushed, so a killed run leaves its output) and keeps a copy."""

    def __init__(self, fh):
        self.fh, self.buf = fh, io.StringIO()

    def write(self, text: str) -> int:
        self.fh.write(text)
        self.fh.flush()
        return self.buf.write(text)


@contextlib.contextmanager
def _environ(env: dict[str, str]):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _tail(text: str, n: int = TAIL_LINES) -> str:
    """The last ``n`` lines of a log, progress-bar redraws (``\\r``) collapsed to their last state."""
    lines = [ln.rsplit("\r", 1)[-1] for ln in text.replace("\r\n", "\n").split("\n")]
    return "\n".join([ln for ln in lines if ln.strip()][-n:])


def run_shard(cfg: dict, *, env: dict[str, str] | None = None, threads: int = 1, fault=None) -> dict:
    """Run one shard config (in a Ray worker or in this process); never raises.

    Its stdout/stderr go to ``<runs root>/<scale>/<experiment>/logs/<arm>_s<seed>.log`` as they are
    written (one section per attempt); returns ``{arm, seed, status: ok|failed, wall_s, error, tail,
    host, pid}``.
    """
    arm, seed = shard_label(cfg)
    t0 = time.perf_counter()
    out = {"arm": arm, "seed": seed, "status": "failed", "wall_s": 0.0, "error": "", "tail": "",
           "host": socket.gethostname(), "pid": os.getpid()}
    if _in_ray_worker():
        out["host"] += "/" + sys.modules["ray"].get_runtime_context().get_node_id()[:8]  # Ray node
    with _environ(env or {}):
        log = runs_dir(cfg["scale"], cfg["experiment"]) / "logs" / f"{arm}_s{seed}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        new_line = "\n" if log.exists() and log.stat().st_size else ""  # a killed attempt may end mid-line
        with log.open("a") as fh:
            fh.write(f"{new_line}=== {arm} s{seed} on {out['host']} pid {out['pid']}, started {time.ctime()} ===\n")
            tee = _Tee(fh)
            try:
                import torch
                old_threads = torch.get_num_threads()
                torch.set_num_threads(max(1, int(threads)))
                try:
                    with contextlib.redirect_stdout(tee), contextlib.redirect_stderr(tee):
                        mod = _experiment.runner(cfg["kind"])
                        with _injected(mod, arm, seed, fault, log.with_suffix(".fault")):
                            mod.run_experiment(mod.validate_config(cfg))
                finally:
                    torch.set_num_threads(old_threads)
                out["status"] = "ok"
            except Exception as e:  # noqa: BLE001 - reported, the other runs go on
                tee.write(traceback.format_exc())
                out["error"] = f"{type(e).__name__}: {e}"
                if not isinstance(e, InjectedFault) and shard_done(cfg):
                    out["status"] = "ok"  # every block is on disk: the error came after (e.g. reading rows)
                    out["error"] = "after the final block (data complete): " + out["error"]
            out["wall_s"] = round(time.perf_counter() - t0, 3)
            fh.write(f"\n=== {out['status']} in {out['wall_s']} s ===\n")
        out["tail"] = _tail(tee.buf.getvalue())
    return out


# ----------------------------------------------------------------------------- the sweep


@dataclasses.dataclass
class SweepResult:
    """What a sweep did: one dict per run (see :func:`run_shard`; ``skipped`` for finished ones)."""

    runs: list[dict]
    rows: pd.DataFrame | None     # the merged tidy table (None unless every run succeeded)
    folder: Path
    wall_s: float
    merge_error: str = ""

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.runs if r["status"] == "failed"]

    @property
    def exit_code(self) -> int:
        return 0 if not self.failed and self.rows is not None else 1


def merge(cfg: dict) -> pd.DataFrame:
    """The merged tidy rows of a finished sweep of ``cfg`` (full, unsharded config)."""
    mod = _experiment.runner(cfg["kind"])
    if cfg["kind"] == "program_search":
        return mod.run_experiment(cfg)  # its own merge: every seed done, so it only writes the outputs
    df = read_rows(data_dir(cfg["scale"], cfg["experiment"]))
    seeds = cfg["seeds"] if cfg.get("seeds") else [cfg.get("seed")]
    return df[df.arm.isin(cfg["arms"]) & df.seed.isin(seeds)].reset_index(drop=True)


LEDGER = "sweeps.jsonl"


def ledger_line(runs: list[dict], info: dict, load_start: tuple[float, ...]) -> dict | None:
    """One sweep's entry in the folder's ledger (:data:`LEDGER`, one JSON object per line, appended;
    ``None`` when the sweep ran nothing): when it finished, the commit it ran at, the host's CPUs, their
    float path (:func:`lib.core.device.float_path`: runs on another kernel level train other founders) and
    its 1/5/15-minute load averages at the start and at the end, and each run's wall seconds. The
    manifest keeps only the last sweep; a study run over many sweeps and sessions quotes its wall time
    and load from here."""
    ran = [{k: r.get(k) for k in ("arm", "seed", "status", "wall_s", "host")} for r in runs if r["status"] != "skipped"]
    if not ran:
        return None
    load_end = os.getloadavg() if hasattr(os, "getloadavg") else ()
    return {"finished": now(), "git": git_state(), "host": socket.gethostname(), "cpus": os.cpu_count(),
            "device": device_name(), "float_path": float_path(),
            "load_start": [round(x, 2) for x in load_start], "load_end": [round(x, 2) for x in load_end],
            **{k: info[k] for k in ("backend", "cpus_per_run", "wall_s") if k in info}, "runs": ran}


def _record(folder: Path, cfg: dict, runs: list[dict], info: dict, load_start: tuple[float, ...] = ()) -> None:
    """Add a ``sweep`` entry to the folder's manifest (arms/seeds lists widened to the whole sweep) and
    a line to its ledger (:func:`ledger_line`), under the folder lock (another run may be updating it)."""
    import json
    with folder_lock(folder):
        line = ledger_line(runs, info, load_start)
        if line is not None:
            with open(folder / LEDGER, "a") as f:
                f.write(json.dumps(line, sort_keys=True) + "\n")
        m = read_manifest(folder)
        if m is None:
            return
        for key in ("arms", "seeds"):  # a list, or None where the folder's config leaves them out (society)
            if key in m and (m[key] is None or isinstance(m[key], list)) and isinstance(cfg.get(key), list):
                m[key] = list(cfg[key])
        if isinstance(m.get("shards"), dict):  # a runner's own shard table (the society's): every shard, not the last writer's
            m["shards"] = {f"{r['arm']}_s{r['seed']}": last_done(shard_path(folder, r["arm"], r["seed"])) for r in runs}
        m["sweep"] = {**info, "runs": [{k: r.get(k) for k in ("arm", "seed", "status", "wall_s", "host")}
                                       for r in runs]}
        write_json(folder / MANIFEST, m)
    mod = _experiment.runner(cfg["kind"])
    if hasattr(mod, "refresh_manifest"):  # the whole config's shards and status, not the last run's
        mod.refresh_manifest(cfg, folder)


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise MissingDependencyError(RAY_MISSING) from e
    return ray


def _say(msg: str, progress: bool, always: bool = False) -> None:
    if progress or always:
        from tqdm.auto import tqdm
        tqdm.write(msg, file=sys.stdout)


def _report(r: dict, progress: bool) -> None:
    name = f"{r['arm']} s{r['seed']}"
    if r["status"] == "failed":
        tail = "\n".join("    | " + ln for ln in r["tail"].splitlines())
        _say(f"FAIL {name} after {r['wall_s']:.1f} s on {r.get('host', '?')}: {r['error']}\n{tail}", progress, always=True)
    elif r["status"] == "skipped":
        _say(f"skip {name} (already complete)", progress)
    else:
        _say(f"ok   {name} in {r['wall_s']:.1f} s on {r.get('host', '?')}", progress)


def _run_serial(todo: list[dict], opts: dict, bar: dict, progress: bool) -> list[dict]:
    """The runs one after the other in this process (the reference; no Ray)."""
    from tqdm.auto import tqdm

    runs = []
    with tqdm(**bar) as b:
        for p in todo:
            runs.append(run_shard(p, **opts))
            _report(runs[-1], progress)
            b.update(1)
    return runs


def _probe(address: str, timeout: float = 10.0) -> None:
    """Fail fast when nothing listens at the head's GCS port (``ray.init`` would wait minutes).

    ``auto`` is the address recorded by ``ray start`` on this machine (``/tmp/ray/ray_current_cluster``).
    """
    if address == "auto" and os.environ.get("RAY_ADDRESS"):
        address = os.environ["RAY_ADDRESS"]
    if address == "auto":
        rec = Path(os.environ.get("RAY_TMPDIR", "/tmp")) / "ray" / "ray_current_cluster"
        if not rec.is_file():
            raise ConnectionError("no running Ray cluster was started on this machine (`ray start --head`)")
        address = rec.read_text().split()[0]
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except (OSError, ValueError) as e:
        raise ConnectionError(f"nothing answers at {address} ({e})") from None


def _connect(ray, address: str | None, num_cpus: int | None, env: dict) -> bool:
    """Start a local Ray or join ``address`` unless one is running here; True when this call started it."""
    if ray.is_initialized():
        return False
    # the roots reach every worker of this job through runtime_env; each task also receives them as
    # arguments (so a Ray that was already running, e.g. in tests, needs no new workers)
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                          "runtime_env": {"env_vars": env} if env else None}
    try:
        if address:
            _probe(address)
            ray.init(address=address, **kw)
        else:
            ray.init(num_cpus=num_cpus or os.cpu_count(), **kw)
    except (ConnectionError, ray.exceptions.RaySystemError, RuntimeError) as e:
        hint = (" Is the cluster up (`ray status`)? A cluster started with token authentication "
                "(the default of `ray start --head` since Ray 2.59) needs `export RAY_AUTH_MODE=token` "
                "in this shell and on every node, with the head's ~/.ray/auth_token (or RAY_AUTH_TOKEN)."
                if address else "")
        where = f"join the Ray cluster at {address}" if address else "start a local Ray"
        raise ClusterError(f"could not {where}: {type(e).__name__}: {e}.{hint}") from None
    return True


@dataclasses.dataclass(frozen=True)
class Resources:
    """Where a sweep's runs go and what each one takes.

    ``address``: ``None`` starts a local Ray on ``num_cpus`` cores (default: all); ``"auto"`` or
    ``HOST:PORT`` joins that cluster. ``cpus_per_run`` / ``gpus_per_run``: reserved per run (the CPUs
    are also each run's torch threads, serial runs included; GPU fractions share one).
    ``max_retries``: Ray's retries of a run whose worker or node died.
    """

    address: str | None = None
    num_cpus: int | None = None
    cpus_per_run: float = 1
    gpus_per_run: float = 0
    max_retries: int = 2


def _run_on_ray(todo: list[dict], opts: dict, bar: dict, progress: bool, *, info: dict,
                resources: Resources) -> list[dict]:
    """One Ray task per run, all submitted at once; results reported as they finish."""
    from tqdm.auto import tqdm

    ray = _import_ray()
    started = _connect(ray, resources.address, resources.num_cpus, opts["env"])
    cpus_per_run, gpus_per_run = resources.cpus_per_run, resources.gpus_per_run
    try:
        info["cluster"] = {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU")}
        info["nodes"] = sum(1 for n in ray.nodes() if n.get("Alive"))
        have_cpu, have_gpu = info["cluster"].get("CPU", 0), info["cluster"].get("GPU", 0)
        if cpus_per_run > have_cpu or gpus_per_run > have_gpu:
            raise ConfigError(f"each run asks for {cpus_per_run} CPU and {gpus_per_run} GPU but the Ray "
                              f"cluster has {have_cpu} CPU and {have_gpu} GPU in all: lower "
                              f"--cpus-per-run/--gpus-per-run or add nodes")
        if info["nodes"] > 1 and not opts["env"]:
            _say("warning: a multi-node cluster without --data-root: each node writes to its own data/ "
                 "unless that folder is shared storage", progress)
        options: dict[str, Any] = {"num_cpus": cpus_per_run, "num_gpus": gpus_per_run,
                                   "max_retries": resources.max_retries}
        if gpus_per_run:
            options["max_calls"] = 1  # a fresh process per GPU run: no cached CUDA memory carried over
        task = ray.remote(run_shard).options(**options)
        pending = {task.remote(p, **opts): p for p in todo}
        runs = []
        with tqdm(**bar) as b:
            while pending:
                (ref,), _ = ray.wait(list(pending), num_returns=1)
                p = pending.pop(ref)
                try:
                    r = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - its worker or node died (after Ray's retries)
                    arm, seed = shard_label(p)
                    r = {"arm": arm, "seed": seed, "status": "failed", "wall_s": 0.0, "host": None,
                         "error": f"{type(e).__name__} (Ray)", "tail": _tail(str(e))}
                runs.append(r)
                _report(r, progress)
                b.update(1)
        return runs
    finally:
        if started:
            ray.shutdown()


def run_sweep(cfg: dict, *, resources: Resources = Resources(), serial: bool = False,
              fault: str | tuple | None = None, progress: bool = True,
              arms: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> SweepResult:
    """Run every shard of ``cfg`` (validated) and merge them; see the module docstring. ``arms`` /
    ``seeds``: only the shards of these (a long study's primary comparisons first, the rest later).

    Uses an already initialised Ray when there is one (a notebook, the tests); otherwise starts a
    local one or joins a cluster (:class:`Resources`), and shuts it down after.
    """
    t0 = time.perf_counter()
    load_start = os.getloadavg() if hasattr(os, "getloadavg") else ()
    mod = _experiment.runner(cfg["kind"])
    cfg = mod.validate_config(cfg)
    fault = parse_fault(fault) if isinstance(fault, str) or fault is None else fault
    fault = fault or parse_fault(os.environ.get("GE_FAULT"))
    folder = data_dir(cfg["scale"], cfg["experiment"])
    env = {k: os.environ[k] for k in ("GE_DATA_DIR", "GE_RUNS_DIR", ALLOW_DIRTY_ENV, CODE_STATE_ENV) if os.environ.get(k)}
    parts = _select_shards(mod.shards(cfg), cfg["experiment"], arms, seeds)
    _experiment.preflight(cfg, will_write=not all(shard_done(p) for p in parts))  # base, folder, clean tree
    runs, todo = _skip_done(parts, progress)
    info = {"backend": "serial" if serial else "ray", "cpus_per_run": resources.cpus_per_run,
            "gpus_per_run": resources.gpus_per_run, "data_root": recorded_root(data_root(), "GE_DATA_DIR"),
            "runs_root": recorded_root(runs_root(), "GE_RUNS_DIR")}

    if todo:
        opts = {"env": env, "threads": max(1, int(resources.cpus_per_run)), "fault": fault}
        bar = {"total": len(parts), "initial": len(parts) - len(todo), "unit": "run", "disable": not progress,
               "desc": f"sweep {cfg['experiment']} ({cfg['scale']})", "file": sys.stdout}
        if serial:
            runs += _run_serial(todo, opts, bar, progress)
        else:
            runs += _run_on_ray(todo, opts, bar, progress, info=info, resources=resources)

    rows, merge_error = None, ""
    failed = [r for r in runs if r["status"] == "failed"]
    if not failed:
        rows, merge_error = _merge_and_record(cfg, runs, info, t0, load_start, progress)
    wall = time.perf_counter() - t0
    n_ok = sum(r["status"] == "ok" for r in runs)
    n_skip = sum(r["status"] == "skipped" for r in runs)
    _say(f"sweep {cfg['experiment']} ({cfg['scale']}): {n_ok} ran, {n_skip} skipped, {len(failed)} failed "
         f"in {wall:.1f} s" + (f"; {len(rows)} rows merged from {folder}" if rows is not None else
                               "; not merged — re-launch the same command to finish" if failed else ""),
         progress)
    return SweepResult(runs=runs, rows=rows, folder=folder, wall_s=wall, merge_error=merge_error)


def _select_shards(parts: list[dict], experiment: str, arms: Sequence[str] | None,
                   seeds: Sequence[int] | None) -> list[dict]:
    """The shards of ``arms`` and ``seeds`` (``None``: all); an unknown arm, or a selection of none, is a
    :class:`ConfigError`."""
    if arms is None and seeds is None:
        return parts
    labels = [shard_label(p) for p in parts]
    unknown = sorted(set(arms or ()) - {a for a, _ in labels})
    if unknown:
        raise ConfigError(f"--arms: {unknown} are not arms of {experiment} ({sorted({a for a, _ in labels})})")
    parts = [p for p, (a, sd) in zip(parts, labels) if (arms is None or a in arms) and (seeds is None or sd in seeds)]
    if not parts:
        raise ConfigError("--arms/--seeds select no shard of this config")
    return parts


def _skip_done(parts: list[dict], progress: bool) -> tuple[list[dict], list[dict]]:
    """``(runs, todo)``: a ``skipped`` run (reported) for every shard already done, and the others."""
    runs: list[dict] = []
    todo = []
    for p in parts:
        if shard_done(p):
            runs.append({"arm": shard_label(p)[0], "seed": shard_label(p)[1], "status": "skipped",
                         "wall_s": 0.0, "error": "", "tail": "", "host": None})
            _report(runs[-1], progress)
        else:
            todo.append(p)
    return runs, todo


def _merge_and_record(cfg: dict, runs: list[dict], info: dict, t0: float, load_start: tuple[float, ...],
                      progress: bool) -> tuple[pd.DataFrame | None, str]:
    """Merge the shards of ``cfg`` and record the sweep (its wall time since ``t0``) in the manifest;
    returns ``(rows, "")``, or ``(None, the error)`` when that failed (named on stderr)."""
    folder = data_dir(cfg["scale"], cfg["experiment"])
    try:
        with contextlib.redirect_stderr(io.StringIO()) if not progress else contextlib.nullcontext():
            rows = merge(cfg)
        _record(folder, cfg, runs, {**info, "wall_s": round(time.perf_counter() - t0, 3)}, load_start)
    except Exception as e:  # noqa: BLE001
        merge_error = f"{type(e).__name__}: {e}"
        _say(f"FAIL merging the shards of {folder}: {merge_error}", progress, always=True)
        return None, merge_error
    return rows, ""


# ----------------------------------------------------------------------------- CLI


def parse_seeds(spec: str | None) -> list[int] | None:
    """``"0-15"`` → 0..15, ``"1,3"`` → [1, 3], None → None (every seed)."""
    if spec is None:
        return None
    try:
        if "-" in spec:
            lo, hi = (int(x) for x in spec.split("-"))
            return list(range(lo, hi + 1))
        return [int(x) for x in spec.split(",")]
    except ValueError:
        raise ConfigError(f"--seeds {spec!r}: expected comma-separated integers or a range such as 0-15") from None


def _gather(cfg, root: Path) -> int:
    """``--gather-from ROOT``: the runner's ``gather`` from ``ROOT/<scale>/<experiment>``."""
    mod = _experiment.runner(cfg["kind"])
    if not hasattr(mod, "gather"):
        raise ConfigError(f"--gather-from: the {cfg['kind']} runner writes no shards to gather; run its config here")
    copied = mod.gather(cfg, root / cfg["scale"] / cfg["experiment"])
    print(f"{len(copied)} finished shards into {data_dir(cfg['scale'], cfg['experiment'])}: {', '.join(copied)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m lib.sweep``: user errors -> one line on stderr and exit status 2."""
    return cli_main(_main, argv)


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lib.sweep", description=__doc__.splitlines()[0])
    ap.add_argument("config", help="configs/<experiment>/<scale>.yaml")
    ap.add_argument("--ray-address", default=None,
                    help="join a running cluster: 'auto' or HOST:PORT (default: start a local Ray)")
    ap.add_argument("--num-cpus", type=int, default=None, help="cores of the local Ray (default: all)")
    ap.add_argument("--cpus-per-run", type=float, default=1, help="CPUs reserved per run (torch threads too)")
    ap.add_argument("--gpus-per-run", type=float, default=0, help="GPUs reserved per run (fractions share one)")
    ap.add_argument("--data-root", default=None, help="GE_DATA_DIR for driver and workers (shared storage)")
    ap.add_argument("--runs-root", default=None, help="GE_RUNS_DIR (adapters, checkpoints, logs) likewise")
    ap.add_argument("--max-retries", type=int, default=2, help="Ray retries of a run whose worker/node died")
    ap.add_argument("--serial", action="store_true", help="no Ray: run the shards one by one here")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--arms", default=None, help="only these arms, comma-separated (the others later)")
    ap.add_argument("--seeds", default=None, help="only these seeds: comma-separated, or a range 0-15")
    ap.add_argument("--fault", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--gather-from", default=None, metavar="ROOT",
                    help="run nothing: copy the finished shards of a sweep run with --data-root ROOT into this "
                         "repository's data folder (replacing the same shards; the manifest keeps every commit)")
    _experiment.add_allow_dirty(ap)
    args = ap.parse_args(argv)
    _experiment.apply_allow_dirty(args)
    for opt, var in ((args.data_root, "GE_DATA_DIR"), (args.runs_root, "GE_RUNS_DIR")):
        if opt:
            os.environ[var] = str(Path(opt).expanduser().resolve())
    cfg = _experiment.load(args.config)
    if args.gather_from:
        return _gather(cfg, Path(args.gather_from).expanduser().resolve())
    if args.cpus_per_run <= 0 or args.gpus_per_run < 0:
        raise ConfigError("--cpus-per-run must be > 0 and --gpus-per-run >= 0")
    parse_fault(args.fault)
    if not args.serial:
        _import_ray()
    resources = Resources(address=args.ray_address, num_cpus=args.num_cpus, cpus_per_run=args.cpus_per_run,
                          gpus_per_run=args.gpus_per_run, max_retries=args.max_retries)
    with pinned_code_state():  # the manifests record the code the sweep imported, not the tree when rows land
        res = run_sweep(cfg, resources=resources, serial=args.serial, fault=args.fault, progress=not args.quiet,
                        arms=args.arms.split(",") if args.arms else None, seeds=parse_seeds(args.seeds))
    return res.exit_code


if __name__ == "__main__":
    sys.exit(main())
