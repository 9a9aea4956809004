"""Fig. 3 panels draw from the committed smoke rows; missing data is a clear error."""
from __future__ import annotations

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")

from lib.plots import society as plots  # noqa: E402


def test_panels_draw_from_smoke_rows():
    data = plots.load_data("smoke")
    df = data["rows"]
    assert set(plots.arms_in(df)) >= {"full", "no_grounding", "no_sex", "no_diversity"}
    for metric in ("test_overall", "consensus_acc", "diversity_behav", "selected_conformity"):
        fig = plots.draw_metric(df, metric, ylabel=metric, title="")
        assert fig.axes[0].lines, metric
        matplotlib.pyplot.close(fig)
    fig = plots.draw_families(df)
    assert len(fig.axes) >= 3
    matplotlib.pyplot.close(fig)
    fig = plots.draw_lineage(df)
    assert fig.axes[0].get_title() == f"full, seed {int(df.seed.min())}" and fig.axes[0].lines
    matplotlib.pyplot.close(fig)
    for metric in ("test_overall", "consensus_acc"):
        fig = plots.draw_metric_paired(df, metric, ylabel=metric)
        assert len(fig.axes) == 2 and fig.axes[1].collections, metric  # the per-seed difference dots
        matplotlib.pyplot.close(fig)
    last = plots.last_generation_table(df)
    assert set(last.columns) == {"arm", "seed", "value"} and last.value.between(0, 1).all()
    if data["sweep"] is not None:
        matplotlib.pyplot.close(plots.draw_g_sweep(data["sweep"]))


def test_missing_data_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(plots, "data_dir", lambda scale, exp: tmp_path / scale / exp)
    with pytest.raises(FileNotFoundError, match="configs/society/cpu.yaml"):
        plots.load_data("cpu")


def _rows(records):
    cols = ["experiment", "arm", "seed", "generation", "agent", "selected", "conformity", "score", "metric", "value"]
    return pd.DataFrame([dict(zip(cols, r)) for r in records])


def test_parents_are_decoded_in_lib():
    assert plots.decode_parents(403.0) == (4, 3) and plots.decode_parents(5) == (0, 5)
    df = _rows([("society", "full", 0, 1, 0, False, None, None, "parents", 102.0),
                ("society", "full", 0, 1, 1, False, None, None, "parents", 303.0),
                ("society", "full", 0, 1, 2, False, None, None, "test_overall", 0.5)])
    t = plots.parents_table(df)
    assert t[["parent_a", "parent_b", "copy"]].values.tolist() == [[1, 2, False], [3, 3, True]]
    assert plots.parents_wide(df).loc[("full", 0, 1)].tolist() == ["1+2", "3"]


def test_top_chain_follows_the_better_scoring_parent():
    # gen 2 agent 0 <- (0, 1) of gen 1; gen 1 agent 1 (score .9) <- (2, 2) of gen 0
    rec = [("society", "full", 0, 2, 0, False, None, None, "parents", 1.0),
           ("society", "full", 0, 1, 0, False, None, None, "parents", 1.0),
           ("society", "full", 0, 1, 1, False, None, None, "parents", 202.0)]
    sc = {(1, 0): 0.2, (1, 1): 0.9, (0, 0): 0.5, (0, 1): 0.1, (0, 2): 0.3}
    rec += [("society", "full", 0, t, a, True, 0.5, v, "val_overall", 0.5) for (t, a), v in sc.items()]
    df = _rows(rec)
    par = plots.parents_table(df)
    agents = df[df.metric == "val_overall"]
    assert plots.top_chain(par, agents, 2, 0) == [(2, 0), (1, 1), (0, 2)]
    assert plots.ancestry(par, 2, 0) == {(1, 0, 2, 0), (1, 1, 2, 0), (0, 0, 1, 0), (0, 1, 1, 0), (0, 2, 1, 1)}


def test_variants_are_compared_with_the_reference_of_their_tag():
    arms = ["full", "no_sex", "full@e1", "no_sex@e1", "no_grounding@e1"]
    assert plots.arm_reference("full", arms) is None
    assert plots.arm_reference("no_sex", arms) == "full"
    assert plots.arm_reference("full@e1", arms) == "full"
    assert plots.arm_reference("no_sex@e1", arms) == "full@e1"
    assert plots.arm_reference("no_sex@e2", arms) == "full"
    last = pd.DataFrame({"arm": [a for a in arms for _ in range(3)], "seed": [0, 1, 2] * len(arms),
                         "value": [0.5, 0.6, 0.7, 0.4, 0.5, 0.6, 0.6, 0.7, 0.8, 0.7, 0.8, 0.9, 0.6, 0.7, 0.8]})
    assert plots.arms_in(last) == ["full", "full@e1", "no_grounding@e1", "no_sex", "no_sex@e1"]
    _, summ = plots.paired_vs_reference(last)
    s = summ.set_index("arm")
    assert s.loc["no_sex", "mean"] == pytest.approx(-0.1) and s.loc["no_sex", "reference"] == "full"
    assert s.loc["no_sex@e1", "mean"] == pytest.approx(0.1) and s.loc["no_sex@e1", "reference"] == "full@e1"
    assert s.loc["full@e1", "reference"] == "full"
