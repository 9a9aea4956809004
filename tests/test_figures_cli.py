"""One command per figure: ``python -m lib.figures NAME [--scale S]`` redraws one panel from the committed data into
``figures/<S>/`` (here a tmp ``GE_FIGURES_DIR``); an unknown name or missing data is one line and exit status 2; every
panel of ``figures/<scale>/INDEX.md`` is reachable by the command its row lists. The subprocesses start together."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from figcheck import assert_png_drawn
from lib import figures as plots
from lib.core.errors import UserError
from lib.core.paths import REPO_ROOT


def _cases(tmp):
    """name -> (argv after ``-m lib.figures``, extra environment)."""
    return {"known": (["S3b", "--scale", "smoke"], {}),
            "full-name": (["fig1a_conformity_vs_fitness", "--scale", "smoke"], {}),
            "unknown": (["fig9z", "--scale", "smoke"], {}),
            "bad-scale": (["S3b", "--scale", "huge"], {}),
            "missing-data": (["S3b", "--scale", "smoke"], {"GE_DATA_DIR": str(tmp / "empty")})}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("figcli")
    procs = {}
    for name, (argv, extra) in _cases(tmp).items():
        env = {**os.environ, "GE_FIGURES_DIR": str(tmp / name), "PYTHONWARNINGS": "ignore", **extra}
        procs[name] = subprocess.Popen([sys.executable, "-m", "lib.figures", *argv], cwd=REPO_ROOT, env=env,
                                       text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = {name: (p.wait(timeout=300), p.stdout.read(), p.stderr.read(), tmp / name) for name, p in procs.items()}
    return out


@pytest.mark.parametrize("case,panel", [("known", "S3b_study_g_sweep"), ("full-name", "fig1a_conformity_vs_fitness")])
def test_a_known_name_redraws_its_panel_and_index_into_the_figures_dir(results, case, panel):
    code, stdout, stderr, folder = results[case]
    assert code == 0, stderr[-2000:]
    here = folder / "smoke"
    assert sorted(p.name for p in here.iterdir()) == sorted([f"{panel}.pdf", f"{panel}.png", "INDEX.md", "index.json"])
    assert_png_drawn(here / f"{panel}.png", min_ink=0.01)
    index = (here / "INDEX.md").read_text()
    assert f"| `{panel}` |" in index and f"`{plots.command(panel, 'smoke')}`" in index
    assert stdout.split() == [str(here / f"{panel}.pdf"), str(here / f"{panel}.png"), str(here / "INDEX.md")]


@pytest.mark.parametrize("case,words", [("unknown", "unknown figure 'fig9z'"), ("bad-scale", "unknown scale 'huge'"),
                                        ("missing-data", "S3b_study_g_sweep at smoke: no")])
def test_an_unknown_name_or_missing_data_is_one_line_and_exit_2(results, case, words):
    code, stdout, stderr, folder = results[case]
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert code == 2 and "Traceback" not in stderr, stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert not list(folder.rglob("*.png")), "a failed redraw wrote a panel"


def test_every_case_is_checked(tmp_path):
    assert set(_cases(tmp_path)) == {"known", "full-name", "unknown", "bad-scale", "missing-data"}


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
def test_every_panel_of_the_index_has_a_command_that_names_it(scale):
    """Each row of the committed INDEX.md ends with the command that redraws it, and that command's name resolves to
    the row's panel (fig3j among them)."""
    rows = re.findall(r"^\| `([^`]+)` \|.*\| `python -m lib\.figures (\S+) --scale (\w+)` \|$",
                      (REPO_ROOT / "figures" / scale / "INDEX.md").read_text(), flags=re.M)
    panels = re.findall(r"^\| `([^`]+)` \|", (REPO_ROOT / "figures" / scale / "INDEX.md").read_text(), flags=re.M)
    assert rows and [r[0] for r in rows] == panels, "a row of INDEX.md lists no command"
    for panel, name, s in rows:
        assert s == scale and plots.resolve(name)[0] == panel, (panel, name)


def test_a_figure_id_names_one_panel_and_fig3j_is_the_climbs():
    assert plots.resolve("fig3j") == ("fig3j_climb", "society_climb")
    assert plots.resolve("S3o") == ("S3o_study_skill_loss", "society_study")
    ids = [plots.figure_id(n) for n in plots.panels()]
    assert len(ids) == len(set(ids)), "two panels share a figure id: the command needs its full name"
    with pytest.raises(UserError, match="unknown figure 'fig3'"):
        plots.resolve("fig3")
