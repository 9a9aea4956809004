"""Every data folder carries its manifest, and no committed record names a folder of the machine that made it: a
manifest and a record hold paths relative to the repository. A society folder's manifest names every commit its
shards were made at, and a manifest written by several invocations keeps each one."""
from __future__ import annotations

import json
import re

import pytest

from lib.core import manifest as mf
from lib.core.paths import REPO_ROOT

DATA = REPO_ROOT / "data"
# an absolute path of a machine: "/work/...", "/home/...", "C:\\..." (a URL or a bare "/" is no path)
ABSOLUTE = re.compile(r"^(?:/(?:[\w.-]+/)+[\w.-]*|[A-Za-z]:\\)")


def folders() -> list:
    """``data/<scale>/<experiment>/`` and ``data/base/<model>/``: the folders a run or a build writes."""
    return sorted(p for p in DATA.glob("*/*") if p.is_dir())


def missing_manifest(folder) -> list[str]:
    """The files of ``folder`` that no manifest describes: a base model's folder needs its ``build_info.json``; in an
    experiment's folder every file needs a ``manifest.json`` beside it or in a folder above it, up to the experiment's
    (``tool_mutation/lineage/`` is its parent's; each of ``society_climb_pilot/n_hints64/`` has its own)."""
    if folder.parent.name == "base":
        return [] if (folder / "build_info.json").is_file() else [folder.name]
    out = []
    for f in sorted(x for x in folder.rglob("*") if x.is_file()):
        up = [f.parent, *[p for p in f.parent.parents if folder in (p, *p.parents)]]
        if not any((d / "manifest.json").is_file() for d in up):
            out.append(str(f.relative_to(folder)))
    return out


def absolute_paths(obj, where: str = "") -> list[str]:
    """Every string of a JSON object that is an absolute path, as ``key.path: value``."""
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in absolute_paths(v, f"{where}.{k}" if where else str(k))]
    if isinstance(obj, list):
        return [x for i, v in enumerate(obj) for x in absolute_paths(v, f"{where}[{i}]")]
    return [f"{where}: {obj}"] if isinstance(obj, str) and ABSOLUTE.match(obj) else []


def test_every_data_folder_has_a_manifest():
    assert folders(), "no data folders"
    bad = {str(p.relative_to(REPO_ROOT)): missing_manifest(p)[:3] for p in folders() if missing_manifest(p)}
    assert bad == {}


def test_no_committed_json_under_data_records_an_absolute_path():
    bad = {}
    for f in sorted(DATA.rglob("*.json")):
        found = absolute_paths(json.loads(f.read_text()))
        if found:
            bad[str(f.relative_to(REPO_ROOT))] = found[:3]
    assert bad == {}


def test_the_checks_catch_a_folder_without_manifest_and_an_absolute_path(tmp_path):
    """Planted: what data/cpu/paper_engines/ was (records without a manifest, the config by the path of the machine
    that ran them)."""
    (tmp_path / "cpu" / "paper_engines").mkdir(parents=True)
    (tmp_path / "cpu" / "paper_engines" / "micro_tiny.json").write_text("{}")
    (tmp_path / "cpu" / "pilot" / "a").mkdir(parents=True)
    (tmp_path / "cpu" / "pilot" / "a" / "rows.csv").write_text("x\n")
    (tmp_path / "cpu" / "pilot" / "a" / "manifest.json").write_text("{}")
    (tmp_path / "base" / "tiny").mkdir(parents=True)
    (tmp_path / "base" / "tiny" / "build_info.json").write_text("{}")
    assert missing_manifest(tmp_path / "cpu" / "paper_engines") == ["micro_tiny.json"]
    assert missing_manifest(tmp_path / "cpu" / "pilot") == [] and missing_manifest(tmp_path / "base" / "tiny") == []
    record = {"config": "/work/wt-bench/configs/society/paper.yaml", "set": ["base_adapter=data/base/paper-warmup"],
              "note": "see https://example.org/x and 1/2 of it", "runs": [{"out": "C:\\runs\\x"}]}
    assert absolute_paths(record) == ["config: /work/wt-bench/configs/society/paper.yaml", "runs[0].out: C:\\runs\\x"]
    assert absolute_paths({"config": "configs/society/paper.yaml"}) == []


def test_a_society_folders_manifest_names_every_commit_its_shards_record():
    from lib.core.manifest import read_manifest
    from lib.core.paths import data_dir
    from lib.society.data import CLIMB, FAIR, STUDIES, society_rows
    bad = []
    for scale in ("smoke", "cpu"):
        for study in STUDIES + tuple(f for s, f in FAIR.items() if s != CLIMB):  # the re-runs' folders too
            if study == CLIMB:  # its own runner: its shards' commits are read from their progress files below
                continue
            rows = society_rows(scale, study, required=False)
            if rows is None or "code_path" not in rows:  # a folder whose rows record no code path: nothing to read
                continue
            made = {c for c in rows["code_path"].astype(str).str.split("/").str[0] if c not in ("?", "nan", "")}
            git = (read_manifest(data_dir(scale, study)) or {}).get("git") or {}
            listed = {str(c)[:7] for c in (git.get("commits") or [git.get("commit")]) if c}
            if not made <= listed:
                bad.append(f"{scale}/{study}: shards made at {sorted(made - listed)} the manifest does not name")
        folder = data_dir(scale, CLIMB)
        made = {str(json.loads(p.read_text()).get("commit"))[:7] for p in folder.glob("*.progress.json")}
        git = (read_manifest(folder) or {}).get("git") or {}
        listed = {str(c)[:7] for c in (git.get("commits") or [git.get("commit")]) if c}
        if made and not made <= listed:
            bad.append(f"{scale}/{CLIMB}: shards made at {sorted(made - listed)} the manifest does not name")
    assert bad == []


def test_a_manifest_keeps_every_invocation_that_wrote_the_folder(tmp_path, monkeypatch):
    """A folder filled by two calls (other arms) keeps both in ``invocations``; ``run_config`` is the last one's.
    Planted: before, only the last call's arms were left."""
    monkeypatch.setattr(mf, "code_state", lambda: {"commit": "abc1234", "dirty": False})
    cfg = {"experiment": "x", "scale": "smoke", "lr": 0.1}
    for arms in (["continue"], ["crossover", "continue"], ["continue"]):
        mf.write_manifest(tmp_path, cfg, started="t", extra={"run_config": {**cfg, "arms": arms, "seeds": [0]}})
    m = mf.read_manifest(tmp_path)
    assert m["run_config"]["arms"] == ["continue"]
    assert [x["arms"] for x in m["invocations"]] == [["continue"], ["crossover", "continue"]]
    assert all(x["commit"] == "abc1234" for x in m["invocations"])
