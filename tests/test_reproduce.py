"""The reproduction runner: papermill per notebook into build/<scale>/, failures named."""
from __future__ import annotations

import json

import nbformat
import yaml

from lib import experiment, reproduce
from lib.core.paths import BUILD, REPO_ROOT, config_path
from lib.society.config import SCHEMA, load


def test_every_step_has_a_notebook_with_a_parameters_cell():
    for step in reproduce.STEPS:
        path = REPO_ROOT / "notebooks" / step.notebook
        assert path.is_file(), f"{step.notebook} is missing"
        nb = nbformat.read(path, as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, f"{step.notebook}: exactly one cell must be tagged 'parameters'"
        assert "scale" in tagged[0].source
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]
        assert not errors, f"{step.notebook} is stored with an error output"


def test_command_uses_python3_kernel_and_the_scale_config(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "BUILD", tmp_path / "build")
    cmd = reproduce.papermill_command(reproduce.STEPS[0], "cpu", tmp_path / "o.ipynb", [])
    assert cmd[cmd.index("-k") + 1] == "python3"
    params = cmd[cmd.index("-f") + 1]  # the resolved config, never the file in configs/
    assert params == str(tmp_path / "build" / "cpu" / "params" / "operators.yaml")
    assert yaml.safe_load(open(params)) == experiment.load(config_path("operators", "cpu"))
    society = reproduce.papermill_command(reproduce.STEPS[2], "smoke", tmp_path / "o.ipynb", [])
    flat = yaml.safe_load(open(society[society.index("-f") + 1]))  # an overlay, given flat: every key
    assert "extends" not in flat and flat == dict(load("society", "smoke")) and set(flat) >= set(SCHEMA)
    last = reproduce.papermill_command(reproduce.STEPS[-1], "paper", tmp_path / "o.ipynb", ["society"])
    assert "-p" in last and "paper" in last
    assert json.loads(last[last.index("-y") + 1]) == {"skip_experiments": ["society"]}


def test_failed_cell_names_the_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    ok = nbformat.v4.new_code_cell("x = 1")
    bad = nbformat.v4.new_code_cell("raise ValueError('boom')\n# more")
    bad.outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="boom", traceback=[])]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), ok, bad]
    p = tmp_path / "nb.ipynb"
    nbformat.write(nb, p)
    msg = reproduce.failed_cell(p)
    assert "code cell 2" in msg and "ValueError: boom" in msg and "raise ValueError" in msg
    assert reproduce.failed_cell(tmp_path / "missing.ipynb") == ""


def test_bad_scale_is_refused_before_any_work(capsys):
    assert reproduce.main(["--scale", "huge"]) == 2
    assert "unknown scale" in capsys.readouterr().err


def test_runs_notebook_01_into_build(capsys):
    assert reproduce.main(["--scale", "smoke", "--only", "01"]) == 0
    out = capsys.readouterr().out
    assert "01_operators.ipynb" in out and "done in" in out
    executed = nbformat.read(BUILD / "smoke" / "01_operators.ipynb", as_version=4)
    assert any(c.get("outputs") for c in executed.cells if c.cell_type == "code")
    # papermill gives its injected cell a random id each run; the executed notebook keeps a fixed one, so a
    # re-run leaves the committed notebooks and pages as they were
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert [c["id"] for c in injected] == ["injected-parameters"]
    source = nbformat.read(REPO_ROOT / "notebooks" / "01_operators.ipynb", as_version=4)
    assert [c["id"] for c in executed.cells if c not in injected] == [
        c["id"] for c in source.cells if "injected-parameters" not in c.metadata.get("tags", [])]


def _executed(tmp_path, figure_output: dict):
    """``<tmp>/cpu/01_operators.ipynb``: an executed notebook whose one figure cell stored ``figure_output``."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("fig = P.conformity_vs_fitness(agents)\ndisplay(fig); plt.close(fig)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=figure_output)]
    nb.cells = [nbformat.v4.new_markdown_cell("# 01"), cell]
    (tmp_path / "cpu").mkdir()
    nbformat.write(nb, tmp_path / "cpu" / "01_operators.ipynb")


def test_html_only_fails_on_a_page_that_shows_a_figure_as_text(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "BUILD", tmp_path)
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path / "figures"))
    _executed(tmp_path, {"text/plain": "<Figure size 374x330 with 1 Axes>"})  # executed under MPLBACKEND=Agg
    assert reproduce.main(["--scale", "cpu", "--html-only", "--only", "01"]) == 1
    err = capsys.readouterr().err
    assert "01_operators.html" in err and "a figure shown as text" in err and "0 images" in err
    assert (tmp_path / "figures" / "cpu" / "notebooks" / "01_operators.html").is_file()


def test_html_only_renders_a_page_with_its_figure_and_nothing_to_fetch(tmp_path, monkeypatch, capsys):
    import base64

    monkeypatch.setattr(reproduce, "BUILD", tmp_path)
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path / "figures"))
    png = (REPO_ROOT / "figures" / "smoke" / "fig1a_conformity_vs_fitness.png").read_bytes()
    _executed(tmp_path, {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"})
    assert reproduce.main(["--scale", "cpu", "--html-only", "--only", "01"]) == 0
    assert capsys.readouterr().err == ""
    html = (tmp_path / "figures" / "cpu" / "notebooks" / "01_operators.html").read_text()
    assert 'src="data:image/png;base64,' in html and "cdnjs" not in html


def test_html_only_refuses_a_notebook_executed_at_another_scale(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "BUILD", tmp_path)
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path / "figures"))
    _executed(tmp_path, {"text/plain": "<Figure>"})
    nb = nbformat.read(tmp_path / "cpu" / "01_operators.ipynb", as_version=4)
    nb.metadata["papermill"] = {"parameters": {"scale": "smoke"}}  # a smoke run left under build/cpu/
    nbformat.write(nb, tmp_path / "cpu" / "01_operators.ipynb")
    assert reproduce.main(["--scale", "cpu", "--html-only", "--only", "01"]) == 2
    err = capsys.readouterr().err
    assert "executed at the smoke scale, not cpu" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "figures" / "cpu" / "notebooks" / "01_operators.html").exists()
