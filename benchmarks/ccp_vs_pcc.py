"""ConsensusClusterPlus (R) next to scconsensus ensemble + PCC: time, peak memory, ARI to truth.

Data: a synthetic expression matrix, n items x 200 genes, 4 groups, each group
raising its own 25 marker genes by ``--effect`` (noise N(0, 1)), items drawn
uniformly among groups. The same float64 values go to both sides.

- ConsensusClusterPlus: ``Rscript`` running ``ConsensusClusterPlus(d, maxK=6,
  reps=50, pItem=0.8, clusterAlg="hc", distance="pearson")`` + ``calcICL``,
  exactly as ``scconsensus.r.consensus_cluster_plus`` calls it (plots go to a
  null device). ARI of its k = 4 labels and of the k with the lowest PAC.
- scconsensus with its defaults: ``tl.ensemble()`` + ``tl.pcc()`` (K chosen
  from the data), and ``tl.pcc(n_clusters=4)`` on the same ensemble; then
  ``tl.ensemble`` with ConsensusClusterPlus's protocol (50 partitions, hc,
  average linkage, pearson, k drawn in 2..6, 80 % of items) and ``tl.pcc``
  with ``n_clusters=6`` (a maximum: PCC keeps the clusters carrying mass, it
  reports how many) under KL. The timed part of each row is the first
  ensemble + PCC (the ``n_clusters=4`` refit is timed apart).

Each run is a fresh child process; its peak resident memory comes from GNU
``/usr/bin/time`` (whole process: interpreter, libraries and data included, so
the peak of an idle child that only loads the libraries and the data is printed
too). Times are wall-clock and CPU (user + system, all threads) inside the
child, around the computation (CPU time is the steadier figure on a shared
machine); the
Python child first runs both steps on 60 items so numba's compilation (a
one-off, cached on disk) is reported apart as "warm-up".

Run: ``python benchmarks/ccp_vs_pcc.py [--sizes 1000 2000] [--reps 50]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

N_GENES = 200
N_GROUPS = 4
N_MARKERS = 25

R_SCRIPT = textwrap.dedent(
    """
    suppressPackageStartupMessages(library(ConsensusClusterPlus))
    a <- commandArgs(trailingOnly = TRUE)
    n <- as.integer(a[2]); p <- as.integer(a[3]); maxK <- as.integer(a[4])
    reps <- as.integer(a[5])
    d <- matrix(readBin(a[1], what = "double", n = n * p, endian = "little"), nrow = p)
    colnames(d) <- as.character(seq_len(n))
    if (a[6] == "baseline") { cat("{}\\n", file = a[7]); quit(save = "no") }
    grDevices::pdf(NULL)
    cpu <- function() { p <- proc.time(); p[["user.self"]] + p[["sys.self"]] }
    c0 <- cpu()
    t0 <- proc.time()[["elapsed"]]
    res <- suppressMessages(ConsensusClusterPlus(d, maxK = maxK, reps = reps, pItem = 0.8,
        pFeature = 1, clusterAlg = "hc", distance = "pearson", innerLinkage = "average",
        finalLinkage = "average", seed = 1, plot = NULL))
    t1 <- proc.time()[["elapsed"]]
    c1 <- cpu()
    icl <- calcICL(res, plot = NULL)
    t2 <- proc.time()[["elapsed"]]
    c2 <- cpu()
    pac <- sapply(2:maxK, function(k) {
        m <- res[[k]]$consensusMatrix; v <- m[lower.tri(m)]
        h <- hist(v, breaks = seq(0, 1, by = 0.01), plot = FALSE)
        cdf <- cumsum(h$counts) / sum(h$counts)
        cdf[90] - cdf[10]
    })
    labels <- sapply(2:maxK, function(k) as.integer(res[[k]]$consensusClass))
    g <- gc()
    out <- list(ccp_seconds = t1 - t0, icl_seconds = t2 - t1, cpu_seconds = c2 - c0, pac = pac,
                labels = as.vector(labels), r_gc_max_mb = sum(g[, ncol(g)]))
    writeLines(paste0("{", paste0('"', names(out), '": [',
        sapply(out, function(v) paste(v, collapse = ",")), "]", collapse = ", "), "}"), a[7])
    """
)


def make_data(n: int, effect: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, N_GROUPS, n)
    X = rng.normal(size=(n, N_GENES))
    for g in range(N_GROUPS):
        X[np.ix_(truth == g, np.arange(g * N_MARKERS, (g + 1) * N_MARKERS))] += effect
    return X, truth


def run_child(cmd: list[str]) -> tuple[float, dict]:
    """Run ``cmd``; return its peak RSS (MiB) and the JSON it wrote to its last argument.

    The peak comes from GNU time (``/usr/bin/time -f %M``): a child forked from
    this (large) Python process would report this process's memory as its own
    peak, since ``ru_maxrss`` survives ``exec``.
    """
    rss_file = Path(cmd[-1]).with_suffix(".rss")
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", "-o", str(rss_file), *cmd], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    rss_kib = int(rss_file.read_text().split()[-1])
    return rss_kib / 1024, json.loads(Path(cmd[-1]).read_text())


def python_worker(data: str, n: int, generator: str, reps: int, max_k: int, result: str) -> None:
    X = np.fromfile(data, dtype="<f8").reshape(n, N_GENES)
    import anndata as ad

    import scconsensus as scc

    if generator == "baseline":
        Path(result).write_text("{}")
        return
    # "defaults": what a user gets without arguments (k-means ensemble, K chosen from
    # the data); "hc": the same protocol as ConsensusClusterPlus (hc average Pearson,
    # k in 2..max_k, PCC with K = max_k as a maximum).
    if generator == "defaults":
        ens_kw, pcc_kw = {}, {}
    else:
        ens_kw = {"method": "hc", "linkage": "average", "distance": "pearson"}
        ens_kw |= {"n_partitions": reps, "k": (2, max_k), "subsample": 0.8}
        pcc_kw = {"n_clusters": max_k}
    # Compile the numba kernels first (cached on disk after the first run ever),
    # so that the timings below are the computation's.
    t0 = time.perf_counter()
    warm = ad.AnnData(X[:60])
    scc.tl.ensemble(warm, n_partitions=4, k=(2, 3), random_state=0, progress=False)
    scc.tl.pcc(warm, n_clusters=3, random_state=0, progress=False)
    warmup = time.perf_counter() - t0
    adata = ad.AnnData(X)
    c0 = time.process_time()
    t0 = time.perf_counter()
    scc.tl.ensemble(adata, random_state=0, progress=False, **ens_kw)
    t1 = time.perf_counter()
    scc.tl.pcc(adata, random_state=0, progress=False, **pcc_kw)
    t2 = time.perf_counter()
    c2 = time.process_time()
    scc.tl.pcc(adata, n_clusters=N_GROUPS, random_state=0, key_added="pcc4", progress=False)
    t3 = time.perf_counter()
    Path(result).write_text(
        json.dumps(
            {
                "ensemble_seconds": t1 - t0,
                "pcc_seconds": t2 - t1,
                "cpu_seconds": c2 - c0,
                "warmup_seconds": warmup,
                "labels": adata.obs["pcc"].cat.codes.astype(int).tolist(),
                "pcc4_seconds": t3 - t2,
                "labels4": adata.obs["pcc4"].cat.codes.astype(int).tolist(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--max-k", type=int, default=6)
    parser.add_argument("--effect", type=float, default=1.0)
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        data, n, generator, reps, max_k, result = args.worker
        python_worker(data, int(n), generator, int(reps), int(max_k), result)
        return

    from scconsensus.metrics import adjusted_rand_index

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "ccp.R").write_text(R_SCRIPT)
        for n in args.sizes:
            X, truth = make_data(n, args.effect)
            data = tmp / f"x{n}.bin"
            np.ascontiguousarray(X, dtype="<f8").tofile(data)
            res = tmp / "out.json"
            r_cmd = ["Rscript", str(tmp / "ccp.R"), str(data), str(n), str(N_GENES)]
            r_cmd += [str(args.max_k), str(args.reps)]
            base_r, _ = run_child([*r_cmd, "baseline", str(res)])
            rss, out = run_child([*r_cmd, "run", str(res)])
            k_all = np.arange(2, args.max_k + 1)
            labels = np.asarray(out["labels"]).reshape(len(k_all), n)
            best = int(k_all[int(np.argmin(out["pac"]))])
            rows.append(
                {
                    "n": n,
                    "method": "ConsensusClusterPlus (R) + calcICL",
                    "seconds": out["ccp_seconds"][0] + out["icl_seconds"][0],
                    "cpu": out["cpu_seconds"][0],
                    "detail": f"CCP {out['ccp_seconds'][0]:.1f} s + calcICL "
                    f"{out['icl_seconds'][0]:.1f} s; R gc max {out['r_gc_max_mb'][0]:.0f} MB",
                    "peak_mib": rss,
                    "baseline_mib": base_r,
                    "ari": adjusted_rand_index(truth, labels[N_GROUPS - 2]),
                    "clusters": f"k=4 (best by PAC: k={best}, "
                    f"ARI {adjusted_rand_index(truth, labels[best - 2]):.3f})",
                }
            )
            py = [sys.executable, __file__, "--worker", str(data), str(n)]
            base_py, _ = run_child([*py, "baseline", str(args.reps), str(args.max_k), str(res)])
            for generator in ("defaults", "hc"):
                rss, out = run_child([*py, generator, str(args.reps), str(args.max_k), str(res)])
                pred = np.asarray(out["labels"])
                pred4 = np.asarray(out["labels4"])
                rows.append(
                    {
                        "n": n,
                        "method": f"scconsensus ensemble ({generator}) + PCC",
                        "seconds": out["ensemble_seconds"] + out["pcc_seconds"],
                        "cpu": out["cpu_seconds"],
                        "detail": f"ensemble {out['ensemble_seconds']:.1f} s + PCC "
                        f"{out['pcc_seconds']:.1f} s; warm-up {out['warmup_seconds']:.1f} s",
                        "peak_mib": rss,
                        "baseline_mib": base_py,
                        "ari": adjusted_rand_index(truth, pred),
                        "clusters": f"{np.unique(pred).size} found "
                        f"({'chosen' if generator == 'defaults' else f'max {args.max_k}'}); at 4: "
                        f"{np.unique(pred4).size} found, ARI "
                        f"{adjusted_rand_index(truth, pred4):.3f} "
                        f"(PCC {out['pcc4_seconds']:.1f} s)",
                    }
                )
            for row in rows[-3:]:
                print(
                    f"n={row['n']:>5}  {row['method']:<38} {row['seconds']:7.1f} s "
                    f"(CPU {row['cpu']:.1f} s)  "
                    f"peak {row['peak_mib']:6.0f} MiB (idle {row['baseline_mib']:.0f})  "
                    f"ARI {row['ari']:.3f}  {row['clusters']}  [{row['detail']}]",
                    flush=True,
                )
    print(
        "\n| n | method | wall s (parts) | CPU s | peak RSS MiB (idle process) | ARI to truth "
        "| clusters |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['n']} | {row['method']} | {row['seconds']:.1f} ({row['detail']}) | "
            f"{row['cpu']:.1f} | "
            f"{row['peak_mib']:.0f} ({row['baseline_mib']:.0f}) | {row['ari']:.3f} | "
            f"{row['clusters']} |"
        )
    for n in args.sizes:
        r, *ours = [row for row in rows if row["n"] == n]
        for row in ours:
            above = max(row["peak_mib"] - row["baseline_mib"], 1.0)
            print(
                f"n={n}: ConsensusClusterPlus / {row['method']}: wall time "
                f"{r['seconds'] / row['seconds']:.2f}, CPU time {r['cpu'] / row['cpu']:.2f}, "
                f"peak memory {r['peak_mib'] / row['peak_mib']:.2f}, peak above idle "
                f"{(r['peak_mib'] - r['baseline_mib']) / above:.2f}"
            )


if __name__ == "__main__":
    main()
