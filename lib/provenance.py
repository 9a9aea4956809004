"""Check that the data a figure is drawn from came from the committed configs, and index the figures.

:func:`manifest_table` compares, for every experiment of a scale, the ``manifest.json`` of its data
folder with ``configs/<experiment>/<scale>.yaml`` (both validated, so defaults count the same);
:func:`write_index` turns ``figures/<scale>/index.json`` (written by :func:`lib.figures.save_figure`)
into ``figures/<scale>/INDEX.md``.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .config import config_hash, load_yaml
from .experiment import runner
from .figures import read_index, rel
from .manifest import read_manifest
from .paths import REPO_ROOT, config_path, data_dir, figures_dir

EXPERIMENTS = ("operators", "tool_mutation", "society", "program_search")


def manifest_table(scale: str, experiments=EXPERIMENTS) -> pd.DataFrame:
    """One row per experiment: does its data's manifest hold the config in ``configs/`` for ``scale``?"""
    rows = []
    for exp in experiments:
        cpath = config_path(exp, scale)
        folder = data_dir(scale, exp)
        m = read_manifest(folder)
        row = {"experiment": exp, "config": rel(cpath), "data": rel(folder)}
        if not cpath.is_file():
            rows.append({**row, "agrees": False, "note": "no config file"})
            continue
        raw = load_yaml(cpath)
        mod = runner(raw["kind"])
        cfg = mod.validate_config(raw)
        # a runner whose shards share one folder hashes the config without its arms/seeds
        want = config_hash(getattr(mod, "manifest_config", lambda c: c)(cfg))
        if m is None:
            rows.append({**row, "agrees": False, "note": "no manifest.json (run the experiment)"})
            continue
        ok = m.get("config_hash") == want
        rows.append({**row, "agrees": ok and m.get("status") == "complete",
                     "note": ("" if ok else "manifest config differs from configs/") +
                             ("" if m.get("status") == "complete" else f" status={m.get('status')}"),
                     "commit": (m.get("git", {}).get("commit") or "")[:10],
                     "dirty": m.get("git", {}).get("dirty"), "device": m.get("device"),
                     "wall_s": m.get("wall_s"), "seeds": m.get("seeds")})
    return pd.DataFrame(rows)


def write_index(scale: str) -> Path:
    """Write ``figures/<scale>/INDEX.md`` listing every saved figure and SI panel."""
    idx = read_index(scale)
    main = sorted(k for k in idx if k.startswith("fig"))
    si = sorted(k for k in idx if not k.startswith("fig"))
    lines = [f"# Figures at the `{scale}` scale", "",
             "Every main-figure panel and SI panel, what it shows, and where it comes from. "
             "Regenerate with `make reproduce SCALE=" + scale + "` (notebook 05 rebuilds all from `data/" + scale + "/`).", ""]
    for title, names in (("Main figures", main), ("SI panels", si)):
        lines += [f"## {title}", "", "| panel | shows | files | data | config | manifest | notebook |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for n in names:
            e = idx[n]
            data = e.get("data") or []
            manifests = sorted({str(Path(d).parent / "manifest.json") for d in data})
            lines.append(f"| `{n}` | {e['caption']} | {', '.join(f'`{f}`' for f in e['files'])} | "
                         f"{', '.join(f'`{d}`' for d in data)} | `{e.get('config')}` | "
                         f"{', '.join(f'`{m}`' for m in manifests)} | `{e.get('notebook')}` |")
        lines.append("")
    out = figures_dir(scale) / "INDEX.md"
    out.write_text("\n".join(lines))
    return out


def reset_index(scale: str) -> None:
    """Forget the recorded panels of ``scale`` (notebook 05 redraws them all, so the index lists exactly those)."""
    p = figures_dir(scale) / "index.json"
    p.unlink(missing_ok=True)


def index_entries(scale: str) -> dict:
    """Panel name -> entry, as recorded in ``figures/<scale>/index.json``."""
    return read_index(scale)
