"""``tl.k_null`` on data with groups and data without: does it tell them apart, at what cost?

For each dataset and seed: ``tl.ensemble(random_state=seed)`` and ``tl.pcc`` with the
defaults, then ``tl.k_null`` (3 reference draws). Prints one row per dataset and seed:
the chosen K, the data's ``λ_K(E_K)``, the draws' largest, the ratio of their cuts
(``(1 - draws' largest) / (1 - λ_K(E_K))``), whether ``k_null`` warned, and the CPU
seconds of ensemble + PCC beside those of ``k_null``.

The datasets without groups: Gaussian noise (isotropic, and with a decaying spectrum of
variances as a PCA has), Student t with 3 degrees of freedom (heavy tails), a uniform
cube, and one Gaussian with the covariance of pbmc68k_reduced's ``X_pca`` (a population
of one cell type with that data's shape); held out (looked at after the ratio's threshold
was set): log-normal (skewed), and Gaussian noise of 3,000 items in 50 dimensions. With
groups, held out: two Gaussian groups 5, 10 or 20 noise units apart in 5 dimensions
(``two_groups_<d>``), and ``accuracy.py``'s clear planted data (``clear_unequal``,
``nested``).

Run with one thread (``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1``)::

    python benchmarks/k_null.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np
from anndata import AnnData

sys.path.insert(0, os.path.dirname(__file__))
from accuracy import cpu, load

WITH_GROUPS = (
    "iris", "wine", "breast_cancer", "digits", "pbmc_bulk", "all_lineage", "krumsiek11",
    "planted_2000", "wine_scaled", "breast_cancer_scaled",
)  # fmt: skip
WITHOUT_GROUPS = (
    "gaussian", "gaussian_pca_spectrum", "student_t3", "uniform", "pbmc_gaussian",
    "lognormal", "gaussian_3000_50",
)  # fmt: skip
HELD_OUT = ("two_groups_5", "two_groups_10", "two_groups_20", "clear_unequal", "nested")


def made(name: str, seed: int, n: int = 1_000) -> AnnData:
    """Data made here (module docstring), the data's seed ``seed``."""
    rng = np.random.default_rng([seed, 7])
    if name == "gaussian":
        X = rng.normal(size=(n, 10))
    elif name == "gaussian_pca_spectrum":
        X = rng.normal(size=(n, 30)) * np.arange(30, 0, -1) ** 1.5
    elif name == "student_t3":
        X = rng.standard_t(3, size=(n, 10))
    elif name == "uniform":
        X = rng.uniform(size=(n, 10))
    elif name == "lognormal":
        X = rng.lognormal(size=(n, 10))
    elif name == "gaussian_3000_50":
        X = rng.normal(size=(3_000, 50))
    elif name.startswith("two_groups_"):
        X = rng.normal(size=(400, 5))
        X[:200, 0] += float(name.rsplit("_", 1)[1])
    elif name == "pbmc_gaussian":
        from scconsensus.core import gaussian_like

        X = gaussian_like(load("pbmc_bulk").obsm["X_pca"], 700, rng)
    else:
        raise ValueError(f"unknown dataset {name!r}")
    return AnnData(np.asarray(X, dtype=np.float32))


def row(name: str, seed: int) -> str:
    import scconsensus as scc

    here = name in WITHOUT_GROUPS or name.startswith("two_groups_")
    adata = made(name, seed) if here else load(name, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = cpu()
        scc.tl.ensemble(adata, random_state=seed, progress=False)
        scc.tl.pcc(adata, random_state=seed, progress=False)
        t1 = cpu()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scc.tl.k_null(adata, random_state=seed, progress=False)
    t2 = cpu()
    record = adata.uns["pcc"]
    K = record["n_clusters_chosen"]
    at = record["k_null"].set_index("n_clusters").loc[K]
    warned = any("stable than in data without groups" in str(w.message) for w in caught)
    return (
        f"| {name} | {seed} | {K} | {at.eigenvalue:.3f} | {at.null_max:.3f} | "
        f"{at.ratio:.2f} | {'yes' if warned else 'no'} | {t1 - t0:.1f} | {t2 - t1:.1f} |"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=[*WITH_GROUPS, *WITHOUT_GROUPS, *HELD_OUT])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args(argv)
    print(
        "| data | seed | K | λ_K(E_K) | draws' largest | ratio of cuts | warned "
        "| ensemble + pcc CPU s | k_null CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        for seed in args.seeds:
            print(row(name, seed), flush=True)


if __name__ == "__main__":
    main()
