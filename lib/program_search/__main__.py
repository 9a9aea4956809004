"""The program-search seed document's command line: ``python -m lib.program_search --seeds 8 --output DIR``.

Runs every method on seeds 0..N-1 at the seed's defaults and writes the seed's four output files
(``v2_program_search.csv``, ``v2_bracket_diagnostics.csv``, ``v2_program_costs.csv``,
``v2_program_summary.json``) and a manifest to ``--output``, then prints the final results as JSON.
``--reference`` runs the seed's per-state implementation
(:mod:`lib.program_search.reference`) instead of the batched one
(:mod:`lib.program_search.search`, which holds the search itself). Configs under
``configs/program_search/`` run through ``python -m lib.experiment`` instead.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from lib.core.errors import cli_main
from lib.core.manifest import now, write_manifest
from lib.core.paths import REPO_ROOT
from lib.program_search import search as ps
from lib.program_search import reference


def main(argv=None) -> int:
    """``python -m lib.program_search``: user errors -> one line on stderr and exit status 2."""
    return cli_main(_main, argv)


def _main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lib.program_search", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "results",
                        help="folder for the four output files (default, as the seed: <repo>/results)")
    parser.add_argument("--reference", action="store_true", help="use the seed's slow per-state implementation")
    args = parser.parse_args(argv)
    cfg = ps.validate_config({"experiment": "program_search", "kind": "program_search", "scale": "paper",
                              "seeds": args.seeds})
    started, t0 = now(), time.perf_counter()
    rows, diags, costs, summary = ps.run_all(ps.search_config(cfg),
                                             search=reference.one_run if args.reference else None)
    ps.write_outputs(args.output, rows, diags, costs, summary)
    write_manifest(args.output, cfg, started=started, wall_s=time.perf_counter() - t0, status="complete",
                   extra={"frozen_proposer": ps.FROZEN_NOTE, "cli": {"seeds": args.seeds, "reference": args.reference}})
    print(json.dumps(ps.strict_json({"final_results": [r for r in summary["aggregate"]
                                                       if r["generation"] == cfg["generations"]],
                                     "diagnostics": summary["diagnostics"]}), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
