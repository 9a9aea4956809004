"""User errors on the command line: one line on stderr naming the problem, exit status 2, no traceback.

Every case is a real ``python -m lib.<cli>`` subprocess; they are started together (a module
fixture) so the suite waits for the slowest, not for their sum. Data and runs go to tmp folders
(GE_DATA_DIR / GE_RUNS_DIR). The dirty-tree refusal is tested in-process against a scratch git
repository, because the state of this checkout's tree is not the test's to choose.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from lib import experiment
from lib.core import errors, manifest
from lib.core.config import load_yaml
from lib.society.config import load as load_society
from lib.core.paths import REPO_ROOT, config_path

TM = load_yaml(config_path("tool_mutation", "smoke"))
SOC = dict(load_society("society", "smoke"))  # every key, its overlays resolved
NO_RAY = "import sys, runpy; sys.modules['ray'] = None; sys.argv[0] = 'lib.sweep'; runpy.run_module('lib.sweep', run_name='__main__')"


def _cases(tmp):
    """name -> (argv after the interpreter, words the message must contain)."""
    (tmp / "bad.yaml").write_text("experiment: x\nkind: [unclosed\n")
    (tmp / "kind.yaml").write_text(yaml.safe_dump({**TM, "kind": "no_such_kind"}))
    (tmp / "arm.yaml").write_text(yaml.safe_dump({**TM, "arms": ["sgd", "nope"]}))
    (tmp / "base.yaml").write_text(yaml.safe_dump({**SOC, "base_model": "no-such-org/no-such-model"}))
    (tmp / "tm.yaml").write_text(yaml.safe_dump(TM))
    # a data folder that holds another config's data (another learning rate)
    other = tmp / "data" / "smoke" / "tool_mutation"
    other.mkdir(parents=True)
    (other / "manifest.json").write_text(json.dumps({"config": {**TM, "lr": 0.5}, "config_hash": "x",
                                                     "status": "complete"}))
    # damaged records: the society folder's manifest cut off; a tool-mutation shard's progress file garbled
    (tmp / "soc.yaml").write_text(yaml.safe_dump(SOC))
    soc = tmp / "data" / "smoke" / "society"
    soc.mkdir(parents=True)
    (soc / "manifest.json").write_text('{"config": {"agents": 3, "gen')
    (tmp / "tm2.yaml").write_text(yaml.safe_dump({**TM, "experiment": "tm_damaged"}))
    tm2 = tmp / "data" / "smoke" / "tm_damaged"
    tm2.mkdir(parents=True)
    (tm2 / f"{TM['arms'][0]}_s{TM['seeds'][0]}.progress.json").write_text("last_done: 40")
    exp, swp = ["-m", "lib.experiment"], ["-m", "lib.sweep"]
    return {
        "experiment-missing-config": (exp + [str(tmp / "missing.yaml")], "does not exist"),
        "experiment-malformed-yaml": (exp + [str(tmp / "bad.yaml")], "not valid YAML"),
        "experiment-unknown-kind": (exp + [str(tmp / "kind.yaml")], "unknown kind"),
        "experiment-unknown-arm": (exp + [str(tmp / "arm.yaml")], "'nope' is not allowed"),
        "experiment-unknown-base": (exp + [str(tmp / "base.yaml")], "unknown base_model"),
        "experiment-other-config-data": (exp + [str(tmp / "tm.yaml")], "already holds data of another config"),
        "experiment-damaged-manifest": (exp + [str(tmp / "soc.yaml")], "society/manifest.json is not readable JSON"),
        "experiment-damaged-progress": (exp + [str(tmp / "tm2.yaml")], "progress.json is not readable JSON"),
        "sweep-damaged-manifest": (swp + [str(tmp / "soc.yaml"), "--serial"], "society/manifest.json is not readable"),
        "sweep-missing-config": (swp + [str(tmp / "missing.yaml"), "--serial"], "does not exist"),
        "sweep-unknown-arm": (swp + [str(tmp / "arm.yaml"), "--serial"], "'nope' is not allowed"),
        "sweep-other-config-data": (swp + [str(tmp / "tm.yaml"), "--serial"], "already holds data of another config"),
        "sweep-ray-missing": (["-c", NO_RAY, str(tmp / "tm.yaml")], "needs Ray"),
        "program-search-bad-seeds": (["-m", "lib.program_search", "--seeds", "0"], "below the minimum"),
        "reproduce-bad-scale": (["-m", "lib.reproduce", "--scale", "huge"], "scale"),
        "reproduce-missing-data": (["-m", "lib.reproduce", "--scale", "paper", "--only", "05"], "no complete data"),
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    env = {**os.environ, "GE_DATA_DIR": str(tmp / "data"), "GE_RUNS_DIR": str(tmp / "runs"),
           "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    env.pop("GE_ALLOW_DIRTY", None)
    procs = {name: (subprocess.Popen([sys.executable, *argv], cwd=REPO_ROOT, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE), words)
             for name, (argv, words) in _cases(tmp).items()}
    out = {}
    for name, (p, words) in procs.items():
        stdout, stderr = p.communicate(timeout=300)
        out[name] = (p.returncode, stdout, stderr, words)
    return out


CASES = ["experiment-missing-config", "experiment-malformed-yaml", "experiment-unknown-kind",
         "experiment-unknown-arm", "experiment-unknown-base", "experiment-other-config-data",
         "experiment-damaged-manifest", "experiment-damaged-progress", "sweep-damaged-manifest", "sweep-missing-config", "sweep-unknown-arm", "sweep-other-config-data", "sweep-ray-missing",
         "program-search-bad-seeds", "reproduce-bad-scale", "reproduce-missing-data"]


@pytest.mark.parametrize("name", CASES)
def test_user_error_is_one_line_and_exit_2(results, name):
    code, stdout, stderr, words = results[name]
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert code == 2, (code, stderr[-2000:])
    assert "Traceback" not in stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert words in lines[0], lines[0]


def test_every_case_is_listed(tmp_path):
    assert sorted(_cases(tmp_path)) == sorted(CASES)


def test_one_line_flattens_a_list_of_problems():
    e = errors.UserError("invalid config for 'x':\n  - a: bad\n  - b: worse")
    assert errors.one_line(e) == "invalid config for 'x': a: bad; b: worse"
    assert errors.cli_main(lambda argv: (_ for _ in ()).throw(e)) == 2
    with pytest.raises(KeyError):  # a bug keeps its traceback
        errors.cli_main(lambda argv: {}["x"])


# ----------------------------------------------------------------------------- dirty trees


@pytest.fixture
def scratch_repo(tmp_path, monkeypatch):
    """A git repository standing in for the checkout (lib.core.manifest asks git about REPO_ROOT)."""
    repo = tmp_path / "repo"
    for d in ("lib", "configs", "data/cpu/x"):
        (repo / d).mkdir(parents=True)
    (repo / "lib" / "a.py").write_text("x = 1\n")
    (repo / "data" / "cpu" / "x" / "rows.csv").write_text("a\n1\n")
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    monkeypatch.setattr(manifest, "REPO_ROOT", repo)
    monkeypatch.delenv("GE_ALLOW_DIRTY", raising=False)
    return repo


def test_changed_files_ignore_outputs_and_see_code(scratch_repo):
    assert manifest.changed_files() == [] and manifest.git_state()["dirty"] is False
    (scratch_repo / "data" / "cpu" / "x" / "rows.csv").write_text("a\n2\n")   # a run's own output
    assert manifest.changed_files() == []
    (scratch_repo / "lib" / "new.py").write_text("")                           # untracked code counts
    assert manifest.changed_files() == ["lib/new.py"]
    (scratch_repo / "lib" / "a.py").write_text("x = 2\n")
    assert manifest.git_state() == {"commit": manifest.git_state()["commit"], "dirty": True,
                                    "changed_files": ["lib/a.py", "lib/new.py"]}


def test_cpu_data_from_a_dirty_tree_is_refused_before_work(scratch_repo, tmp_path, monkeypatch, capsys):
    (scratch_repo / "lib" / "a.py").write_text("x = 2\n")
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path / "data"))
    cfg = {**load_yaml(config_path("operators", "smoke")), "scale": "cpu", "seeds": [0]}
    path = tmp_path / "ops.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert experiment.main([str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "uncommitted changes (lib/a.py)" in err and "--allow-dirty" in err
    assert not (tmp_path / "data" / "cpu").exists()                         # nothing was written
    with pytest.raises(errors.DirtyTreeError):                              # the runners' own first write
        manifest.write_manifest(tmp_path / "data" / "cpu" / "operators", experiment.load(path), started="t")
    assert experiment.main([str(path), "--allow-dirty"]) == 0
    m = json.loads((tmp_path / "data" / "cpu" / "operators" / "manifest.json").read_text())
    assert m["allow_dirty"] is True and m["git"]["dirty"] is True and m["git"]["changed_files"] == ["lib/a.py"]


def test_smoke_data_and_reused_data_need_no_clean_tree(scratch_repo, tmp_path, monkeypatch):
    (scratch_repo / "lib" / "a.py").write_text("x = 2\n")
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path / "data"))
    smoke = experiment.load(config_path("operators", "smoke"))
    experiment.preflight(smoke, will_write=True)                            # smoke is exempt
    cpu = {**smoke, "scale": "cpu"}
    experiment.preflight(cpu, will_write=False)                             # complete data is only read
    with pytest.raises(errors.DirtyTreeError):
        experiment.preflight(cpu, will_write=True)


def test_a_run_records_the_code_it_imported_not_the_tree_when_its_rows_land(scratch_repo):
    with manifest.pinned_code_state() as pinned:
        assert pinned == manifest.git_state() and pinned["dirty"] is False
        (scratch_repo / "lib" / "a.py").write_text("x = 2\n")  # the tree edited while the run goes on
        assert manifest.git_state()["dirty"] is True
        assert manifest.code_state() == pinned  # what a manifest written now records
    assert manifest.code_state()["dirty"] is True  # outside a run: the tree as it is


def test_a_folder_made_at_several_commits_lists_them(scratch_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("GE_DATA_DIR", str(tmp_path / "data"))
    cfg = experiment.load(config_path("operators", "smoke"))
    folder = tmp_path / "data" / "smoke" / "operators"
    manifest.write_manifest(folder, cfg, started="t")
    first = manifest.git_state()["commit"]
    assert "commits" not in json.loads((folder / "manifest.json").read_text())["git"]  # one commit: no list
    (scratch_repo / "lib" / "b.py").write_text("y = 1\n")
    git = lambda *a: subprocess.run(["git", "-C", str(scratch_repo), *a], check=True, capture_output=True)  # noqa: E731
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "second")
    manifest.write_manifest(folder, cfg, started="t")
    g = json.loads((folder / "manifest.json").read_text())["git"]
    assert g["commits"] == [first, manifest.git_state()["commit"]] and g["commit"] == g["commits"][-1]
