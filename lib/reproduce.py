"""Re-execute every numbered notebook with papermill: ``python -m lib.reproduce --scale S``.

Each notebook runs in its own papermill subprocess (``-k python3``), parameterised by
``configs/<experiment>/<scale>.yaml`` resolved — its overlays (``extends``) merged, validated, every key
written out — in ``build/<scale>/params/<experiment>.yaml`` (``-f``, :func:`params_file`), into
``build/<scale>/`` — the source notebooks stay clean. A notebook's data that already exists for that scale and matches its config is reused;
``--force`` first moves that data aside (to ``build/<scale>/previous/``, nothing is deleted) so it is
recomputed. The ``paper`` scale needs CUDA for the society: on a machine without it the runner says
so up front, skips notebook 03 and rebuilds everything else.

At the ``cpu`` and ``paper`` scales each executed notebook is also rendered to a static page that
stands alone offline (:mod:`lib.pages`: images embedded, no script from the network)
``figures/<scale>/notebooks/<notebook>.html``, linked from ``figures/<scale>/INDEX.md`` (at ``smoke``
the committed notebooks are the executed ones); a page that misses a figure of its notebook, or would
fetch anything, is named on stderr and counts as a failure. ``--html-only`` renders the executed
notebooks already in ``build/<scale>/`` without running anything.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from lib import experiment, pages
from lib.core.config import thaw
from lib.core.device import cuda_available
from lib.core.errors import MissingDataError, UserError, cli_main
from lib.core.paths import BUILD, REPO_ROOT, check_scale, config_path, data_dir, figures_dir, rel
from lib.provenance import prune_panels, write_index
from lib.tables import registry as tables

NOTEBOOKS = REPO_ROOT / "notebooks"


@dataclass(frozen=True)
class Step:
    notebook: str
    experiment: str | None  # its config is configs/<experiment>/<scale>.yaml; None: only `scale`
    needs_cuda_at: tuple[str, ...] = ()


FIGURES_NOTEBOOK = "05_figures.ipynb"  # draws every panel of a scale (its index is reset first)
STEPS = (
    Step("01_operators.ipynb", "operators"),
    Step("02_tool_mutation.ipynb", "tool_mutation"),
    Step("03_society_arms.ipynb", "society", needs_cuda_at=("paper",)),
    Step("04_program_search.ipynb", "program_search"),
    Step(FIGURES_NOTEBOOK, None),
)


def failed_cell(executed: Path) -> str:
    """Describe the first cell of an executed notebook that raised, or ``""``."""
    try:
        nb = json.loads(executed.read_text())
    except (OSError, json.JSONDecodeError):
        return ""
    code_idx = 0
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        code_idx += 1
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                src = "".join(cell.get("source", "")).strip().splitlines()
                first = src[0] if src else ""
                return f"code cell {code_idx} (`{first[:70]}`): {out.get('ename')}: {out.get('evalue')}"
    return ""


def params_file(name: str, scale: str) -> Path:
    """Write papermill's parameter file for experiment ``name`` at ``scale``: its config
    (``configs/<name>/<scale>.yaml``) resolved — overlays merged, validated, every key — as flat YAML in
    ``build/<scale>/params/<name>.yaml``; returns the path. A notebook is never given an overlay file."""
    cfg = thaw(experiment.load(config_path(name, scale)))
    out = BUILD / scale / "params" / f"{name}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# {config_path(name, scale).relative_to(REPO_ROOT)} resolved by lib.reproduce (do not edit)\n"
                   + yaml.safe_dump(cfg, sort_keys=False))
    return out


def papermill_command(step: Step, scale: str, out: Path, skip: list[str]) -> list[str]:
    """The papermill command that executes ``step``'s notebook at ``scale`` into ``out`` (writing its
    parameter file, :func:`params_file`)."""
    cmd = [sys.executable, "-m", "papermill", str(NOTEBOOKS / step.notebook), str(out),
           "-k", "python3", "--cwd", str(NOTEBOOKS), "--no-progress-bar"]
    if step.experiment is not None:
        cmd += ["-f", str(params_file(step.experiment, scale))]
    else:
        cmd += ["-p", "scale", scale]
        if skip:
            cmd += ["-y", json.dumps({"skip_experiments": skip})]
    return cmd


HTML_SCALES = ("cpu", "paper")  # smoke: the committed notebooks are already executed at smoke


def html_dir(scale: str) -> Path:
    """Where the static pages of the executed notebooks of ``scale`` go: ``figures/<scale>/notebooks/``."""
    return figures_dir(scale) / "notebooks"


def render_html(executed: Path, scale: str) -> Path:
    """Render an executed notebook to ``figures/<scale>/notebooks/<stem>.html``, a page that stands alone
    offline: images embedded, nothing fetched from the network (:func:`lib.pages.render`)."""
    return pages.render(executed, html_dir(scale) / f"{executed.stem}.html", f"{executed.stem} ({scale} scale)")


def page_problems(executed: Path, page: Path) -> list[str]:
    """What the executed notebook and its page lack (:func:`lib.pages.notebook_problems`,
    :func:`lib.pages.page_problems`): a figure not shown as an image, a fetched asset, TeX maths."""
    nb = json.loads(executed.read_text())
    return pages.notebook_problems(nb) + [f"page: {p}" for p in pages.page_problems(page.read_text())]


def _report(executed: Path, page: Path) -> bool:
    """Print the page's problems to stderr; True when it has none."""
    problems = page_problems(executed, page)
    for p in problems:
        print(f"      {page.name}: {p}", file=sys.stderr)
    return not problems


def move_aside(scale: str, experiment: str) -> Path | None:
    """Move ``data/<scale>/<experiment>/`` to ``build/<scale>/previous/`` (for ``--force``)."""
    src = data_dir(scale, experiment)
    if not src.exists():
        return None
    dst = BUILD / scale / "previous" / f"{experiment}-{time.strftime('%Y%m%dT%H%M%S')}"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(src), dst)
    return dst


def check_figure_inputs(steps: list[Step], scale: str, has_cuda: bool) -> None:
    """Notebook 05 draws every experiment's data: each one that no selected step produces (and that
    this machine can produce at all) must already be complete, else :class:`MissingDataError`."""
    if not any(s.experiment is None for s in steps):
        return
    made = {s.experiment for s in steps}
    missing = []
    for s in STEPS:
        if s.experiment is None or s.experiment in made or (scale in s.needs_cuda_at and not has_cuda):
            continue
        cfg = experiment.load(config_path(s.experiment, scale))
        if not experiment.runner(cfg["kind"]).shard_done(cfg):
            missing.append((s.experiment, s.notebook[:2]))
    if missing:
        names = ", ".join(f"{data_dir(scale, e)}" for e, _ in missing)
        raise MissingDataError(f"notebook 05 draws from {names}, which hold(s) no complete data for the "
                               f"{scale} configs: run them first (`python -m lib.reproduce --scale {scale} --only "
                               f"{' '.join(n for _, n in missing)}`, or without --only)")


def main(argv: list[str] | None = None) -> int:
    """``python -m lib.reproduce``: user errors -> one line on stderr and exit status 2."""
    return cli_main(_main, argv)


def _main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    try:
        scale = check_scale(args.scale)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    steps = [s for s in STEPS if args.only is None or any(s.notebook.startswith(p) for p in args.only)]
    if args.html_only:
        return _html_only(steps, scale)
    missing = [config_path(s.experiment, scale) for s in steps  # bad input before any work: every config must exist
               if s.experiment and not config_path(s.experiment, scale).is_file()]
    if missing:
        print(f"error: {missing[0]} is missing", file=sys.stderr)
        return 2
    has_cuda = cuda_available()
    skipped = _cuda_skips(steps, scale, has_cuda)
    for s in steps:  # user errors before any work: bad config, unknown base, another config's data, dirty tree
        if s.experiment and s not in skipped:  # reused complete data needs no clean tree; new cpu/paper data does
            experiment.preflight(experiment.load(config_path(s.experiment, scale)),
                                 will_write=True if args.force else None, replacing=args.force)
    check_figure_inputs(steps, scale, has_cuda)
    todo = [s for s in steps if s not in skipped]
    results = _run_notebooks(todo, scale, skipped, force=args.force)
    if any(name == FIGURES_NOTEBOOK and ok for name, ok, _ in results):  # the index now lists every panel
        for p in prune_panels(scale):
            print(f"  removed {rel(p)}: no panel draws it any more")
    _reindex(scale)  # INDEX.md links the pages just rendered (notebook 05 wrote it before its own page)
    for f in tables.update():  # the README's results tables, written from the data
        print(f"  rewrote the results tables of {f}")
    _summary(results, skipped, scale)
    return 0 if all(ok for _, ok, _ in results) and len(results) == len(todo) else 1


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line (``--allow-dirty`` already applied: ``GE_ALLOW_DIRTY=1`` reaches the notebooks' processes)."""
    ap = argparse.ArgumentParser(prog="python -m lib.reproduce", description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="cpu", help="smoke | cpu | paper (default: cpu)")
    ap.add_argument("--force", action="store_true", help="recompute data even when it matches its config")
    ap.add_argument("--only", nargs="*", default=None, help="notebook name prefixes to run, e.g. 01 04")
    ap.add_argument("--html-only", action="store_true",
                    help="only render build/<scale>/*.ipynb (already executed) to figures/<scale>/notebooks/*.html")
    experiment.add_allow_dirty(ap)
    args = ap.parse_args(argv)
    experiment.apply_allow_dirty(args)
    return args


def _cuda_skips(steps: list[Step], scale: str, has_cuda: bool) -> list[Step]:
    """The steps that need a CUDA GPU at ``scale`` where none is visible, each named on stdout."""
    skipped = [s for s in steps if scale in s.needs_cuda_at and not has_cuda]
    for s in skipped:
        print(f"note: {s.notebook} at scale {scale!r} needs a CUDA GPU and none is visible; it is skipped, "
              f"and the figures are rebuilt from whatever {scale} data exists.")
    return skipped


def _run_notebooks(todo: list[Step], scale: str, skipped: list[Step], *, force: bool) -> list[tuple[str, bool, float]]:
    """Execute the notebooks of ``todo`` in order into ``build/<scale>/`` (``force``: each one's old data
    moved aside first), each rendered to its page at the HTML scales; the first that fails ends the run.
    Returns ``(notebook, ok, seconds)`` of each executed one."""
    out_dir = BUILD / scale
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for k, s in enumerate(todo, 1):
        if force and s.experiment:
            moved = move_aside(scale, s.experiment)
            if moved:
                print(f"      --force: moved old data to {moved.relative_to(REPO_ROOT)}")
        out = out_dir / s.notebook
        print(f"[{k}/{len(todo)}] {s.notebook} (scale {scale}) ...", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(papermill_command(s, scale, out, [x.experiment for x in skipped]),
                              cwd=REPO_ROOT, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if proc.returncode != 0:
            results.append((s.notebook, False, dt))
            _say_failed(out, proc, dt)
            break
        _stable_ids(out)
        results.append((s.notebook, _say_done(out, scale, dt), dt))
    return results


def _stable_ids(executed: Path) -> None:
    """Rewrite an executed notebook with cell ids a re-run keeps (:func:`lib.pages.stable_ids`: papermill gives
    its injected-parameters cell a new random id each run), so re-running leaves its copies and pages unchanged,
    and its figures stored compactly at their full resolution (:func:`lib.pages.compact_images`)."""
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    if pages.stable_ids(nb) + pages.compact_images(nb):
        nbformat.write(nb, executed)


def _say_done(executed: Path, scale: str, dt: float) -> bool:
    """Name the executed notebook (and, at the HTML scales, render and check its page); True when its page
    has no problems."""
    if scale not in HTML_SCALES:
        print(f"      done in {dt:.1f} s -> {executed.relative_to(REPO_ROOT)}", flush=True)
        return True
    page = render_html(executed, scale)
    print(f"      done in {dt:.1f} s -> {executed.relative_to(REPO_ROOT)}, {rel(page)}", flush=True)
    return _report(executed, page)


def _say_failed(executed: Path, proc: subprocess.CompletedProcess, dt: float) -> None:
    """Name the cell (else the last line of stderr) where a notebook failed, and the end of its stderr."""
    where = failed_cell(executed) or (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    print(f"      FAILED after {dt:.1f} s in {where}\n      partial executed copy: {executed.relative_to(REPO_ROOT)}",
          file=sys.stderr)
    print("\n".join("      | " + ln for ln in proc.stderr.strip().splitlines()[-15:]), file=sys.stderr)


def _summary(results: list[tuple[str, bool, float]], skipped: list[Step], scale: str) -> None:
    figs = sorted(p.name for p in figures_dir(scale).glob("*.png"))
    print(f"\nsummary (scale {scale}):")
    for name, ok, dt in results:
        print(f"  {'ok ' if ok else 'FAIL'} {name:28s} {dt:7.1f} s")
    for s in skipped:
        print(f"  skip {s.notebook:28s}  (needs CUDA)")
    print(f"  {len(figs)} figures in {rel(figures_dir(scale))}/")  # GE_FIGURES_DIR may lie outside the repo


def _reindex(scale: str) -> None:
    if (figures_dir(scale) / "index.json").is_file():
        write_index(scale)


def executed_scale(notebook: Path) -> str | None:
    """The ``scale`` an executed notebook ran at (papermill's injected parameters; ``None``: not recorded)."""
    meta = json.loads(Path(notebook).read_text()).get("metadata", {}).get("papermill", {})
    return (meta.get("parameters") or {}).get("scale")


def _html_only(steps: list[Step], scale: str) -> int:
    """``--html-only``: render the executed notebooks in ``build/<scale>/``; a missing one is a user error."""
    missing = [s.notebook for s in steps if not (BUILD / scale / s.notebook).is_file()]
    if missing:
        raise MissingDataError(f"no executed {', '.join(missing)} in {rel(BUILD / scale)}/: run "
                               f"`python -m lib.reproduce --scale {scale}` first (or pick others with --only)")
    wrong = {s.notebook: executed_scale(BUILD / scale / s.notebook) for s in steps}
    wrong = {nb: sc for nb, sc in wrong.items() if sc not in (None, scale)}
    if wrong:
        nb, sc = next(iter(wrong.items()))
        raise UserError(f"{rel(BUILD / scale / nb)} was executed at the {sc} scale, not {scale}: its page would carry "
                        f"the wrong scale; run `python -m lib.reproduce --scale {scale}` first")
    clean = True
    for s in steps:
        page = render_html(BUILD / scale / s.notebook, scale)
        print(f"  {rel(page)} ({page.stat().st_size / 1e6:.2f} MB)")
        clean &= _report(BUILD / scale / s.notebook, page)
    _reindex(scale)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
