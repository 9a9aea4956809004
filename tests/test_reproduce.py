"""The reproduction runner: papermill per notebook into build/<scale>/, failures named."""
from __future__ import annotations

import json

import nbformat

from lib import reproduce
from lib.core.paths import BUILD, REPO_ROOT


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


def test_command_uses_python3_kernel_and_the_scale_config(tmp_path):
    cmd = reproduce.papermill_command(reproduce.STEPS[0], "cpu", tmp_path / "o.ipynb", [])
    assert cmd[cmd.index("-k") + 1] == "python3"
    assert cmd[cmd.index("-f") + 1].endswith("configs/operators/cpu.yaml")
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
