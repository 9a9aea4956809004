"""The tool-mutation results of the README (Fig. 2, S2), from ``data/<scale>/tool_mutation/``: the final
held-out MSE of every arm and the Fig. 2b comparisons (:func:`lib.tool_mutation.figures.final_comparisons`:
paired on seed, 95 % CI (sign-flip inversion), paired sign-flip p); the setup and the prose's numbers as
inline values."""
from __future__ import annotations

from typing import Callable

from lib.core.manifest import read_manifest
from lib.core.stats import t_ci
from lib.core.paths import data_dir
from lib.core.effects import delta_null, from_data, mean_ci, results_table, verdict
from lib.core.format import NO_DATA, p_text
from lib.tool_mutation.figures import final_comparisons, final_heldout, load_data

EXPERIMENT = "tool_mutation"
ARMS = ("sgd", "mutate_promote", "random_promote")
DIGITS = 4  # MSEs near 0.03: every number to 4 decimals


def load(scale: str) -> dict | None:
    """``{"rows", "final" (held-out loss at the last step per arm and seed), "comparisons" (the Fig. 2b
    summary, by comparison), "config" (the manifest's)}``; ``None`` without data."""
    folder = data_dir(scale, EXPERIMENT)
    manifest = read_manifest(folder) if folder.is_dir() else None
    if manifest is None:
        return None
    rows = load_data(scale)["rows"]
    final = final_heldout(rows)
    return {"rows": rows, "final": final, "comparisons": final_comparisons(final)[1].set_index("comparison"),
            "config": manifest["config"]}


@from_data(load, NO_DATA)
def tool_mutation_results(data: dict) -> str:
    """Fig. 2b: ``mutate_promote`` and ``random_promote`` against ``sgd``, and against each other."""
    return results_table([f"| 2b | `{r.arm}` − `{r.reference}` | {delta_null(r['mean'], r.lo, r.hi, DIGITS)} | "
                          f"{p_text(r.p)} | {int(r.n)} |" for _, r in data["comparisons"].iterrows()])


def arm_mse(arm: str) -> Callable[[str], str]:
    """The value function of one arm's final held-out MSE over seeds and its 95 % CI (t)."""
    @from_data(load, "—")
    def mse(data: dict) -> str:
        fin = data["final"]
        return mean_ci(*t_ci(fin.loc[fin["arm"] == arm, "value"]), DIGITS)
    return mse


@from_data(load, "no data yet")
def tool_mutation_setup(data: dict) -> str:
    """The heading's setup: seeds, SGD steps, the mutation interval and the mutants per round."""
    cfg = data["config"]
    return (f"{data['final']['seed'].nunique()} seeds, {int(data['rows']['step'].max())} SGD steps, a mutation "
            f"round every {int(cfg['mutate_every'])} steps, {int(cfg['n_variants'])} mutants")


@from_data(load, "—")
def tool_mutation_verdict(data: dict) -> str:
    """What ``mutate_promote`` does against plain ``sgd`` (lower loss is better): beats, ties, loses to."""
    r = data["comparisons"].loc["mutate_promote − sgd"]
    return verdict(r.lo, r.hi)


@from_data(load, "—")
def tool_mutation_random_factor(data: dict) -> str:
    """How many times ``sgd``'s final loss installing a random mutant ends at (ratio of the means)."""
    means = data["final"].groupby("arm")["value"].mean()
    return f"{means['random_promote'] / means['sgd']:.1f}"


TABLES: dict[str, Callable[[str], str]] = {"tool-mutation-results": tool_mutation_results}
VALUES: dict[str, Callable[[str], str]] = {
    **{f"tool-mutation-{arm}-mse": arm_mse(arm) for arm in ARMS},
    "tool-mutation-setup": tool_mutation_setup, "tool-mutation-verdict": tool_mutation_verdict,
    "tool-mutation-random-factor": tool_mutation_random_factor}
