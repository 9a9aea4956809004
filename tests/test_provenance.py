"""Provenance: INDEX.md lists data as patterns with counts and only existing paths; check_index
verifies the files and manifests it names and each manifest's commit against HEAD's history."""
from __future__ import annotations

import json
import subprocess

import pytest

from lib import provenance
from lib.core import paths
from lib import style as figures


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A scratch git repository standing in for the checkout, with two commits on main and one on a side branch."""
    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True,  # noqa: E731
                                    text=True).stdout.strip()
    git("init", "-q", "-b", "main")
    commit = lambda msg: (git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",  # noqa: E731
                              "-m", msg), git("rev-parse", "HEAD"))[1]
    first = commit("one")
    git("checkout", "-q", "-b", "side")
    side = commit("side")
    git("checkout", "-q", "main")
    head = commit("two")
    for mod in (provenance, figures, paths):  # paths: rel() reads its REPO_ROOT
        monkeypatch.setattr(mod, "REPO_ROOT", tmp_path, raising=False)
    return {"root": tmp_path, "first": first, "side": side, "head": head}


def _touch(root, *paths):
    for p in paths:
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text("x\n")


def test_data_patterns_group_numbered_files_and_drop_missing(repo):
    root = repo["root"]
    _touch(root, *[f"data/cpu/tm/{a}_s{s}.csv" for a in ("sgd", "mutate") for s in range(12)],
           "data/cpu/tm/lineage/lineage_s0.csv", "data/cpu/ops/agents.csv")
    listed = [f"data/cpu/tm/{a}_s{s}.csv" for a in ("sgd", "mutate") for s in range(13)]  # s12 absent
    listed += ["data/cpu/tm/lineage/lineage_s0.csv", "data/cpu/ops/agents.csv", "data/cpu/ops/gone.csv"]
    assert provenance.data_patterns(listed) == [
        ("data/cpu/tm/sgd_s*.csv", 12), ("data/cpu/tm/mutate_s*.csv", 12),
        ("data/cpu/tm/lineage/lineage_s0.csv", 1), ("data/cpu/ops/agents.csv", 1)]


def test_manifests_are_the_nearest_existing_ones(repo):
    root = repo["root"]
    _touch(root, "data/cpu/tm/sgd_s0.csv", "data/cpu/tm/lineage/lineage_s0.csv", "data/cpu/tm/manifest.json",
           "data/cpu/ops/agents.csv")                                       # ops has no manifest
    got = provenance.manifests_of(["data/cpu/tm/sgd_s0.csv", "data/cpu/tm/lineage/lineage_s0.csv",
                                   "data/cpu/ops/agents.csv"])
    assert got == ["data/cpu/tm/manifest.json"]                             # never lineage/manifest.json


def test_commit_status(repo):
    assert provenance.commit_status(repo["first"]) == "ancestor"
    assert provenance.commit_status(repo["head"]) == "ancestor"
    assert provenance.commit_status(repo["side"]) == "not an ancestor"
    assert provenance.commit_status("0" * 40) == "not verified"             # unknown to this clone
    assert provenance.commit_status("unknown") == "not verified"
    assert provenance.commit_status(None) == "not verified"


def test_check_index_and_written_index(repo, monkeypatch):
    root = repo["root"]
    monkeypatch.setattr(provenance, "figures_dir", lambda scale: root / "figures" / scale)
    monkeypatch.setattr(figures, "figures_dir", lambda scale: root / "figures" / scale, raising=False)
    _touch(root, "figures/cpu/f.png", *[f"data/cpu/tm/sgd_s{s}.csv" for s in range(3)])
    (root / "data/cpu/tm/manifest.json").write_text(json.dumps({"git": {"commit": repo["side"], "dirty": False}}))
    index = {"fig1": {"caption": "c", "files": ["figures/cpu/f.png", "figures/cpu/f.pdf"],
                      "data": [f"data/cpu/tm/sgd_s{s}.csv" for s in range(4)], "config": "configs/tm/cpu.yaml",
                      "notebook": "02.ipynb"}}
    monkeypatch.setattr(provenance, "read_index", lambda scale: index)
    t = provenance.check_index("cpu")
    assert sorted(t.loc[~t.exists, "path"]) == ["data/cpu/tm/sgd_s3.csv", "figures/cpu/f.pdf"]
    m = t[t.kind == "manifest"].iloc[0]
    assert m.path == "data/cpu/tm/manifest.json" and m.commit_status == "not an ancestor"
    text = provenance.write_index("cpu").read_text()
    assert "`data/cpu/tm/sgd_s*.csv` (3 files)" in text and "sgd_s3" not in text
    assert "`data/cpu/tm/manifest.json`" in text


def test_figures_drawn_from_data_that_changed_since_are_listed(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from lib.style import save_figure
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path / "figures"))
    data = tmp_path / "rows.csv"
    data.write_text("a,b\n1,2\n")
    other = tmp_path / "other.csv"
    other.write_text("x\n1\n")
    for name, src in (("figA", data), ("figB", other)):
        fig, ax = plt.subplots()
        ax.plot([0, 1])
        save_figure(fig, name, scale="smoke", caption="c", data=str(src))
        plt.close(fig)
    assert provenance.stale_figures("smoke").empty  # drawn from the data as it is now
    data.write_text("a,b\n1,3\n")
    other.unlink()
    st = provenance.stale_figures("smoke")
    assert sorted(zip(st.figure, st.state)) == [("figA", "changed"), ("figB", "missing")]


def test_drawings_of_panels_no_longer_drawn_are_found_and_pruned(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from lib.style import save_figure
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path / "figures"))
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    save_figure(fig, "figA", scale="smoke", caption="c", data=[])
    plt.close(fig)
    here = tmp_path / "figures" / "smoke"
    for old in ("S3h_renamed.png", "S3h_renamed.pdf"):  # a panel since renamed: its files stayed
        (here / old).write_bytes(b"x")
    assert [p.name for p in provenance.stale_panels("smoke")] == ["S3h_renamed.pdf", "S3h_renamed.png"]
    assert [p.name for p in provenance.prune_panels("smoke")] == ["S3h_renamed.pdf", "S3h_renamed.png"]
    assert sorted(p.name for p in here.iterdir() if p.suffix in (".png", ".pdf")) == ["figA.pdf", "figA.png"]
    assert provenance.stale_panels("smoke") == []


@pytest.mark.parametrize("scale", ["smoke", "cpu"])
def test_the_committed_figures_are_exactly_the_indexed_panels(scale):
    """A committed drawing that no panel draws any more (a renamed panel's old files) would mislead a reader."""
    assert provenance.stale_panels(scale) == []
