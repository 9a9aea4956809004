"""The paper test-bed's trials (lib.society.paper_testbed): pools, the spaced task form, scoring, targets, the
config keys it adds. No model is loaded here (tests/test_smollm2.py runs a micro trial on SmolLM2)."""
from __future__ import annotations

import pytest

from lib.core.paths import REPO_ROOT
from lib.core.tasks import FAMILIES, Task, in_form, make_tasks, region, verify
from lib.society import paper_testbed as pt
from lib.society.config import load_file, validate_config
from lib.society.pools import evaluation_pool, founder_tasks, founder_seed, part_of, pools_for


def test_spaced_form_writes_strings_one_letter_a_token_and_keeps_the_task():
    for t in make_tasks("strings", 200, seed=3):
        s = in_form(t, "spaced")
        assert s.prompt == "rev " + " ".join(t.prompt[4:-2]) + " =" and s.answer == " ".join(t.answer)
        assert region(s) == region(t) and s.family == "strings"
        assert verify(s.answer, s) and not verify(t.answer, s)  # "dgb" is no answer to the spaced task
    for f in ("lists", "arith"):
        t = make_tasks(f, 1, seed=0)[0]
        assert in_form(t, "spaced") is t
    t = make_tasks("strings", 1, seed=0)[0]
    assert in_form(t) is t and in_form(t, "plain") is t
    with pytest.raises(ValueError, match="unknown task form"):
        in_form(t, "dotted")


@pytest.mark.parametrize("form", ["plain", "spaced"])
def test_eval_tasks_are_distinct_test_part_tasks_of_each_family_and_region(form):
    ts = pt.eval_tasks(40, seed=0, form=form)
    assert len(ts) == 40 * 2 * len(FAMILIES) and len({t.prompt for t in ts}) == len(ts)
    for f in FAMILIES:
        for g in ("familiar", "novel"):
            assert sum(t.family == f and region(t) == g for t in ts) == 40
    plain = pt.eval_tasks(40, seed=0)
    assert all(part_of(t) == "test" for t in plain)
    assert [in_form(t, form) for t in plain] == ts  # the same tasks, written in the form
    # the society's own test pool of seed 0 (n_test 40) draws from the same streams: the first 40 familiar and
    # the first 40 novel tasks of each hold all of it
    cfg = validate_config(load_file(REPO_ROOT / "configs" / "society" / "paper.yaml"))
    written = {in_form(t, cfg.task_form).prompt for t in plain}  # the pools are written in the config's form
    assert cfg.n_test == 40 and {t.prompt for t in evaluation_pool(cfg, 0, "test")} <= written


def test_warmup_never_trains_on_a_test_val_founder_or_novel_task():
    """The warm-up (lib.society.paper_testbed.warmup_tasks) trains on the familiar regions of each family's
    pretrain part only: no prompt of it is in any evaluation pool — the trials' test items, and test, val and
    every founder's training data of seeds 0-2 of the paper config — in either form."""
    for form in ("plain", "spaced"):
        warm = pt.warmup_tasks(300, form)
        assert len(warm) == 900 and all(region(t) == "familiar" for t in warm)
        prompts = {t.prompt for t in warm}
        assert len(prompts) == 900
        assert not prompts & {t.prompt for t in pt.eval_tasks(40, seed=0, form=form)}
    plain = pt.warmup_tasks(300)
    assert all(part_of(t) == "pretrain" for t in plain)
    cfg = validate_config(load_file(REPO_ROOT / "configs" / "society" / "paper.yaml"))
    assert cfg.task_form == "spaced"  # compared in the form the society writes its pools in
    prompts = {t.prompt for t in pt.warmup_tasks(300, cfg.task_form)}
    for seed in (0, 1, 2):
        p = pools_for(cfg, seed)
        assert not prompts & {t.prompt for t in p.test + p.val}
        for i, f in enumerate(cfg.families * 2):
            assert not prompts & {t.prompt for t in founder_tasks(cfg, f, founder_seed(seed, i))}
        assert not prompts & {t.prompt for t in pt.founder_training(f, 0, 500, seed, cfg.task_form)}


def test_founder_training_is_the_societys_founder_data_in_the_form():
    cfg = validate_config(load_file(REPO_ROOT / "configs" / "society" / "cpu.yaml"))
    for i, f in enumerate(FAMILIES):
        plain = founder_tasks(cfg, f, founder_seed(0, i))
        assert pt.founder_training(f, i, cfg.spec_train, 0) == plain
        assert pt.founder_training(f, i, 50, 0, "spaced") == [in_form(t, "spaced") for t in plain[:50]]


def test_score_counts_accuracy_and_parse_rate_per_family_and_region():
    tasks = [Task("lists", "sort 3 1 2 =", "1 2 3"), Task("lists", "sort 5 4 3 2 1 =", "1 2 3 4 5"),
             Task("strings", "rev a b c =", "c b a"), Task("arith", "add 99+50 =", "149")]
    outs = ["Answer: 1 2 3", "Answer: 1 2 3 4", "Answer: cba", "Answer: 99 + 50 = 149"]
    rows = {(r["family"], r["region"]): r for r in pt.score(outs, tasks, "spaced")}
    assert rows[("lists", "familiar")]["accuracy"] == 1.0 and rows[("lists", "novel")]["accuracy"] == 0.0
    assert rows[("lists", "all")] == {"family": "lists", "region": "all", "n": 2, "correct": 1, "accuracy": 0.5,
                                      "parse_rate": 1.0}
    assert rows[("strings", "familiar")]["parse_rate"] == 0.0  # unspaced letters are no answer of the spaced form
    assert pt.score(outs[2:3], tasks[2:3], "plain")[0]["parse_rate"] == 1.0
    assert rows[("arith", "novel")]["accuracy"] == 1.0 and ("arith", "familiar") not in rows


def _rows(base, founders):
    out = []
    for f in FAMILIES:
        for g, acc in zip(("familiar", "novel"), base[f]):
            out.append({"model": "base", "family": f, "region": g, "accuracy": acc, "parse_rate": 1.0})
        out.append({"model": "base", "family": f, "region": "all", "accuracy": sum(base[f]) / 2, "parse_rate": 0.96})
        out.append({"model": f"founder_{f}", "family": f, "region": "novel", "accuracy": founders[f],
                    "parse_rate": 1.0})
    return out


def test_targets_met_reads_the_preconditions():
    good = _rows({"lists": (0.9, 0.1), "strings": (0.8, 0.2), "arith": (0.6, 0.0)},
                 {"lists": 0.6, "strings": 0.9, "arith": 0.4})
    assert all(pt.targets_met(good).values())
    bad = _rows({"lists": (0.9, 0.3), "strings": (0.5, 0.2), "arith": (0.6, 0.0)},
                {"lists": 0.6, "strings": 0.9, "arith": 0.39})
    met = pt.targets_met(bad)
    assert not met["base_novel_low"] and not met["base_familiar"] and not met["founder_arith"]
    assert met["base_parses"] and met["founder_lists"] and met["founder_strings"]


def test_cli_refuses_a_mistake_with_status_2(tmp_path, capsys):
    assert pt.main(["--out", str(tmp_path)]) == 2
    assert pt.main(["--trial", "x", "--founders", "poems", "--out", str(tmp_path)]) == 2
    assert pt.main(["--trial", "x", "--warmup-from", str(tmp_path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "name the trial" in err and "poems" in err and "adapter_config.json" in err
    pt.append_rows(tmp_path / pt.CSV, [{"trial": "x", "model": "base"}])
    assert pt.main(["--trial", "x", "--out", str(tmp_path)]) == 2
    assert "already has rows" in capsys.readouterr().err


def test_new_config_keys_keep_every_existing_folders_hash():
    """base_adapter and task_form are keys of role later: at their defaults they are no part of a folder's
    identity, so the tiny base's folders keep their config hash; set, they are."""
    cfg = validate_config(load_file(REPO_ROOT / "configs" / "society" / "cpu.yaml"))
    assert cfg.base_adapter == "" and cfg.task_form == "plain"
    assert "base_adapter" not in cfg.core and "task_form" not in cfg.core
    other = validate_config({**dict(cfg), "task_form": "spaced"})
    assert other.core["task_form"] == "spaced" and other.hash != cfg.hash


def test_the_society_pools_are_written_in_the_configs_task_form():
    """task_form spaced: every pool of the loop holds the plain config's tasks, written spaced; they stay
    disjoint (the inheritance pool skips the conformity pool, selection skips val, in either form)."""
    from lib.society.pools import audit, conformity_pool, inheritance_pool, pool_part, unwritten
    plain = validate_config({**dict(load_file(REPO_ROOT / "configs" / "society" / "cpu.yaml")), "n_select": 20})
    spaced = validate_config({**dict(plain), "task_form": "spaced"})
    p, q = pools_for(plain, 0), pools_for(spaced, 0)
    for a, b in ((p.test, q.test), (p.val, q.val), (p.selection, q.selection),
                 (p.at(1).inheritance, q.at(1).inheritance),
                 (conformity_pool(plain, 0, 2), conformity_pool(spaced, 0, 2)),
                 (founder_tasks(plain, "strings", 1), founder_tasks(spaced, "strings", 1))):
        assert [in_form(t, "spaced") for t in a] == b and [unwritten(t) for t in b] == a
    assert any(t.family == "strings" and " " in t.answer for t in q.test)
    assert not {t.prompt for t in q.at(0).inheritance} & {t.prompt for t in conformity_pool(spaced, 0, 0)}
    assert not {t.prompt for t in q.selection} & {t.prompt for t in q.val}
    pools = audit(spaced, 0, pretraining=False)
    evals = {x for k in ("val", "test", "selection") for x in pools[k]}
    assert not evals & {x for k, v in pools.items() if pool_part(k) in ("founders", "children") for x in v}
    assert inheritance_pool(plain, 0, 0) == p.at(0).inheritance  # the plain form: pools as before


def test_warmup_stored_in_half_precision_merges_as_the_full_one(tmp_path):
    """make paper-base stores the warm-up in fp16 (pt.to_half): half the bytes, and merged into the base the
    weights differ from the fp32 adapter's merge by no more than fp16's rounding of the update."""
    import shutil

    import torch
    from safetensors.torch import load_file

    from lib.engines import lora, models
    from lib.society.founders import base_named_parameters
    base = models.load_base("tiny", device="cpu")
    warm = [t for t in pt.warmup_tasks(8)]
    lora.train_lora_on_tasks(base, warm, tmp_path / "full", epochs=1, seed=pt.WARMUP_LORA_SEED,
                             spec=lora.LoraSpec(r=4, alpha=8, lr=1e-2, batch_size=8))
    shutil.copytree(tmp_path / "full", tmp_path / "half")
    pt.to_half(tmp_path / "half")
    full_b = (tmp_path / "full" / lora.FILES[1]).stat().st_size
    half_b = (tmp_path / "half" / lora.FILES[1]).stat().st_size
    assert half_b < 0.6 * full_b
    assert {v.dtype for v in load_file(str(tmp_path / "half" / lora.FILES[1])).values()} == {torch.float16}

    def merged(folder):
        b = models.load_base("tiny", device="cpu", adapter=folder)
        return {n: p.detach().clone() for n, p in base_named_parameters(b)}
    w0 = {n: p.detach().clone() for n, p in base_named_parameters(base)}
    wf, wh = merged(tmp_path / "full"), merged(tmp_path / "half")
    moved = [n for n in w0 if not torch.equal(w0[n], wf[n])]
    assert moved  # the warm-up changed the weights
    for n in moved:
        delta = (wf[n] - w0[n]).abs().max()
        assert (wf[n] - wh[n]).abs().max() <= 2e-3 * delta + 1e-7, n
