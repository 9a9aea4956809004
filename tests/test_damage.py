"""Damaged data, a mistyped base and a second run at once: each caught with one clear message.

A real smoke society (configs/society/smoke.yaml with the arm ``full`` only, ~10 s) is run once
into a temporary data root; each test copies it, damages one file the way a full disk, an
interrupted copy or a killed process would, and runs the same command again
(``python -m lib.experiment CFG``). The outcome is either the rows of the undamaged run
(recomputed from the last good block) or exit status 2 with one line naming the file.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from lib import experiment, provenance
from lib.core import jsonfile, rows
from lib.core.errors import DamagedFileError
from lib.core.paths import REPO_ROOT, config_path
from lib.engines import models
from lib.society import run as society

CFG = {**society.load("society", "smoke"), "arms": ["full"]}
SHARD = "full_s0"


def _roots(mp: pytest.MonkeyPatch, root: Path) -> None:
    mp.setenv("GE_DATA_DIR", str(root / "data"))
    mp.setenv("GE_RUNS_DIR", str(root / "runs"))


def _folder(root: Path) -> Path:
    return root / "data" / "smoke" / "society"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The undamaged run: its root (data + runs), config file and rows."""
    root = tmp_path_factory.mktemp("reference")
    path = root / "cfg.yaml"
    path.write_text(yaml.safe_dump(CFG))
    with pytest.MonkeyPatch.context() as mp:
        _roots(mp, root)
        assert experiment.main([str(path)]) == 0
    folder = _folder(root)
    return {"root": root, "cfg": path, "rows": society.load_rows(society.validate_config(CFG), folder),
            "csv": (folder / f"{SHARD}.csv").read_bytes()}


@pytest.fixture
def copy(reference, tmp_path, monkeypatch):
    """A copy of the reference run (data and adapters) as this test's data and runs roots."""
    for part in ("data", "runs"):
        shutil.copytree(reference["root"] / part, tmp_path / part)
    _roots(monkeypatch, tmp_path)
    return _folder(tmp_path)


def _rerun(reference, capsys) -> tuple[int, str]:
    """The same command again: exit status and the lines it wrote to stderr."""
    capsys.readouterr()
    code = experiment.main([str(reference["cfg"])])
    return code, capsys.readouterr().err


def _refused(code: int, err: str, *words: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def _same_rows(reference, folder: Path) -> None:
    got = society.load_rows(society.validate_config(CFG), folder)
    pd.testing.assert_frame_equal(got, reference["rows"])
    assert (folder / f"{SHARD}.csv").read_bytes() == reference["csv"]  # both computed here, by this process


# ----------------------------------------------------------------------------- JSON records


def test_manifest_that_is_not_json_is_named(reference, copy, capsys):
    (copy / "manifest.json").write_text('{"config": {"agents": 3,')
    code, err = _rerun(reference, capsys)
    _refused(code, err, str(copy / "manifest.json"), "not readable JSON", "git checkout")
    table = provenance.manifest_table("smoke", ["society"])
    assert not table.agrees[0] and "damaged" in table.note[0]


@pytest.mark.parametrize("damage", ["not_json", "truncated"])
def test_damaged_progress_file_is_named_and_its_fix_recomputes(reference, copy, capsys, damage):
    p = copy / f"{SHARD}.progress.json"
    text = p.read_text()
    p.write_text("<html>disk full</html>" if damage == "not_json" else text[:len(text) // 2])
    code, err = _rerun(reference, capsys)
    line = _refused(code, err, str(p), "delete it to recompute")
    if damage == "truncated":  # the fix the message gives: the shard is recomputed to the same rows
        assert "delete it" in line
        p.unlink()
        code, _ = _rerun(reference, capsys)
        assert code == 0
        _same_rows(reference, copy)


# ----------------------------------------------------------------------------- rows


def test_cut_last_row_of_a_finished_shard_is_refused_not_read_as_nan(reference, copy, capsys):
    csv = copy / f"{SHARD}.csv"
    data = csv.read_bytes()
    n_lines = data.count(b"\n")
    csv.write_bytes(data[:-15])  # the last row loses its end (a full disk, an interrupted copy)
    assert pd.read_csv(csv).value.isna().sum() + pd.read_csv(csv).metric.isna().sum() >= 1  # what pandas alone sees
    code, err = _rerun(reference, capsys)
    _refused(code, err, str(csv), f"line {n_lines}:", "cut off", "recompute")
    with pytest.raises(DamagedFileError, match=f"line {n_lines}"):
        society.load_rows(society.validate_config(CFG), copy)
    with pytest.raises(DamagedFileError):
        rows.read_rows(copy)
    table = provenance.manifest_table("smoke", ["society"])  # notebook 05's provenance check
    assert not table.agrees[0] and f"{SHARD}.csv line {n_lines}" in table.note[0]


def test_a_finished_shard_altered_into_well_formed_rows_is_named(reference, copy, capsys):
    csv = copy / f"{SHARD}.csv"
    lines = csv.read_bytes().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if b",test_overall," in ln)
    head, _, value = lines[k].rpartition(b",")
    lines[k] = head + b"," + (b"0.0\n" if value.strip() != b"0.0" else b"1.0\n")  # a plausible number, edited in
    csv.write_bytes(b"".join(lines))
    code, err = _rerun(reference, capsys)  # before: "society (smoke): N rows", exit 0
    _refused(code, err, str(csv), "changed after its rows were written", "SHA-256", "restore it")
    table = provenance.manifest_table("smoke", ["society"])
    assert not table.agrees[0] and "changed after" in table.note[0]
    csv.write_bytes(reference["csv"])  # restored: read again as written
    code, _ = _rerun(reference, capsys)
    assert code == 0


def test_rows_lost_at_a_line_boundary_are_refused(reference, copy, capsys):
    csv = copy / f"{SHARD}.csv"
    lines = csv.read_bytes().splitlines(keepends=True)
    csv.write_bytes(b"".join(lines[:-3]))  # three whole rows gone: every remaining line is well formed
    code, err = _rerun(reference, capsys)
    _refused(code, err, str(csv), f"line {len(lines) - 2}:", "rows were lost")


def test_half_written_block_of_an_unfinished_shard_is_recomputed(reference, copy, capsys):
    for f in copy.glob(f"{SHARD}*"):
        f.unlink()
    with pytest.raises(society.Interrupted):  # generation 0 done, generation 1 not yet
        society.run_experiment(society.validate_config(CFG), interrupt_after=0)
    csv = copy / f"{SHARD}.csv"
    done = csv.read_bytes()
    assert reference["csv"].startswith(done) and len(done) < len(reference["csv"])
    rest = reference["csv"][len(done):]
    csv.write_bytes(done + rest[:len(rest) // 2])  # killed while writing generation 1: a row cut mid-line
    code, _ = _rerun(reference, capsys)
    assert code == 0
    _same_rows(reference, copy)


HALF_ROW = b"full,0,1,0,test_ove"  # a row cut off mid-field: what an interrupted append or copy leaves


def _cut_to_what_the_message_says(err: str, csv: Path) -> None:
    """Apply the fix the message names: ``truncate -s N FILE``."""
    n = int(err.split("truncate -s ")[1].split(" ")[0])
    with csv.open("r+b") as fh:
        fh.truncate(n)


def test_half_row_appended_to_a_finished_shard_is_named_and_kept(reference, copy, capsys):
    csv = copy / f"{SHARD}.csv"
    n_lines = reference["csv"].count(b"\n")
    csv.write_bytes(reference["csv"] + HALF_ROW)  # after the run finished: before, exit 0 and the row skipped
    code, err = _rerun(reference, capsys)
    line = _refused(code, err, str(csv), f"line {n_lines + 1}:", f"{len(HALF_ROW)} bytes after", "finished",
                    "truncate -s", "git checkout")
    assert csv.read_bytes() == reference["csv"] + HALF_ROW  # named, not silently cut or read
    with pytest.raises(DamagedFileError, match=f"{SHARD}.csv line {n_lines + 1}"):
        rows.read_rows(copy)
    with pytest.raises(DamagedFileError, match="finished"):  # a resume has no block in flight to cut either
        rows.resume_shard(csv, "generation")
    table = provenance.manifest_table("smoke", ["society"])
    assert not table.agrees[0] and f"{SHARD}.csv line {n_lines + 1}" in table.note[0]
    _cut_to_what_the_message_says(line, csv)
    code, _ = _rerun(reference, capsys)
    assert code == 0
    _same_rows(reference, copy)


def test_half_row_appended_to_a_finished_baseline_shard_is_named(reference, copy, capsys, tmp_path):
    path = tmp_path / "with_baseline.yaml"  # the same data folder: a baseline on the reference's founders
    path.write_text(yaml.safe_dump({**CFG, "arms": ["full", "baseline_soup"]}))
    assert experiment.main([str(path)]) == 0
    csv = copy / "baseline_soup_s0.csv"
    good = csv.read_bytes()
    csv.write_bytes(good + HALF_ROW.replace(b"full", b"baseline_soup"))
    capsys.readouterr()
    code = experiment.main([str(path)])
    n_lines = good.count(b"\n")
    line = _refused(code, capsys.readouterr().err, str(csv), f"line {n_lines + 1}:", "finished", "truncate -s")
    assert "baseline_soup_s0.progress.json" in line
    _cut_to_what_the_message_says(line, csv)
    assert csv.read_bytes() == good and experiment.main([str(path)]) == 0


def test_bytes_after_the_done_rows_are_damage_only_in_a_finished_shard(tmp_path):
    """Unfinished (rows appended block by block): the block in flight is left out by a reader and cut by a
    resume. Finished (its last block, per the folder's manifest, is done): any byte after is damage."""
    cols = ["arm", "seed", "step", "metric", "value"]
    (tmp_path / "manifest.json").write_text(json.dumps({"config": {"n_steps": 20}}))
    shard = rows.shard_path(tmp_path, "sgd", 0)
    assert rows.final_block(shard, "step") == 20 and rows.final_block(shard, "generation") is None
    for step in (0, 10, 20):
        if step == 10:  # killed while writing step 10's block: half of its row on disk
            done = shard.read_bytes()
            shard.write_bytes(done + b"sgd,0,10,m,")
            assert rows.read_shard(shard).step.tolist() == [0] and rows.damaged_shards(tmp_path) == []
            assert rows.resume_shard(shard, "step") == 0 and shard.read_bytes() == done
        rows.append_rows(shard, [{"arm": "sgd", "seed": 0, "step": step, "metric": "m", "value": 1.0}], cols)
        rows.mark_done(shard, step)
    finished = shard.read_bytes()
    assert rows.read_shard(shard).step.tolist() == [0, 10, 20]
    shard.write_bytes(finished + b"\n")  # even one stray line end
    with pytest.raises(DamagedFileError, match=r"sgd_s0\.csv line 5: 1 byte after the 3 rows .*step 20"):
        rows.read_shard(shard)
    assert len(rows.damaged_shards(tmp_path)) == 1
    (tmp_path / "manifest.json").unlink()  # no manifest: the last block is unknown, the shard read as before
    assert rows.read_shard(shard).step.tolist() == [0, 10, 20]


# the first run, paused inside its shard (the lock held, nothing of the shard written yet) until told to go on
PAUSED_RUN = """
import pathlib, sys, time
from lib.society import run as society
real, holding, go = society.run_shard, pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
def paused(*args, **kw):
    holding.write_text("")
    while not go.exists():
        time.sleep(0.05)
    return real(*args, **kw)
society.run_shard = paused
from lib import experiment
sys.exit(experiment.main([sys.argv[1]]))
"""


def test_second_run_on_the_same_folder_is_refused_and_mixes_nothing(reference, tmp_path):
    shutil.copytree(reference["root"] / "runs", tmp_path / "runs")  # the founders: trained once is enough
    env = {**os.environ, "GE_DATA_DIR": str(tmp_path / "data"), "GE_RUNS_DIR": str(tmp_path / "runs"),
           "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    holding, go = tmp_path / "holding", tmp_path / "go"
    first = subprocess.Popen([sys.executable, "-c", PAUSED_RUN, str(reference["cfg"]), str(holding), str(go)],
                             cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.time()
        while not holding.exists():
            assert first.poll() is None and time.time() - t0 < 120, first.communicate()
            time.sleep(0.05)
        second = subprocess.run([sys.executable, "-m", "lib.experiment", str(reference["cfg"])], cwd=REPO_ROOT,
                                env=env, capture_output=True, text=True, timeout=120)
        folder = _folder(tmp_path)
        _refused(second.returncode, second.stderr, "another run is writing full_s0.csv", str(folder))
    finally:
        go.write_text("")
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-2000:]
    _same_rows(reference, folder)


# ----------------------------------------------------------------------------- the base


GUARD = """
import os, socket
def _refuse(self, address, *args):
    with open(os.environ["GE_TEST_CONNECT_LOG"], "a") as f:
        f.write(repr(address) + "\\n")
    raise OSError("a test refused this network connection")
socket.socket.connect = socket.socket.connect_ex = _refuse
"""


@pytest.mark.parametrize("offline", ["1", ""])
def test_mistyped_base_is_named_as_a_typo_before_any_network_access(reference, tmp_path, offline):
    """The typo is refused from the config alone: the process never opens a connection (a guard in
    ``sitecustomize`` logs and refuses every ``connect``), so it cannot wait on a hub's timeouts,
    whatever the machine's load (no wall-clock bound: it would only measure the load)."""
    # a data root whose society folder holds another config's data, as the committed data/ does
    data = tmp_path / "data" / "smoke" / "society"
    data.mkdir(parents=True)
    shutil.copy(_folder(reference["root"]) / "manifest.json", data)
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump({**CFG, "base_model": "no/such-model-here"}))
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "connections.log"
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", models.ALLOW_DOWNLOADS_ENV)}
    env |= {"GE_DATA_DIR": str(tmp_path / "data"), "GE_RUNS_DIR": str(tmp_path / "runs"),
            "PYTHONWARNINGS": "ignore", "HF_HUB_OFFLINE": offline,
            "HF_HOME": str(tmp_path / "hf"),  # an empty cache: nothing is there to find
            "PYTHONPATH": os.pathsep.join([str(guard), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "GE_TEST_CONNECT_LOG": str(log)}
    res = subprocess.run([sys.executable, "-m", "lib.experiment", str(path)], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    _refused(res.returncode, res.stderr, "unknown base_model 'no/such-model-here'", models.ALLOW_DOWNLOADS_ENV)
    assert not log.exists(), f"connections attempted: {log.read_text()}"
    assert not (tmp_path / "hf").exists() or not any((tmp_path / "hf").rglob("*.json"))  # nothing fetched


def test_the_network_guard_refuses_and_logs_a_connection(tmp_path):
    """The guard of the test above works: a connection attempted under it is logged and refused."""
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "connections.log"
    code = ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
            "except OSError as e:\n    print(e)\n")
    res = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(guard),
                         "GE_TEST_CONNECT_LOG": str(log)}, capture_output=True, text=True, timeout=60)
    assert "refused this network connection" in res.stdout and "127.0.0.1" in log.read_text()


def test_local_and_cached_bases_pass_and_downloads_need_consent(tmp_path, monkeypatch):
    monkeypatch.delenv(models.ALLOW_DOWNLOADS_ENV, raising=False)
    models.check_base_available("tiny")
    models.check_base_available(str(models.TINY_DIR))  # a local folder
    with pytest.raises(models.BaseModelError, match="unknown base_model"):
        models.check_base_available("someone/some-model")
    # the same id, once in the local cache (the hub's layout), needs no network
    snap = tmp_path / "hub" / "models--someone--some-model" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--someone--some-model" / "refs").mkdir()
    (tmp_path / "hub" / "models--someone--some-model" / "refs" / "main").write_text("abc")
    import huggingface_hub.constants as hc
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    models.check_base_available("someone/some-model")
    monkeypatch.setenv(models.ALLOW_DOWNLOADS_ENV, "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    models.check_base_available("someone/other-model")  # left to from_pretrained, which may download
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(models.BaseModelError):  # the hub switched off wins over the consent
        models.check_base_available("someone/other-model")


# ----------------------------------------------------------------------------- the other JSON files


def test_json_writes_are_atomic_and_every_reader_names_the_file(tmp_path, monkeypatch):
    p = tmp_path / "x.json"
    jsonfile.write_json(p, {"a": 1})
    with pytest.raises(ValueError):
        jsonfile.write_json(p, {"a": float("nan")})  # fails before the rename: the old file stands
    assert json.loads(p.read_text()) == {"a": 1} and [f.name for f in tmp_path.iterdir()] == ["x.json"]
    # index.json of the figures (lib.style)
    from lib import style
    monkeypatch.setenv("GE_FIGURES_DIR", str(tmp_path / "fig"))
    idx = tmp_path / "fig" / "smoke" / "index.json"
    idx.parent.mkdir(parents=True)
    idx.write_text('{"fig1": {"caption": "x"')
    with pytest.raises(DamagedFileError, match=r"index\.json is not readable JSON.*notebook 05"):
        style.read_index("smoke")
    # gpu_timings.jsonl (lib.society.gpu_run): appended by an atomic rewrite; a damaged line is named
    t = tmp_path / "gpu_timings.jsonl"
    jsonfile.append_jsonl(t, {"generation": 0}, fix="f")
    jsonfile.append_jsonl(t, {"generation": 1}, fix="f")
    assert jsonfile.read_jsonl(t, fix="f") == [{"generation": 0}, {"generation": 1}]
    t.write_text(t.read_text() + '{"generation": 2, "wa\n')
    with pytest.raises(DamagedFileError, match=r"gpu_timings\.jsonl line 3 .*delete that line"):
        jsonfile.append_jsonl(t, {"generation": 3}, fix="delete that line")
    # the tiny base's build_info.json (lib.engines.models)
    (tmp_path / "build_info.json").write_text("{")
    with pytest.raises(DamagedFileError, match="build_info.json.*make tiny-base"):
        models.read_build_info(tmp_path)
