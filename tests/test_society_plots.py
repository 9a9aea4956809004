"""Fig. 3 panels draw from the committed smoke rows; missing data is a clear error."""
from __future__ import annotations

import matplotlib
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
    for fig in (plots.draw_families(df), plots.draw_lineage(df)):
        assert len(fig.axes) >= 3
        matplotlib.pyplot.close(fig)
    last = plots.last_generation_table(df)
    assert set(last.columns) == {"arm", "seed", "value"} and last.value.between(0, 1).all()
    if data["sweep"] is not None:
        matplotlib.pyplot.close(plots.draw_g_sweep(data["sweep"]))


def test_missing_data_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(plots, "data_dir", lambda scale, exp: tmp_path / scale / exp)
    with pytest.raises(FileNotFoundError, match="configs/society/cpu.yaml"):
        plots.load_data("cpu")
