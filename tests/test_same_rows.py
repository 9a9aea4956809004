"""benchmarks/same_rows.py compares results, not clocks: a file's wall-clock columns and keys are left out, and any
other change is still seen."""
from __future__ import annotations

import importlib.util
import json

from lib.core.paths import REPO_ROOT

_spec = importlib.util.spec_from_file_location("same_rows", REPO_ROOT / "benchmarks" / "same_rows.py")
same_rows = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(same_rows)


def test_a_files_clock_is_not_its_result_but_every_other_change_is(tmp_path):
    a, b, c = (tmp_path / f"{n}.csv" for n in "abc")
    a.write_text("seed,method,seconds_including_diagnostics,loss\n0,x,0.07,0.5\n")
    b.write_text("seed,method,seconds_including_diagnostics,loss\n0,x,0.11,0.5\n")  # another run's clock
    c.write_text("seed,method,seconds_including_diagnostics,loss\n0,x,0.07,0.6\n")  # another result
    assert same_rows.canonical(a) == same_rows.canonical(b) != same_rows.canonical(c)
    j1, j2, j3 = (tmp_path / f"{n}.json" for n in "123")
    j1.write_text(json.dumps({"costs": [{"wall_s": 1.0, "steps": 3}], "best": 0.5}))
    j2.write_text(json.dumps({"costs": [{"wall_s": 2.5, "steps": 3}], "best": 0.5}))
    j3.write_text(json.dumps({"costs": [{"wall_s": 1.0, "steps": 4}], "best": 0.5}))
    assert same_rows.canonical(j1) == same_rows.canonical(j2) != same_rows.canonical(j3)
