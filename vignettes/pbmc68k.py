"""A Scanpy single-cell workflow with consensus clustering, on ``pbmc68k_reduced``.

700 PBMCs (Scanpy's reduced 68k PBMC data, with its PCA, UMAP and the bulk-sorted cell
type labels shipped in ``.obs["bulk_labels"]``):

1. an ensemble of 100 partitions of 80 % subsamples: Leiden at random resolutions and
   k-means with k in 4..14, on ``X_pca``;
2. PCC, PLA and DPP consensus (10 clusters at most for PCC and PLA), plus
   ``tl.consensus_k`` (k-means, k = 2..10) to read how many clusters the data support;
3. memberships and confidence on the UMAP, the co-association heatmap, the
   cluster-relationship graph;
4. the comparison with the shipped annotations (ARI, NMI, H) and with Scanpy's own
   Louvain clustering.

Run from the repository root::

    python vignettes/pbmc68k.py           # figures in figures/pbmc68k/
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd

import scconsensus as scc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outdir", default="figures/pbmc68k")
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    times = {}

    adata = scc.datasets.pbmc68k_reduced()
    print(f"pbmc68k_reduced: {adata.n_obs} cells, PCA {adata.obsm['X_pca'].shape[1]} dims")

    t0 = time.perf_counter()
    scc.tl.ensemble(adata, 100, ["leiden", "kmeans"], k=(4, 14), use_rep="X_pca", random_state=0)
    times["ensemble (100 partitions)"] = time.perf_counter() - t0
    parts = adata.uns["scc_ensemble"]["partitions"]
    print(
        "ensemble: clusters per partition "
        + ", ".join(
            f"{m} {g['n_clusters'].min()}-{g['n_clusters'].max()}"
            for m, g in parts.groupby("method")
        )
    )
    for name, call in (
        ("pcc", lambda: scc.tl.pcc(adata, n_clusters=10, random_state=0)),
        ("pla", lambda: scc.tl.pla(adata, n_clusters=10, random_state=0)),
        ("dpp", lambda: scc.tl.dpp(adata, use_rep="X_pca", random_state=0)),
    ):
        t0 = time.perf_counter()
        call()
        times[f"tl.{name}"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    scc.tl.consensus_k(
        adata, max_k=10, reps=30, method="kmeans", use_rep="X_pca", random_state=0, keep_k="all"
    )
    times["tl.consensus_k (k-means, k=2..10)"] = time.perf_counter() - t0

    ck = adata.uns["consensus_k"]
    print("\nconsensus_k (k-means subsamples): PAC per k")
    print(
        pd.DataFrame({"PAC": ck["pac"], "delta area": ck["delta_area"]}, index=ck["k"])
        .rename_axis("k")
        .round(3)
        .T.to_string()
    )
    best = int(ck["best_k"])
    print(f"lowest PAC at k = {best}")

    keys = ["pcc", "pla", "dpp", f"consensus_k_k{best}", "louvain"]
    table = scc.tl.compare(adata, keys, truth="bulk_labels")
    vs_truth = table[table["key_2"] == "bulk_labels"].set_index("key_1")
    vs_truth["mean confidence"] = [
        adata.obs[f"{k}_confidence"].mean() if f"{k}_confidence" in adata.obs else float("nan")
        for k in vs_truth.index
    ]
    print("\nAgreement with the shipped annotations (bulk_labels, 10 sorted populations):")
    cols = [c for c in ("n_clusters_1", "ari", "nmi", "h", "mean confidence") if c in vs_truth]
    print(vs_truth[cols].round(3).to_string())
    low = adata.obs["pcc_confidence"] < 0.6
    print(
        f"\nPCC: {int(low.sum())} cells have confidence < 0.6; their sorted labels:\n"
        + adata.obs.loc[low, "bulk_labels"].value_counts().head(6).to_string()
    )

    # figures
    for key in ("pcc", "pla", "dpp"):
        scc.pl.confidence(adata, key, "umap", save=out / f"umap_{key}.png", show=False)
        plt.close("all")
    fig, axs = plt.subplots(3, 1, figsize=(10, 8))
    for ax, key in zip(axs, ("pcc", "pla", "dpp"), strict=True):
        scc.pl.membership(adata, key, "bulk_labels", ax=ax, show=False)
    fig.tight_layout()
    fig.savefig(out / "memberships.png", dpi=130, bbox_inches="tight")
    plt.close("all")
    scc.pl.consensus_heatmap(
        adata,
        "scc_ensemble",
        "pcc",
        annotations=["bulk_labels", "louvain"],
        save=out / "heatmap_pcc.png",
        show=False,
    )
    plt.close("all")
    scc.pl.cluster_graph(adata, "pcc", "umap", save=out / "pcc_cluster_graph.png", show=False)
    plt.close("all")
    fig, axs = plt.subplots(1, 3, figsize=(14, 4))
    scc.pl.consensus_cdf(adata, "consensus_k", ax=axs[0], show=False)
    scc.pl.delta_area(adata, "consensus_k", ax=axs[1], show=False)
    scc.pl.pac(adata, "consensus_k", ax=axs[2], show=False)
    fig.savefig(out / "consensus_k.png", dpi=130, bbox_inches="tight")
    plt.close("all")

    print("\nRun times (s):")
    for name, sec in times.items():
        print(f"  {name:<36} {sec:7.1f}")
    print(f"\nFigures in {out}/:")
    print(
        "  umap_<method>.png       labels, confidence and entropy on the UMAP: confidence drops\n"
        "                          between touching populations (their labels printed above).\n"
        "  memberships.png         soft memberships of PCC, PLA and DPP, sorted by cluster,\n"
        "                          with the bulk_labels bar underneath.\n"
        "  heatmap_pcc.png         ensemble co-association ordered by PCC clusters, with\n"
        "                          bulk_labels and Scanpy's Louvain as annotation bars.\n"
        "  pcc_cluster_graph.png   PCC's cluster-relationship graph m_ij on the UMAP.\n"
        "  consensus_k.png         consensus CDF, delta area and PAC for k = 2..10."
    )
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
