"""Do two commits give the same rows and figures? The check behind a refactor that must change no result.

    python benchmarks/same_rows.py rows BEFORE [AFTER]      # AFTER: default the working tree
    python benchmarks/same_rows.py figures [--scale cpu]     # the committed PNGs against a re-render here
    python benchmarks/same_rows.py shards CONFIG ARM:SEED ... [--scratch DIR]   # committed shards re-run here

``rows``: each commit is checked out in a scratch worktree (the working tree is used as it is for AFTER = ``.``)
and every smoke config there (``configs/*/smoke.yaml``) is run with ``python -m lib.experiment`` into a scratch
data root (``GE_DATA_DIR``; adapters under ``GE_RUNS_DIR``), one after the other on this machine. Then the
SHA-256 of every result file (rows: ``*.csv``, ``*.json`` and lineage files; not manifests, progress files or
sweep ledgers, which hold wall-clock times, and not a file's wall-clock columns or keys: :func:`canonical`) is
compared folder by folder. A folder that exists at one commit
only is named. Exit status 1 when any shared file differs.

``figures``: every panel of every experiment is drawn from the committed data at ``--scale`` into a scratch
figures root (``GE_FIGURES_DIR``) and each PNG's pixels are compared with the committed one (PNG bytes carry
metadata; pixels are what a reader sees). Prints same / differs (with the share of pixels that differ) /
new / gone, per panel.

``shards``: the named (arm, seed) shards of a committed data folder (a folder filled over several commits) are
run again from this working tree with ``python -m lib.sweep`` into a scratch data root (``--scratch``: kept, so a
second call resumes or re-reads it) and each CSV's SHA-256 is compared with the committed file's; each line
names the commit the committed shard recorded and the float paths of both (bits are compared on one float path
only). Exit status 1 when any differs.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKIP = ("manifest.json", ".progress.json", "sweeps.jsonl")  # wall-clock times, commits: not results


def _env(tree: Path, scratch: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree), "GE_DATA_DIR": str(scratch / "data"),
            "GE_RUNS_DIR": str(scratch / "runs"), "GE_ALLOW_DIRTY": "1", "MPLBACKEND": "Agg",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def checkout(commit: str, scratch: Path) -> Path:
    """The tree of ``commit`` (``.``: the working tree as it is)."""
    if commit == ".":
        return REPO
    tree = scratch / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", "-f", str(tree), commit], cwd=REPO, check=True,
                   capture_output=True)
    return tree


def regenerate(tree: Path, scratch: Path) -> Path:
    """Run every smoke config of ``tree`` into ``scratch/data``; returns ``scratch/data/smoke``."""
    for cfg in sorted(tree.glob("configs/*/smoke.yaml")):
        print(f"  {cfg.relative_to(tree)}", flush=True)
        subprocess.run([sys.executable, "-m", "lib.experiment", str(cfg)], cwd=tree, env=_env(tree, scratch),
                       check=True, capture_output=True)
    return scratch / "data" / "smoke"


CLOCK = ("seconds", "wall_s")  # a column or key naming one of these holds a wall-clock time: not a result


def _without_clocks(x):
    """``x`` (parsed JSON) without the keys that hold wall-clock times, at any depth."""
    if isinstance(x, dict):
        return {k: _without_clocks(v) for k, v in x.items() if not any(c in k for c in CLOCK)}
    return [_without_clocks(v) for v in x] if isinstance(x, list) else x


def canonical(p: Path) -> bytes:
    """The result a file holds: a CSV without its wall-clock columns, a JSON without its wall-clock keys (the
    program search's cost files time each method), any other file as it is."""
    if p.suffix == ".csv":
        rows = list(csv.reader(io.StringIO(p.read_text())))
        keep = [i for i, h in enumerate(rows[0] if rows else []) if not any(c in h for c in CLOCK)]
        return "\n".join(",".join(r[i] for i in keep if i < len(r)) for r in rows).encode()
    if p.suffix == ".json":
        return json.dumps(_without_clocks(json.loads(p.read_text())), sort_keys=True).encode()
    return p.read_bytes()


def digests(root: Path) -> dict[str, str]:
    """``{folder/file: SHA-256}`` of every result file under ``root`` (:func:`canonical`)."""
    return {str(p.relative_to(root)): hashlib.sha256(canonical(p)).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(SKIP)}


def compare_rows(a: dict[str, str], b: dict[str, str]) -> int:
    """Print the comparison folder by folder; the number of shared files that differ."""
    folders = sorted({k.split("/", 1)[0] for k in a} | {k.split("/", 1)[0] for k in b})
    bad = 0
    for f in folders:
        fa = {k for k in a if k.startswith(f + "/")}
        fb = {k for k in b if k.startswith(f + "/")}
        same = sum(a[k] == b[k] for k in fa & fb)
        differ = sorted(k for k in fa & fb if a[k] != b[k])
        bad += len(differ)
        print(f"{f}: {same} of {len(fa & fb)} shared files identical; only before {len(fa - fb)}, "
              f"only after {len(fb - fa)}" + (f"; DIFFER: {differ}" if differ else ""))
    return bad


def rows(before: str, after: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = {}
        for name, commit in (("before", before), ("after", after)):
            scratch = Path(tmp) / name
            print(f"{name} ({commit}):", flush=True)
            tree = checkout(commit, scratch)
            try:
                out[name] = digests(regenerate(tree, scratch))
            finally:
                if tree != REPO:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)
        bad = compare_rows(out["before"], out["after"])
    print(f"{'all shared result files identical' if not bad else f'{bad} files differ'}")
    return 1 if bad else 0


def figures(scale: str) -> int:
    """Draw every panel at ``scale`` into a scratch root and compare pixels with the committed PNGs."""
    import numpy as np
    from matplotlib.image import imread
    with tempfile.TemporaryDirectory() as tmp:
        env = {**_env(REPO, Path(tmp)), "GE_DATA_DIR": str(REPO / "data"), "GE_FIGURES_DIR": tmp}
        code = ("import sys; from lib import figures as f\n"
                "for e in f.EXPERIMENTS: f.module(e).draw_all(sys.argv[1])")
        subprocess.run([sys.executable, "-c", code, scale], cwd=REPO, env=env, check=True)
        new = {p.name: p for p in (Path(tmp) / scale).glob("*.png")}
        old = {p.name: p for p in (REPO / "figures" / scale).glob("*.png")}
        changed = 0
        for name in sorted(set(new) | set(old)):
            if name not in old or name not in new:
                print(f"{name}: {'new' if name in new else 'gone'}")
                changed += 1
                continue
            x, y = imread(old[name]), imread(new[name])
            if x.shape != y.shape:
                print(f"{name}: differs (size {x.shape[1]}x{x.shape[0]} -> {y.shape[1]}x{y.shape[0]})")
                changed += 1
            elif not np.array_equal(x, y):
                share = float(np.mean(np.any(x != y, axis=-1)))
                print(f"{name}: differs ({share:.2%} of pixels)")
                changed += 1
            else:
                print(f"{name}: same")
    print(f"{len(set(new) | set(old)) - changed} panels identical, {changed} differ, are new or gone")
    return 1 if changed else 0


def shards(config: str, runs: list[str], scratch: str | None) -> int:
    """Re-run ``runs`` (``arm:seed``) of ``config`` here into ``scratch`` and compare each CSV with the committed one."""
    from lib import experiment
    from lib.core.paths import data_dir
    cfg = experiment.load(config)
    root = Path(scratch or tempfile.mkdtemp(prefix="same_shards_"))
    committed = data_dir(cfg.scale, cfg.experiment)
    pairs = [r.rsplit(":", 1) for r in runs]
    for arm, seed in pairs:
        print(f"  running {arm} seed {seed} into {root}", flush=True)
        subprocess.run([sys.executable, "-m", "lib.sweep", config, "--serial", "--cpus-per-run", "1", "--quiet",
                        "--arms", arm, "--seeds", seed], cwd=REPO, env=_env(REPO, root), check=True)
    fresh = root / "data" / cfg.scale / cfg.experiment
    bad = 0
    for arm, seed in pairs:
        name = f"{arm}_s{seed}"
        old, new = (json.loads((d / f"{name}.progress.json").read_text()) for d in (committed, fresh))
        same = (committed / f"{name}.csv").read_bytes() == (fresh / f"{name}.csv").read_bytes()
        bad += not same
        paths = " vs ".join(str((p.get("float_path") or {}).get("torch_cpu_capability", "?")) for p in (old, new))
        print(f"{name}: {'identical' if same else 'DIFFERS'} ({old['csv_rows']} rows; committed at "
              f"{str(old.get('commit') or '')[:7] or 'an unrecorded commit'}, re-run at {str(new.get('commit'))[:7]}; "
              f"float path {paths})")
    print(f"{len(pairs) - bad} of {len(pairs)} shards identical")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("rows", help="regenerate every smoke folder at two commits and compare")
    r.add_argument("before")
    r.add_argument("after", nargs="?", default=".")
    f = sub.add_parser("figures", help="re-draw every panel from the committed data and compare pixels")
    f.add_argument("--scale", default="cpu")
    h = sub.add_parser("shards", help="re-run committed shards of a data folder here and compare their rows")
    h.add_argument("config")
    h.add_argument("runs", nargs="+", metavar="ARM:SEED")
    h.add_argument("--scratch", default=None, help="scratch root (kept; a second call resumes it)")
    args = ap.parse_args(argv)
    if args.what == "shards":
        return shards(args.config, args.runs, args.scratch)
    return rows(args.before, args.after) if args.what == "rows" else figures(args.scale)


if __name__ == "__main__":
    sys.exit(main())
