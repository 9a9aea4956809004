"""Check that the data a figure is drawn from came from the committed configs, and index the figures.

:func:`manifest_table` compares, for every experiment of a scale, the ``manifest.json`` of its data
folder with ``configs/<experiment>/<scale>.yaml`` (both validated, so defaults count the same);
:func:`write_index` turns ``figures/<scale>/index.json`` (written by :func:`lib.style.save_figure`)
into ``figures/<scale>/INDEX.md``, where the data of a panel is listed as glob patterns with counts
(``data/cpu/tool_mutation/sgd_s*.csv`` (16 files)) and only files and manifests that exist are named;
:func:`check_index` verifies that every figure file, data file and manifest the index names exists
and that each manifest's git commit is an ancestor of ``HEAD`` (``git merge-base --is-ancestor``).
"""
from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd

from lib.core.config import config_hash
from lib.core.errors import DamagedFileError, one_line
from lib.core.figure_index import read_index
from lib.core.manifest import read_manifest
from lib.core.paths import REPO_ROOT, config_path, data_dir, figures_dir, rel
from lib.core.rows import damaged_shards, sha256_of
from lib.experiment import load, runner
from lib import panels  # the experiments whose figures are drawn (their data is what is checked) and their commands


def manifest_table(scale: str, experiments=None) -> pd.DataFrame:
    """One row per experiment (``experiments``; default every one whose figures are drawn, :data:`lib.panels.EXPERIMENTS`):
    does its data's manifest hold the config in ``configs/`` for ``scale``?"""
    rows = []
    for exp in panels.EXPERIMENTS if experiments is None else experiments:
        cpath = config_path(exp, scale)
        folder = data_dir(scale, exp)
        row = {"experiment": exp, "config": rel(cpath), "data": rel(folder)}
        try:
            m = read_manifest(folder)
        except DamagedFileError as e:
            rows.append({**row, "agrees": False, "note": f"damaged: {one_line(e)}"})
            continue
        if not cpath.is_file():
            rows.append({**row, "agrees": False, "note": "no config file"})
            continue
        cfg = load(cpath)  # its overlays resolved, validated
        mod = runner(cfg["kind"])
        # a runner whose shards share one folder hashes the config without its arms/seeds
        want = config_hash(getattr(mod, "manifest_config", lambda c: c)(cfg))
        if m is None:
            rows.append({**row, "agrees": False, "note": "no manifest.json (run the experiment)"})
            continue
        ok = m.get("config_hash") == want
        damaged = damaged_shards(folder)  # the rows are checked too, not only their manifest
        rows.append({**row, "agrees": ok and m.get("status") == "complete" and not damaged,
                     "note": ("" if ok else "manifest config differs from configs/") +
                             ("" if m.get("status") == "complete" else f" status={m.get('status')}") +
                             (f" damaged: {damaged[0]}" + (f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else "")
                              if damaged else ""),
                     "commit": (m.get("git", {}).get("commit") or "")[:10],
                     "dirty": m.get("git", {}).get("dirty"), "device": m.get("device"),
                     "wall_s": m.get("wall_s"), "seeds": m.get("seeds")})
    return pd.DataFrame(rows)


def existing(paths) -> list[str]:
    """The repository-relative ``paths`` that exist (files or folders)."""
    return [p for p in paths if (REPO_ROOT / p).exists()]


def data_patterns(paths) -> list[tuple[str, int]]:
    """Existing data files grouped as ``(glob pattern, count)``: digit runs in a file name become ``*``
    (``sgd_s0.csv``, ``sgd_s1.csv`` -> ``sgd_s*.csv``, 2); a group of one file keeps its own name."""
    files = existing(paths)
    pattern = lambda p: str(Path(p).parent / re.sub(r"\d+", "*", Path(p).name))  # noqa: E731
    groups = Counter(pattern(p) for p in files)
    out = []
    for p in files:
        key = pattern(p)
        item = (key, groups[key]) if groups[key] > 1 else (p, 1)
        if item not in out:
            out.append(item)
    return out


def manifests_of(paths) -> list[str]:
    """The ``manifest.json`` of each existing data path: in its folder or the nearest folder above it
    (below the repository root); only manifests that exist."""
    out = []
    for p in existing(paths):
        for folder in (REPO_ROOT / p).parents:
            if folder == REPO_ROOT or REPO_ROOT not in folder.parents:
                break
            if (folder / "manifest.json").is_file():
                m = rel(folder / "manifest.json")
                if m not in out:
                    out.append(m)
                break
    return sorted(out)


def commit_status(commit: str | None) -> str:
    """``ancestor`` when ``commit`` is in ``HEAD``'s history, ``not an ancestor`` when the repository
    knows it but ``HEAD`` does not descend from it, else ``not verified`` (unknown here, e.g. a
    shallow clone, or no git)."""
    if not commit or not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        return "not verified"
    try:
        known = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO_ROOT,
                               capture_output=True, timeout=10).returncode == 0
        if not known:
            return "not verified"
        rc = subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=REPO_ROOT,
                            capture_output=True, timeout=10).returncode
    except (OSError, subprocess.SubprocessError):
        return "not verified"
    return {0: "ancestor", 1: "not an ancestor"}.get(rc, "not verified")


def check_index(scale: str) -> pd.DataFrame:
    """Every file the index of ``scale`` names, one row each: ``kind`` (figure | data | manifest),
    ``path``, ``exists``; manifests add ``commit``, ``dirty`` and ``commit_status`` (:func:`commit_status`)."""
    idx = read_index(scale)
    rows, seen = [], set()
    for e in idx.values():
        data = e.get("data") or []
        for kind, paths in (("figure", e["files"]), ("data", data), ("manifest", manifests_of(data))):
            for p in paths:
                if (kind, p) in seen:
                    continue
                seen.add((kind, p))
                row = {"kind": kind, "path": p, "exists": (REPO_ROOT / p).exists()}
                if kind == "manifest":
                    try:
                        g = (read_manifest((REPO_ROOT / p).parent) or {}).get("git") or {}
                        status = commit_status(g.get("commit"))
                    except DamagedFileError:
                        g, status = {}, "damaged manifest"
                    row |= {"commit": (g.get("commit") or "")[:10], "dirty": g.get("dirty"), "commit_status": status}
                rows.append(row)
    return pd.DataFrame(rows, columns=["kind", "path", "exists", "commit", "dirty", "commit_status"])


def stale_figures(scale: str) -> pd.DataFrame:
    """Every figure of the index of ``scale`` drawn from data that has changed since: one row per
    (figure, data file) whose SHA-256 now differs from the one recorded when the figure was drawn, or
    whose file is gone (``state``: changed | missing). Figures drawn before hashes were recorded
    (no ``data_sha256``) are listed once with ``state`` unknown."""
    out = []
    for name, e in read_index(scale).items():
        recorded = e.get("data_sha256")
        if recorded is None:
            out.append({"figure": name, "data": "", "state": "unknown (drawn before data hashes were recorded)"})
            continue
        for path, sha in recorded.items():
            f = Path(path) if Path(path).is_absolute() else REPO_ROOT / path
            if not f.is_file():
                out.append({"figure": name, "data": path, "state": "missing"})
            elif sha256_of(f) != sha:
                out.append({"figure": name, "data": path, "state": "changed"})
    return pd.DataFrame(out, columns=["figure", "data", "state"])


def _href(path: str, here: Path) -> str:
    """``path`` (relative to the repository, or absolute) as a link target relative to the folder ``here``."""
    target = Path(path) if Path(path).is_absolute() else REPO_ROOT / path
    return Path(os.path.relpath(target, here)).as_posix()


def _link(path: str, here: Path, label: str | None = None) -> str:
    """A Markdown link to ``path`` from the folder ``here``, labelled with the path in code font (or ``label``)."""
    return f"[{label or f'`{path}`'}]({_href(path, here)})"


def _configs(entry: dict) -> list[str]:
    c = entry.get("config")
    return [c] if isinstance(c, str) else list(c or [])


def write_index(scale: str) -> Path:
    """Write ``figures/<scale>/INDEX.md`` listing every saved figure and SI panel: a thumbnail linking
    to the PNG, the PDF and PNG, the data (glob patterns with counts, linked to their folder), every
    config and manifest behind the panel and its notebook, each a link that works from the folder of
    ``INDEX.md``, and the command that redraws it (:func:`lib.panels.command`)."""
    idx = read_index(scale)
    here = figures_dir(scale)
    main = sorted(k for k in idx if k.startswith("fig"))
    si = sorted(k for k in idx if not k.startswith("fig"))
    lines = [f"# Figures at the `{scale}` scale", "",
             "Every main-figure panel and SI panel, what it shows, and where it comes from; every path is a link "
             "relative to this folder. Regenerate with `make reproduce SCALE=" + scale + "` (notebook 05 rebuilds "
             "all from `data/" + scale + "/`), or one panel in seconds from the committed data with the command in "
             "its row's last column.", ""]
    pages = sorted((here / "notebooks").glob("*.html"))
    if pages:  # static pages of the executed notebooks (lib.reproduce renders them)
        lines += ["## Executed notebooks", "",
                  f"The notebooks as executed at the `{scale}` scale, as static pages (no Jupyter needed): "
                  + ", ".join(f"[{p.stem}](notebooks/{p.name})" for p in pages) + ".", ""]
    for title, names in (("Main figures", main), ("SI panels", si)):
        lines += [f"## {title}", "", "| panel | shows | files | data | config | manifest | notebook | redraw |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for n in names:
            e = idx[n]
            data = e.get("data") or []
            png = next((f for f in e["files"] if f.endswith(".png")), None)
            thumb = ""
            if png:
                href = _href(png, here)
                thumb = f'<a href="{href}"><img src="{href}" width="180" alt="{n}"></a><br>'
            files = thumb + ", ".join(_link(f, here) for f in e["files"])
            shown = ", ".join(_link(str(Path(p).parent) if k > 1 else p, here,
                                    f"`{p}`" + (f" ({k} files)" if k > 1 else ""))
                              for p, k in data_patterns(data))
            configs = ", ".join(_link(c, here) for c in _configs(e)) or "—"
            manifests = ", ".join(_link(m, here) for m in manifests_of(data)) or "—"
            nb = e.get("notebook")
            page = here / "notebooks" / f"{Path(nb).stem}.html" if nb else None
            notebook = ("—" if not nb else f"[`{nb}`](notebooks/{page.name})" if page.is_file()
                        else _link(f"notebooks/{nb}", here, f"`{nb}`"))
            lines.append(f"| `{n}` | {e['caption']} | {files} | {shown} | {configs} | {manifests} | {notebook} "
                         f"| `{panels.command(n, scale)}` |")
        lines.append("")
    out = here / "INDEX.md"
    out.write_text("\n".join(lines))
    return out


def stale_panels(scale: str) -> list[Path]:
    """The figure files (PNG, PDF) in ``figures/<scale>/`` that no panel of the index names: drawings of
    panels renamed or removed since (notebook 05 redraws every panel, not what was there before)."""
    here = figures_dir(scale)
    named = {Path(f).name for e in read_index(scale).values() for f in e["files"]}
    return sorted(p for ext in ("png", "pdf") for p in here.glob(f"*.{ext}") if p.name not in named)


def prune_panels(scale: str) -> list[Path]:
    """Delete :func:`stale_panels` (after notebook 05 has redrawn the whole index); returns what it deleted."""
    gone = stale_panels(scale)
    for p in gone:
        p.unlink()
    return gone


def reset_index(scale: str) -> None:
    """Forget the recorded panels of ``scale`` (notebook 05 redraws them all, so the index lists exactly those)."""
    p = figures_dir(scale) / "index.json"
    p.unlink(missing_ok=True)


def index_entries(scale: str) -> dict:
    """Panel name -> entry, as recorded in ``figures/<scale>/index.json``."""
    return read_index(scale)
