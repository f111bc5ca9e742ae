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


def test_accuracy_passes_ensemble_options_as_python_values():
    accuracy = _script("accuracy")
    assert accuracy._options(
        ["feature_subsample=0.5", "method=['kmeans', 'hc']", "linkage=ward"]
    ) == {
        "feature_subsample": 0.5,
        "method": ["kmeans", "hc"],
        "linkage": "ward",
    }
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        accuracy._options(["feature_subsample"])


def test_accuracy_rule_takes_the_stable_resolution_of_best_separated_partitions():
    import numpy as np
    from sklearn.datasets import make_blobs

    accuracy = _script("accuracy")
    # six tight blobs in three far pairs: K = 2 merges them badly, K = 6 is exact
    centres = [(x, y) for x in (0, 40, 80) for y in (0, 4)]
    X, truth = make_blobs(300, centers=centres, cluster_std=0.3, random_state=0)
    pairs = truth // 2
    mixed = (np.arange(300) % 2).astype(int)  # no structure: a poor 2-cluster partition
    ensemble = np.column_stack([mixed, mixed, truth, truth, pairs])
    ensemble[:5, 0] = -1  # an item a partition did not sample
    ks, scores = accuracy.ensemble_silhouettes(X, ensemble, seed=0)
    assert ks.tolist() == [2, 2, 6, 6, 3]
    record = {"k_candidates": [6], "n_clusters_chosen": 2}
    assert accuracy.ensemble_silhouette_candidate(record, ks, scores, 1.2) == 6
    # a candidate with no partition near it loses to one with any
    assert (
        accuracy.ensemble_silhouette_candidate(
            {"k_candidates": [4], "n_clusters_chosen": 2}, ks, scores, 1.2
        )
        == 2
    )
