"""One style and one ``save_figure`` for every figure and SI panel.

Colours are fixed per arm / method (seaborn's colour-blind palette) so that ``full`` is the same
colour in every figure. Each saved panel is recorded in ``figures/<scale>/index.json`` with its
caption, data file and config; notebook 05 turns that into ``figures/<scale>/INDEX.md``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg") if not matplotlib.get_backend().lower().startswith(("module://", "nbagg", "widget", "ipympl")) else None
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from .paths import REPO_ROOT, figures_dir  # noqa: E402

_CB = sns.color_palette("colorblind", 10)
# One colour per arm or method, everywhere. Unknown names get a stable colour from the rest.
COLOURS = {
    # society arms
    "full": _CB[0], "no_grounding": _CB[1], "no_sex": _CB[2], "no_diversity": _CB[3], "sex_linear": _CB[4],
    # tool mutation arms
    "sgd": _CB[7], "mutate_promote": _CB[0], "random_promote": _CB[1],
    # program search methods
    "corrected": _CB[0], "generic_first_jet": _CB[2], "full_jacobian": _CB[9], "gate_blind": _CB[3],
    "random_order": _CB[4], "no_feedback": _CB[1], "frozen_proposer": _CB[7], "direct_tournament": _CB[8],
    # operators
    "qd": _CB[0], "top_p": _CB[3],
}


def colour(name: str):
    """The fixed colour of an arm or method."""
    if name in COLOURS:
        return COLOURS[name]
    return _CB[sum(map(ord, name)) % len(_CB)]


def palette(names: Iterable[str]) -> dict:
    return {n: colour(n) for n in names}


def use_style() -> None:
    """The shared look: white grid, paper context, small fonts, no top/right spines."""
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight",
        "axes.spines.top": False, "axes.spines.right": False,
        "legend.frameon": False, "pdf.fonttype": 42,
    })


def rel(p) -> str:
    """``p`` relative to the repository when it lies inside it, else as given."""
    p = Path(p)
    try:
        return str(p.resolve().relative_to(REPO_ROOT)) if p.is_absolute() else str(p)
    except ValueError:
        return str(p)


def _index_path(scale: str) -> Path:
    return figures_dir(scale) / "index.json"


def read_index(scale: str) -> dict:
    p = _index_path(scale)
    return json.loads(p.read_text()) if p.is_file() else {}


def save_figure(fig, name: str, *, scale: str, caption: str, data: str | Iterable[str] = (),
                config: str | None = None, notebook: str | None = None) -> list[Path]:
    """Save ``fig`` as ``figures/<scale>/<name>.pdf`` and ``.png`` and record it in the index.

    Args:
        name: stable file name, e.g. ``"fig3a_society_test_acc"`` or ``"S2c_program_budget"``.
        caption: one line on what the panel shows.
        data: the data file(s) it was drawn from (paths relative to the repository).
        config: the config file of the run behind the data.
        notebook: the notebook that draws it.
    """
    out = figures_dir(scale)
    paths = [out / f"{name}.pdf", out / f"{name}.png"]
    for p in paths:
        # Fixed metadata keeps the files byte-stable across re-runs.
        meta = {"CreationDate": None} if p.suffix == ".pdf" else {"Software": None}
        fig.savefig(p, metadata=meta)
    data = [data] if isinstance(data, str) else list(data)
    idx = read_index(scale)
    idx[name] = {"caption": caption, "files": [rel(p) for p in paths], "data": [rel(d) for d in data],
                 "config": rel(config) if config else None, "notebook": notebook}
    _index_path(scale).write_text(json.dumps(idx, indent=2, sort_keys=True) + "\n")
    return paths


def publish(fig, name: str, **kwargs) -> None:
    """:func:`save_figure`, then show the figure once in a notebook and close it (no stray repr)."""
    save_figure(fig, name, **kwargs)
    try:
        from IPython.display import display
        from IPython import get_ipython
        if get_ipython() is not None:
            display(fig)
    except ImportError:
        pass
    plt.close(fig)


def show_saved(names: Iterable[str], scale: str, width: int = 420) -> None:
    """Display the PNGs of saved panels in a notebook (no-op outside IPython)."""
    try:
        from IPython import get_ipython
        from IPython.display import Image, Markdown, display
    except ImportError:
        return
    if get_ipython() is None:
        return
    idx = read_index(scale)
    for n in names:
        display(Markdown(f"**{n}** — {idx.get(n, {}).get('caption', '')}"))
        display(Image(filename=str(figures_dir(scale) / f"{n}.png"), width=width))
