"""The benchmark scripts that reach into the package still find what they time.

``benchmarks/scale.py`` times stages inside ``tl.pcc`` by wrapping the functions
``core.pcc._consensus`` calls; a rename there broke it without a failing test once.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_scale_times_the_stages_of_tl_pcc_and_restores_them():
    from scconsensus.core.pcc import _consensus

    scale = _script("scale")
    before = {name: getattr(_consensus, name) for name in scale.STAGES}
    out = scale.run_scconsensus(3000, n_jobs=1, extra={"fit_size": 1500})
    assert {"pairs", "solver", "extend", "ensemble", "pcc"} <= set(out["times"])
    assert out["n_found"] == 20 and out["ari"] > 0.9 and out["fit_size"] == 1500
    assert {name: getattr(_consensus, name) for name in scale.STAGES} == before


def test_scale_stage_timers_name_a_missing_function():
    scale = _script("scale")

    class Module:
        pcc = pcc_lowrank = coassociation = sampled_pairs = staticmethod(print)

    with pytest.raises(AttributeError, match="extend_checked"):
        with scale._stage_timers(Module, {}):
            pass
