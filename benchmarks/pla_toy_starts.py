"""Why PLA's defaults reach a disagreement of about 0.22 on its paper's toy (issue 24).

The toy of ``accuracy.py --papers`` (Lange & Buhmann 2005): two bananas of 100 and 200
points (``vignettes/pla_toy.py``), 50 single-linkage partitions of 10 % subsamples, each
extended by the nearest sampled point, ``n_clusters=2``. Per seed: ``tl.pla``'s
defaults; EM (dense ``Z``, diagonal included) from the spectral start and from the truth
(both smoothed one-hot, as ``plan_consensus`` smooths its start), stopped at the default
``tol=1e-6`` and run to ``tol=1e-12``; the spectral start smoothed more (0.5, 0.9); the
k-means++-seeded starts of ``init="random"`` (``n_init`` 1, 3, 10); ``Z`` without its
diagonal. Prints the disagreement (eq. 28 of
the paper: 1 - accuracy after the best matching) and the final log-likelihood.

PLA's likelihood depends on the posteriors ``P`` and profiles ``W`` only through
``P Wᵀ``, which ``P T``, ``W T⁻ᵀ`` leave unchanged for any ``T`` with unit row sums that
keeps both non-negative: the fitted posteriors, hence the argmax labels, are not
identified, and EM stops on that ridge wherever its start leads. ``stretched`` is the
canonical point of the ridge with the most extreme posteriors (for ``K = 2``,
``p' = (p - min p) / (max p - min p)``), which does not depend on the start.

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/pla_toy_starts.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "vignettes"))


def toy(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, truth, ensemble)`` of the toy, as ``accuracy.paper_rows`` builds it."""
    from pla_toy import bananas

    from scconsensus.core.ensemble import PartitionOptions, generate_ensemble

    X, y = bananas(seed)
    ens = generate_ensemble(
        X, 50, "hc_single", k=2, random_state=seed, progress=False,
        options=PartitionOptions(subsample=0.1, predict_unsampled=True),
    )  # fmt: skip
    return X, y, ens.labels


def runs(seed: int) -> dict[str, tuple[float, float]]:
    """``{variant: (disagreement, log-likelihood)}`` for one seed."""
    import anndata as ad

    import scconsensus as scc
    from scconsensus.core._plan import smoothed_one_hot
    from scconsensus.core._spectral import spectral_consensus
    from scconsensus.core.pla import pla, pla_em
    from scconsensus.metrics import h_criterion

    X, y, ens = toy(seed)

    def dis(labels) -> float:
        return 1.0 - h_criterion(y, labels)

    adata = ad.AnnData(X)
    adata.obsm["scc_ensemble"] = ens
    scc.tl.pla(adata, n_clusters=2, random_state=seed, progress=False)
    out = {"tl.pla defaults": (dis(adata.obs["pla"].astype(str)), np.nan)}
    Z = sum((c[:, None] == c[None, :]).astype(float) for c in ens.T)
    starts = {"spectral": spectral_consensus(ens, 2, random_state=seed), "truth": y}
    for name, hard in starts.items():
        P0 = smoothed_one_hot(hard, 2)
        for tol in (1e-6, 1e-12):
            fit = pla_em(Z, 2, init=(P0, P0 / P0.sum(axis=0)), tol=tol, max_iter=50_000)
            a = fit.posteriors[:, 0]
            out[f"{name} start, tol {tol:g}"] = (dis(a > 0.5), fit.log_likelihood)
            stretched = (a - a.min()) / max(a.max() - a.min(), 1e-300)
            out[f"{name} start, tol {tol:g}, stretched"] = (dis(stretched > 0.5), np.nan)
        no_diag = Z - np.diag(np.diag(Z))
        fit = pla_em(no_diag, 2, init=(P0, P0 / P0.sum(axis=0)), tol=1e-12, max_iter=50_000)
        out[f"{name} start, tol 1e-12, Z without diagonal"] = (
            dis(fit.posteriors.argmax(axis=1)),
            np.nan,
        )
    for smoothing in (0.5, 0.9):
        P0 = smoothed_one_hot(starts["spectral"], 2, smoothing)
        fit = pla_em(Z, 2, init=(P0, P0 / P0.sum(axis=0)))
        out[f"spectral start smoothed {smoothing}, tol 1e-06"] = (
            dis(fit.posteriors.argmax(axis=1)),
            fit.log_likelihood,
        )
    for n_init in (1, 3, 10):
        res = pla(ens, 2, n_init=n_init, random_state=seed)
        out[f"k-means++ starts, n_init={n_init}"] = (dis(res.labels), res.log_likelihood)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    table = defaultdict(list)
    for seed in args.seeds:
        for variant, value in runs(seed).items():
            table[variant].append(value)
    seeds = " | ".join(f"seed {s}" for s in args.seeds)
    print(f"| variant | {seeds} | mean disagreement |")
    print("|---" * (len(args.seeds) + 2) + "|")
    for variant, values in table.items():
        cells = [f"{d:.3f}" + ("" if np.isnan(ll) else f" ({ll:,.3f})") for d, ll in values]
        mean = np.mean([d for d, _ in values])
        print(f"| {variant} | " + " | ".join(cells) + f" | {mean:.3f} |")


if __name__ == "__main__":
    main()
