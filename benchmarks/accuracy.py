"""Accuracy panel: labelled datasets x our methods x the tools users would otherwise use.

For every dataset and seed: the default ensemble (``tl.ensemble``), then PCC, PLA
and DPP with their defaults (K chosen from the data) and with the true K;
``tl.consensus_k`` (Monti consensus, K by PAC); ConsensusClusterPlus through
``scconsensus.r`` (n <= 3,000; at its best-PAC k and at the true K); KMeans(true
K), and KMeans started at the class means (what a centroid model reaches at the
truth: the ceiling of a k-means ensemble's consensus on Gaussian data); SC3s at the
true K (``--sc3s-python``, skipped with a line where sc3s cannot be imported); scanpy's
Leiden on the neighbours graph; the ensemble's median and best member. Prints
ARI (mean ± sd over seeds), the number of clusters found and CPU seconds
(process time, this process and its children) as one markdown table, then a
calibration table for our methods: AUROC of ``.obs[f"{key}_confidence"]`` for
telling misassigned cells (class other than their cluster's majority class) from
the others, and the expected calibration error (ECE, ten bins).

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/accuracy.py
    python benchmarks/accuracy.py --datasets iris wine --seeds 0 1 2 --no-r
    python benchmarks/accuracy.py --methods dpp   # only the DPP rows
    python benchmarks/accuracy.py --k-found --datasets iris clear_unequal --seeds 0
    python benchmarks/accuracy.py --ensemble feature_subsample=0.5   # another ensemble

``--k-found`` prints instead the K that each chooser a user might take returns
(scconsensus's defaults, consensus_k's least PAC, SC3's Tracy-Widom estimate, the
k-means silhouette, Leiden at resolution 1, DPP's KVI) and simple rules on
``select_k``'s evidence, with the mean |log(K / K_true)| over the panel and over the clear
planted data (``clear_equal``, ``clear_unequal``, ``nested``: :func:`clear_groups`).

Datasets: iris, wine, breast_cancer, digits (scikit-learn); pbmc68k_reduced
against ``bulk_labels`` and against ``louvain``; Bioconductor's ALL (B/T
lineage and BT subtype; needs R); scanpy's krumsiek11; 20 planted Gaussian
clusters in 50 dimensions at n = 2,000 / 10,000 / 100,000.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from functools import partial

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

DATASETS = (
    "iris",
    "wine",
    "breast_cancer",
    "digits",
    "pbmc_bulk",
    "pbmc_louvain",
    "all_lineage",
    "all_bt",
    "krumsiek11",
    "wine_scaled",
    "breast_cancer_scaled",
    "planted_2000",
    "planted_10000",
    "planted_100000",
)
#: Clear planted data for the "K found" table (``--k-found``): 20 Gaussian groups of equal
#: or Dirichlet(2) sizes, and 4 lineages of 5 types each (nested); the data seed is the run's.
CLEAR = ("clear_equal", "clear_unequal", "nested")
CCP_MAX_N = 3_000
#: Classes of each dataset run, for the "K found" column.
TRUE_K: dict[str, int] = {}


def clear_groups(name: str, n: int = 2_000, seed: int = 0, groups: int = 20):
    """``AnnData`` of ``groups`` (20) clear Gaussian groups in 50 dimensions (unit noise).

    ``clear_equal`` / ``clear_unequal``: centres N(0, 3²) (smallest distance between
    centres about 20-25 against a noise norm of about 10), equal or Dirichlet(2) sizes.
    ``nested``: ``groups / 5`` lineage centres N(0, 5²), each with 5 type centres at N(0,
    1.2²) from it (types of one lineage about 17 apart, lineages about 70):
    ``.obs["truth"]`` the types, ``.obs["lineage"]`` the lineages.
    """
    import pandas as pd
    from anndata import AnnData

    rng = np.random.default_rng(seed)
    dim = 50
    if name == "nested":
        if groups % 5:
            raise ValueError(f"nested data hold 5 types per lineage: groups={groups}")
        lineages = rng.normal(scale=5.0, size=(groups // 5, dim))
        centres = np.repeat(lineages, 5, axis=0) + rng.normal(scale=1.2, size=(groups, dim))
    else:
        centres = rng.normal(scale=3.0, size=(groups, dim))
    weights = rng.dirichlet(np.full(groups, 2.0)) if name == "clear_unequal" else None
    truth = rng.choice(groups, size=n, p=weights) if weights is not None else np.arange(n) % groups
    X = (centres[truth] + rng.standard_normal((n, dim))).astype(np.float32)
    obs = pd.DataFrame({"truth": pd.Categorical(truth.astype(str))})
    obs["lineage"] = pd.Categorical((truth // 5).astype(str))
    obs.index = obs.index.astype(str)
    return AnnData(X, obs=obs)


def load(name: str, seed: int = 0):
    """``AnnData`` with ``.obs["truth"]`` for one panel dataset (``seed``: the data's, for
    the clear planted data only)."""
    import scanpy as sc

    import scconsensus as scc

    if name in CLEAR:
        return clear_groups(name, seed=seed)

    if name in ("iris", "wine", "breast_cancer", "digits"):
        return getattr(scc.datasets, name)()
    if name in ("wine_scaled", "breast_cancer_scaled"):
        # the panel keeps the raw units (its figures since the first session); these
        # scale them as tl.ensemble's warning advises (one feature holds 99.8 % of wine's
        # variance), for comparison
        adata = getattr(scc.datasets, name.removesuffix("_scaled"))()
        sc.pp.scale(adata)
        return adata
    if name.startswith("pbmc"):
        adata = scc.datasets.pbmc68k_reduced()
        if name == "pbmc_louvain":
            adata.obs["truth"] = adata.obs["louvain"].astype("category")
        return adata
    if name.startswith("all_"):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "vignettes"))
        from ccp_all import load_all

        adata = load_all()
        adata.obs["truth"] = adata.obs["lineage" if name == "all_lineage" else "BT"]
        return adata
    if name == "krumsiek11":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            adata = sc.datasets.krumsiek11()
        adata.obs_names_make_unique()
        adata.obs["truth"] = adata.obs["cell_type"].astype("category")
        return adata
    if name.startswith("planted_"):
        from scale import _adata, make_blobs

        return _adata(*make_blobs(int(name.split("_")[1]), seed=0))
    raise ValueError(f"unknown dataset {name!r}; choose from {DATASETS}")


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(fn: Callable[[], np.ndarray]) -> tuple[np.ndarray, float]:
    t0 = cpu()
    labels = fn()
    return np.asarray(labels), cpu() - t0


def _labels(adata, key):
    codes = adata.obs[key].cat.codes.to_numpy()
    return codes


METHODS = ("pcc", "pla", "dpp", "others", "sc3s", "leiden_ensemble", "mixed_ensemble")
#: Interpreter that runs SC3s (``--sc3s-python``: its pins may need an environment of its own).
SC3S_PYTHON = [sys.executable]


def run_dataset(
    name: str, seed: int, use_r: bool, methods=METHODS
) -> dict[str, tuple[float, int, float]]:
    """``{tool: (ari, n_clusters, cpu_seconds)}`` for one dataset and seed.

    ``methods``: which rows to compute (``"others"``: the ensemble's members, KMeans,
    Leiden, consensus-k and ConsensusClusterPlus).
    """
    import scconsensus as scc
    from scconsensus.metrics import adjusted_rand_index as ari

    adata = load(name)
    truth = adata.obs["truth"].cat.codes.to_numpy()
    K = TRUE_K[name] = int(adata.obs["truth"].nunique())
    out = {}

    def record(tool, labels, secs, key=None):
        found = labels[labels >= 0]
        out[tool] = (ari(truth, labels), int(np.unique(found).size), secs, *_calib(key))

    def _calib(key):
        if key is None:
            return ()
        from scconsensus import metrics

        labels_ok = adata.obs[key].notna().to_numpy()
        codes = adata.obs[key].cat.codes.to_numpy()[labels_ok]
        right = metrics.majority_correct(truth[labels_ok], codes)
        conf = adata.obs[f"{key}_confidence"].to_numpy()[labels_ok]
        auroc = metrics.confidence_auroc(conf, right)
        base = _baseline_auroc(adata, key, right, labels_ok) if adata.n_obs <= CCP_MAX_N else np.nan
        return (auroc, metrics.expected_calibration_error(conf, right), base)

    t_ens = 0.0
    if {"pcc", "pla", "others"} & set(methods):
        _, t_ens = timed(lambda: scc.tl.ensemble(adata, random_state=seed, **ENSEMBLE_OPTIONS))
    if "others" in methods:
        L = adata.obsm["scc_ensemble"]
        member = [ari(truth[c >= 0], c[c >= 0]) for c in L.T]
        out["ensemble median member"] = (float(np.median(member)), 0, t_ens)
        out["ensemble best member"] = (float(np.max(member)), 0, t_ens)

    def consensus(method, key, **kw):
        getattr(scc.tl, method)(adata, random_state=seed, key_added=key, **kw)
        return _labels(adata, key)

    for method in ("pcc", "pla", "dpp"):
        if method not in methods:
            continue
        # DPP works on the data, not on the ensemble: its time excludes the ensemble's
        t_in = t_ens if method != "dpp" else 0.0
        lab, t = timed(partial(consensus, method, method))
        record(f"{method} (defaults)", lab, t + t_in, method)
        lab, t = timed(partial(consensus, method, f"{method}_k", n_clusters=K))
        record(f"{method} (true K)", lab, t + t_in, f"{method}_k")
    if "others" in methods:
        _baselines(adata, seed, K, truth, use_r, record)
    if "leiden_ensemble" in methods:
        lab, t = timed(partial(_leiden_ensemble, adata, seed))
        record("pcc on a Leiden ensemble (defaults)", lab, t, "pcc_leiden")
    if "mixed_ensemble" in methods:
        lab, t = timed(partial(_leiden_ensemble, adata, seed, ["kmeans", "leiden"], "pcc_mixed"))
        record("pcc on a k-means + Leiden ensemble (defaults)", lab, t, "pcc_mixed")
    if "sc3s" in methods:
        found = _sc3s(adata, seed, K)
        if found is not None:
            record("SC3s (true K)", *found)
    return out


def _leiden_ensemble(adata, seed: int, method="leiden", key="pcc_leiden") -> np.ndarray:
    """``tl.ensemble(method=method)`` (Leiden on scanpy's neighbours graph, or a list with
    it), then ``tl.pcc()``."""
    import scanpy as sc

    import scconsensus as scc

    if "neighbors" not in adata.uns:
        sc.pp.neighbors(adata, use_rep="X_pca" if "X_pca" in adata.obsm else "X")
    # the default key: the rows before this one are done with their own ensemble
    scc.tl.ensemble(adata, method=method, random_state=seed, **ENSEMBLE_OPTIONS)
    scc.tl.pcc(adata, random_state=seed, key_added=key)
    return _labels(adata, key)


_SC3S_CHILD = """
import sys, time, numpy as np, pandas as pd, anndata as ad, sc3s
X = np.load(sys.argv[1]); K, seed = int(sys.argv[3]), int(sys.argv[4])
a = ad.AnnData(obs=pd.DataFrame(index=[str(i) for i in range(X.shape[0])]))
a.obsm["X_pca"] = X
c = time.process_time()
sc3s.tl.consensus(a, n_clusters=[K], random_state=seed)
np.save(sys.argv[2], a.obs[f"sc3s_{K}"].astype(int).to_numpy())
print(time.process_time() - c)
"""


def _sc3s(adata, seed: int, K: int) -> tuple[np.ndarray, float] | None:
    """SC3s (Quah et al. 2021) at the true K on the representation KMeans' row clusters
    (``X_pca``, else ``X``), in ``SC3S_PYTHON``; ``None`` with a line when it is absent."""
    import subprocess
    import tempfile

    X = adata.obsm["X_pca"] if "X_pca" in adata.obsm else adata.X
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "x.npy"), os.path.join(tmp, "labels.npy")
        np.save(src, X)
        cmd = [*SC3S_PYTHON, "-c", _SC3S_CHILD, src, dst, str(K), str(seed)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"SC3s skipped ({done.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
            return None
        return np.load(dst), float(done.stdout.strip().splitlines()[-1])


def _baselines(adata, seed, K, truth, use_r, record):
    """KMeans, Leiden, consensus-k and ConsensusClusterPlus rows."""
    import scanpy as sc
    from sklearn.cluster import KMeans

    X = adata.obsm["X_pca"] if "X_pca" in adata.obsm else adata.X
    lab, t = timed(lambda: KMeans(K, random_state=seed, n_init=10).fit_predict(X))
    record("KMeans (true K)", lab, t)
    # What a centroid model reaches at the truth: k-means started at the class means
    # (the ceiling of a k-means ensemble's consensus on Gaussian data).
    means = np.stack([np.asarray(X[truth == c]).mean(axis=0) for c in range(K)])
    lab, t = timed(lambda: KMeans(K, init=means, n_init=1).fit_predict(X))
    record("KMeans from the class means", lab, t)

    def leiden():
        if "neighbors" not in adata.uns:
            sc.pp.neighbors(adata, use_rep="X_pca" if "X_pca" in adata.obsm else "X")
        sc.tl.leiden(adata, random_state=seed, flavor="igraph", n_iterations=2)
        return _labels(adata, "leiden")

    lab, t = timed(leiden)
    record("scanpy Leiden", lab, t)
    if adata.n_obs <= CCP_MAX_N:
        lab, t = timed(lambda: _consensus_k(adata, seed))
        record("tl.consensus_k (best PAC)", lab, t)
        if use_r:
            for tool, (lab, t) in _ccp(adata, seed, K).items():
                record(tool, lab, t)


def _consensus_k(adata, seed):
    import scconsensus as scc

    scc.tl.consensus_k(adata, max_k=10, reps=50, random_state=seed, key_added="ck")
    best = int(adata.uns["ck"]["best_k"])
    return _labels(adata, f"ck_k{best}")


def _ccp(adata, seed, K):
    from scconsensus.r import consensus_cluster_plus

    t0 = cpu()
    consensus_cluster_plus(adata, max_k=max(10, K), reps=50, seed=seed + 1, key_added="ccp")
    t = cpu() - t0
    best = int(adata.uns["ccp"]["best_k"])
    return {
        "ConsensusClusterPlus (best PAC)": (_labels(adata, f"ccp_k{best}"), t),
        "ConsensusClusterPlus (true K)": (_labels(adata, f"ccp_k{K}"), t),
    }


def table(results: dict[str, dict[str, list[tuple[float, int, float]]]]) -> str:
    """Markdown: one row per tool, one column per dataset, ``ARI ± sd (K) CPU s``."""
    names = list(results)
    tools = list(dict.fromkeys(t for r in results.values() for t in r))
    lines = [
        "| tool | " + " | ".join(names) + " | mean ARI | mean abs log(K / K_true) |",
        "|---" * (len(names) + 3) + "|",
    ]
    for tool in tools:
        cells, means, klog = [], [], []
        for name in names:
            runs = results[name].get(tool)
            if not runs:
                cells.append("–")
                continue
            a = np.array([r[0] for r in runs])
            ks = sorted({r[1] for r in runs})
            secs = np.mean([r[2] for r in runs])
            kk = "" if ks == [0] else f" ({'/'.join(map(str, ks))})"
            cells.append(f"{a.mean():.2f} ± {a.std():.2f}{kk} {secs:.1f}s")
            means.append(a.mean())
            if ks != [0]:
                klog.append(np.mean([abs(np.log(r[1] / TRUE_K[name])) for r in runs]))
        mean = f"{np.mean(means):.2f}" if len(means) == len(names) else "–"
        kerr = f"{np.mean(klog):.2f}" if len(klog) == len(names) else "–"
        lines.append(f"| {tool} | " + " | ".join(cells) + f" | {mean} | {kerr} |")
    return "\n".join(lines)


def _baseline_auroc(adata, key, right, labelled) -> float:
    """AUROC of the issue's baseline: each cell's mean co-association with its own cluster
    (same ensemble, same labels)."""
    from scconsensus import metrics
    from scconsensus.core import coassociation

    C, N = coassociation(adata.obsm["scc_ensemble"][labelled])
    F = C / np.maximum(N, 1)
    codes = adata.obs[key].cat.codes.to_numpy()[labelled]
    own = np.array([F[i, codes == codes[i]].mean() for i in range(codes.size)])
    return metrics.confidence_auroc(own, right)


def calibration_table(results) -> str:
    """Markdown: per consensus row and dataset, confidence ``AUROC / ECE`` (mean over seeds),
    and the mean AUROC of the baseline (each cell's mean co-association with its own
    cluster, same ensemble and labels; n <= 3,000).

    ``–`` where every cell is right (nothing to rank) or the row has no confidence.
    """
    names = list(results)
    tools = list(dict.fromkeys(t for r in results.values() for t in r))
    lines = [
        "| tool (AUROC / ECE) | "
        + " | ".join(names)
        + " | mean AUROC | mean ECE | baseline mean AUROC |",
        "|---" * (len(names) + 4) + "|",
    ]
    for tool in tools:
        cells, aurocs, eces, bases = [], [], [], []
        for name in names:
            runs = [r for r in results[name].get(tool, []) if len(r) == 6 and np.isfinite(r[3])]
            if not runs:
                cells.append("–")
                continue
            ec = np.mean([r[4] for r in runs])
            cells.append(f"{np.mean([r[3] for r in runs]):.2f} / {ec:.3f}")
            aurocs.append(np.mean([r[3] for r in runs]))
            eces.append(ec)
            bases.extend(r[5] for r in runs if np.isfinite(r[5]))
        if aurocs:
            base = f"{np.mean(bases):.2f}" if bases else "–"
            means = f"{np.mean(aurocs):.2f} | {np.mean(eces):.3f} | {base}"
            lines.append(f"| {tool} | " + " | ".join(cells) + f" | {means} |")
    return "\n".join(lines)


#: Largest K the range-scanning choosers (PAC, silhouette) consider; 20 planted groups fit.
KMAX = 25
#: Options of every ``tl.ensemble`` call of a run (``--ensemble NAME=VALUE``).
ENSEMBLE_OPTIONS: dict = {}
#: First drop of λ_K(E_K) that counts as a split (``select_k``'s default threshold).
THRESHOLD = 0.05


def sc3_estimate_k(X) -> int:
    """SC3's estimate of k (Kiselev et al. 2017, ``estkTW`` in hemberg-lab/SC3): how many
    eigenvalues of the cells' Gram matrix of the data, each cell scaled to mean 0 and
    variance 1 over the genes, exceed the Tracy-Widom bound of Patterson et al. (2006)
    at its 0.001 tail point (3.273)."""
    D = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float).T  # genes x cells
    n, p = D.shape
    sd = D.std(axis=0, ddof=1)
    x = (D - D.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    mu = (np.sqrt(n - 1) + np.sqrt(p)) ** 2
    sigma = (np.sqrt(n - 1) + np.sqrt(p)) * (1 / np.sqrt(n - 1) + 1 / np.sqrt(p)) ** (1 / 3)
    # the non-zero eigenvalues of x'x are the squared singular values of x
    evals = np.linalg.svd(x, compute_uv=False) ** 2
    return int((evals > 3.273 * sigma + mu).sum())


def silhouette_k(X, seed: int, kmax: int) -> int:
    """The K in 2..kmax whose k-means (10 starts) has the highest mean silhouette."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    scores = {}
    for k in range(2, min(kmax, X.shape[0] - 1) + 1):
        labels = KMeans(k, n_init=10, random_state=seed).fit_predict(X)
        scores[k] = silhouette_score(X, labels)
    return max(scores, key=scores.get)


def drop_rules(table) -> dict[str, int]:
    """K of simple rules on ``select_k``'s own evidence (its ``drop`` column)."""
    Ks, drop = table["n_clusters"].to_numpy(), table["drop"].to_numpy()
    strongest = int(np.argmax(drop))

    def first(at_least):
        hit = np.flatnonzero(drop >= at_least)
        return int(Ks[hit[0]] if hit.size else Ks[strongest])

    chosen = table["n_clusters"][table["chosen"].astype(bool)]
    return {
        # select_k's own K, before PCC drops clusters without mass
        "rule: select_k (the default: first drop >= 0.05, weak coarse levels skipped)": int(
            chosen.iloc[0]
        ),
        "rule: first drop >= 0.05 (select_k before 2026-11-25)": first(THRESHOLD),
        "rule: strongest drop": int(Ks[strongest]),
        "rule: first drop >= 0.4 of the strongest": first(max(THRESHOLD, 0.4 * drop[strongest])),
        "rule: first split >= 0.3 of the strongest (a run of drops is one split)": (
            _relative_split(Ks, drop, table["envelope"].to_numpy(), 0.3)
        ),
        "rule: first drop >= half the strongest": first(max(THRESHOLD, drop[strongest] / 2)),
        "rule: first drop >= 0.10": first(0.10),
        # the finest stable resolution: the last K whose drop reaches the threshold
        "rule: last drop >= 0.05": int(Ks[np.flatnonzero(drop >= THRESHOLD)[-1]])
        if (drop >= THRESHOLD).any()
        else int(Ks[strongest]),
    }


def _relative_split(Ks, drop, envelope, share: float) -> int:
    """The first run of consecutive K whose drop reaches the threshold and whose fall of
    the running minimum is at least ``share`` of the strongest run's, at its largest drop
    (tried as select_k's rule on 2026-11-25 and not kept: see benchmarks/README.md)."""
    from scconsensus.core._splits import _runs

    runs = _runs(drop, envelope, THRESHOLD)
    if not runs:
        return int(Ks[np.argmax(drop)])
    fall = [envelope[a] - (envelope[b - 1] - drop[b - 1]) for a, b in runs]
    a, b = next(r for r, f in zip(runs, fall, strict=True) if f >= share * max(fall))
    return int(Ks[a + int(np.argmax(drop[a:b]))])


def k_found_dataset(
    name: str, seed: int, kmax: int, rules_only: bool = False
) -> dict[str, tuple[int, float]]:
    """``{chooser: (K, cpu_seconds)}`` of every K-chooser on one dataset and seed
    (``rules_only``: the defaults and the rules on their evidence only)."""
    import scanpy as sc

    import scconsensus as scc

    adata = load(name, seed)
    TRUE_K[name] = int(adata.obs["truth"].nunique())
    rep = "X_pca" if "X_pca" in adata.obsm else None
    X = adata.obsm[rep] if rep else np.asarray(adata.X)
    out = {}

    def defaults():
        scc.tl.ensemble(adata, random_state=seed, **ENSEMBLE_OPTIONS)
        scc.tl.pcc(adata, random_state=seed, key_added="auto")
        return adata.obs["auto"].nunique()

    def pac():
        scc.tl.consensus_k(adata, max_k=kmax, reps=50, random_state=seed, key_added="ck")
        return adata.uns["ck"]["best_k"]

    def leiden():
        sc.pp.neighbors(adata, use_rep=rep or "X")
        sc.tl.leiden(adata, resolution=1.0, random_state=seed, flavor="igraph", n_iterations=2)
        return adata.obs["leiden"].nunique()

    def dpp():
        scc.tl.dpp(adata, random_state=seed, key_added="dpp_auto")
        return adata.obs["dpp_auto"].nunique()

    choosers = {
        "scconsensus defaults (tl.pcc labels)": defaults,
        "consensus_k, least PAC": pac,
        "SC3 estimate (Tracy-Widom)": lambda: sc3_estimate_k(adata.X),
        "k-means silhouette": lambda: silhouette_k(X, seed, kmax),
        "scanpy Leiden, resolution 1": leiden,
        "DPP, KVI": dpp,
    }
    if rules_only:
        choosers = dict(list(choosers.items())[:1])
    for chooser, fn in choosers.items():
        K, secs = timed(fn)
        out[chooser] = (int(K), secs)
    for rule, K in drop_rules(adata.uns["auto"]["k_selection"]).items():
        out[rule] = (K, 0.0)
    out["rule: the stable resolution of best k-means silhouette"] = timed(
        lambda: best_silhouette_candidate(adata.uns["auto"], X, seed)
    )
    t0 = cpu()
    ks, scores = ensemble_silhouettes(X, adata.obsm["scc_ensemble"], seed)
    secs = cpu() - t0
    for factor in (1.2, 1.3, 1.4):
        out[f"rule: the stable resolution with the best-separated partition within x{factor}"] = (
            ensemble_silhouette_candidate(adata.uns["auto"], ks, scores, factor),
            secs,  # the silhouettes: the rule itself costs nothing more
        )
    return out


def ensemble_silhouettes(X, ensemble, seed: int, max_items: int = 2_000):
    """Each partition's number of clusters and mean silhouette (Euclidean, in ``X``) on
    at most ``max_items`` items it sampled."""
    from sklearn.metrics import pairwise_distances, silhouette_samples

    rows = np.random.default_rng(seed).choice(X.shape[0], min(X.shape[0], max_items), False)
    rows = np.sort(rows)
    D = pairwise_distances(np.asarray(X, dtype=float)[rows])
    ks, scores = [], []
    for labels in ensemble[rows].T:
        seen = labels >= 0
        k = np.unique(labels[seen]).size
        if 2 <= k < seen.sum():
            ks.append(k)
            scores.append(
                silhouette_samples(D[np.ix_(seen, seen)], labels[seen], metric="precomputed").mean()
            )
    return np.array(ks), np.array(scores)


def ensemble_silhouette_candidate(record: dict, ks, scores, factor: float) -> int:
    """Among ``select_k``'s stable resolutions (and its K), the one whose neighbourhood (k
    within ``factor`` of it) holds the ensemble partition of highest mean silhouette
    (tried as a K-chooser on 2026-11-27, not kept: see benchmarks/README.md)."""
    Ks = sorted({int(K) for K in record["k_candidates"]} | {int(record["n_clusters_chosen"])})

    def best(K):
        near = (ks >= K / factor) & (ks <= K * factor)
        return scores[near].max() if near.any() else -1.0

    return max(Ks, key=best)


def best_silhouette_candidate(record: dict, X, seed: int) -> int:
    """Among ``select_k``'s stable resolutions (its K when there is none), the K whose
    k-means (10 starts) has the highest mean silhouette on ``X``."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    Ks = sorted({int(K) for K in record["k_candidates"]} | {int(record["n_clusters_chosen"])})
    scores = {
        K: silhouette_score(X, KMeans(K, n_init=10, random_state=seed).fit_predict(X)) for K in Ks
    }
    return max(scores, key=scores.get)


def k_table(results: dict[str, dict[str, list[tuple[int, float]]]]) -> str:
    """Markdown: per chooser and dataset the K found (one per seed), the mean
    |log(K / K_true)| over the panel and over the clear planted data."""
    names = list(results)
    tools = list(dict.fromkeys(t for r in results.values() for t in r))
    lines = [
        "| chooser | "
        + " | ".join(f"{n} ({TRUE_K[n]})" for n in names)
        + " | panel mean abs log(K / K_true) | planted mean abs log(K / K_true) | mean CPU s |",
        "|---" * (len(names) + 4) + "|",
    ]
    for tool in tools:
        cells, err, secs = [], {"panel": [], "planted": []}, []
        for name in names:
            runs = results[name].get(tool, [])
            cells.append("/".join(str(K) for K, _ in runs) or "–")
            part = "planted" if name in CLEAR else "panel"
            err[part] += [abs(np.log(max(K, 1) / TRUE_K[name])) for K, _ in runs]
            secs += [t for _, t in runs]
        means = [f"{np.mean(v):.2f}" if v else "–" for v in err.values()]
        lines.append(
            f"| {tool} | " + " | ".join(cells) + f" | {' | '.join(means)} | {np.mean(secs):.1f} |"
        )
    return "\n".join(lines)


def k_found(datasets, seeds, kmax: int, rules_only: bool = False) -> str:
    """The "K found" table over ``datasets`` and ``seeds``."""
    results = {}
    for name in datasets:
        per_tool = defaultdict(list)
        for seed in seeds:
            for tool, value in k_found_dataset(name, seed, kmax, rules_only).items():
                per_tool[tool].append(value)
        results[name] = dict(per_tool)
        print(f"# {name} done\n{k_table(results)}", file=sys.stderr, flush=True)
    return k_table(results)


def paper_rows(seeds) -> str:
    """The papers' own results through ``tl``'s defaults, one markdown table.

    Lourenço et al. (2015), Sect. 7.1: JS between PCC's memberships and the soft truth
    (paper: 0.0012) with ``n_clusters`` = 4 (exact), 8 (a maximum) and ``"auto"``;
    Lange & Buhmann (2005), toy data: PLA's disagreement with the truth (paper:
    0.13-0.16) on 50 single-linkage partitions of 10 % subsamples, ``n_clusters=2``.
    """
    import anndata as ad

    import scconsensus as scc
    from scconsensus.core.ensemble import PartitionOptions, generate_ensemble
    from scconsensus.metrics import h_criterion, js_criterion

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "vignettes"))
    from pla_toy import bananas

    rows = {"PCC 7.1 JS, n_clusters=4": [], "PCC 7.1 JS, n_clusters=8": []}
    rows["PCC 7.1 JS, n_clusters='auto'"] = []
    rows["PLA toy disagreement, defaults"] = []
    for seed in seeds:
        soft = scc.datasets.soft_gaussian_mixture(
            n_per_component=200, n_partitions=1000, random_state=seed
        )
        for K in (4, 8, "auto"):
            scc.tl.pcc(soft, n_clusters=K, random_state=seed, progress=False)
            js = js_criterion(soft.obsm["pcc_membership"], soft.obsm["soft_truth"])
            rows[f"PCC 7.1 JS, n_clusters={K!r}"].append(js)
        X, y = bananas(seed)
        ens = generate_ensemble(
            X,
            50,
            "hc_single",
            k=2,
            random_state=seed,
            progress=False,
            options=PartitionOptions(subsample=0.1, predict_unsampled=True),
        )
        toy = ad.AnnData(X)
        toy.obsm["scc_ensemble"] = ens.labels
        scc.tl.pla(toy, n_clusters=2, random_state=seed, progress=False)
        rows["PLA toy disagreement, defaults"].append(
            1 - h_criterion(y, toy.obs["pla"].astype(str))
        )
    lines = ["| paper result (defaults) | mean ± sd over seeds |", "|---|---|"]
    lines += [f"| {k} | {np.mean(v):.4f} ± {np.std(v):.4f} |" for k, v in rows.items()]
    return "\n".join(lines)


def warm_up() -> None:
    """Compile the numba kernels before timing (a one-off, cached on disk per version)."""
    import anndata as ad
    import scanpy as sc

    import scconsensus as scc

    X = np.random.default_rng(0).normal(size=(120, 5)) + np.repeat(np.eye(5)[:3] * 6, 40, 0)
    adata = ad.AnnData(X)
    scc.tl.ensemble(adata, n_partitions=10, progress=False)
    for method in ("pcc", "pla", "dpp"):
        getattr(scc.tl, method)(adata, progress=False)
    scc.tl.pcc(adata, n_clusters=3, progress=False, key_added="pcc3")
    # scanpy's neighbours compile their numba kernels on first use
    sc.pp.neighbors(adata, use_rep="X")
    sc.tl.leiden(adata, flavor="igraph", n_iterations=2)


def _options(pairs: list[str]) -> dict:
    """``["feature_subsample=0.5", "method='hc'"]`` as keyword arguments."""
    import ast

    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--ensemble takes NAME=VALUE, not {pair!r}")
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[name] = value  # a bare word: a string
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS + CLEAR)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--no-r", action="store_true", help="skip ConsensusClusterPlus and ALL")
    parser.add_argument(
        "--methods",
        nargs="+",
        default=list(METHODS),
        choices=METHODS,
        help="rows to compute ('others': ensemble members, KMeans, Leiden, consensus-k, CCP)",
    )
    parser.add_argument(
        "--sc3s-python", default=sys.executable, help="interpreter with sc3s (the SC3s row)"
    )
    parser.add_argument(
        "--papers", action="store_true", help="also the PCC 7.1 JS and PLA toy rows (defaults)"
    )
    parser.add_argument(
        "--k-found",
        action="store_true",
        help="only the 'K found' table: every K-chooser on --datasets (K up to --kmax)",
    )
    parser.add_argument("--kmax", type=int, default=KMAX, help="largest K PAC/silhouette scan")
    parser.add_argument(
        "--ensemble",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="options of every tl.ensemble call, e.g. feature_subsample=0.5",
    )
    parser.add_argument(
        "--rules-only",
        action="store_true",
        help="with --k-found: only the defaults and the rules on select_k's evidence",
    )
    args = parser.parse_args()
    SC3S_PYTHON[0] = args.sc3s_python
    ENSEMBLE_OPTIONS.update(_options(args.ensemble))
    import scanpy as sc

    sc.settings.verbosity = 0
    warnings.filterwarnings("ignore")
    warm_up()
    if args.k_found:
        print(
            k_found(
                [d for d in args.datasets if not (args.no_r and d.startswith("all_"))],
                args.seeds,
                args.kmax,
                args.rules_only,
            )
        )
        return
    results: dict[str, dict[str, list]] = {}
    for name in args.datasets:
        if args.no_r and name.startswith("all_"):
            continue
        per_tool = defaultdict(list)
        for seed in args.seeds:
            for tool, value in run_dataset(name, seed, not args.no_r, args.methods).items():
                per_tool[tool].append(value)
        results[name] = dict(per_tool)
        # the table so far, so a long run that is stopped still leaves its figures
        print(f"# {name} done\n{table(results)}", file=sys.stderr, flush=True)
    print(table(results))
    print()
    print(calibration_table(results))
    if args.papers:
        print()
        print(paper_rows(args.seeds))


if __name__ == "__main__":
    started = time.time()
    main()
    print(f"\n(wall {time.time() - started:.0f} s)", file=sys.stderr)
