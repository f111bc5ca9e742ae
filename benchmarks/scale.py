"""Single-cell scale: ``tl.ensemble`` + ``tl.pcc`` end to end on 10^4 to 10^6 cells.

Synthetic data: ``n`` cells in a 50-dimensional representation (``.obsm["X_pca"]``)
drawn from 20 Gaussian blobs with unequal sizes (Dirichlet(5) weights) and
per-cluster scales in [0.8, 1.2], centres drawn from N(0, 0.75^2 I). The blobs
overlap: assigning every cell to its nearest true centre gives ARI ~0.985, and a
single k-means with k = 20 ~0.88, so the consensus has something to do.

For every size a fresh subprocess runs, with ``--recipe defaults`` (the default)::

    tl.ensemble(adata, n_jobs=...)   # k-means, k = "auto"
    tl.pcc(adata)                    # K chosen from the data, fit_size="auto"

and with ``--recipe fixed`` the earlier fixed recipe::

    tl.ensemble(adata, 50, "kmeans", k=(20, 40), subsample=0.8, n_jobs=...)
    tl.pcc(adata, n_clusters=20, n_init=1, mode="auto")  # sparse route above 5,000 cells

The fixed recipe: partitions that over-cluster (k from 20 to 40 for ~20 true clusters)
rarely merge two true clusters, so pairs within a cluster keep high co-association
and PCC's greedy solver, started from random memberships, reaches a good optimum
in one restart (at 10,000 cells: ARI 0.94 with k in 20..40 against 0.78 with k in
10..30, and half the iterations).

and reports the wall time of each stage, the peak memory of its whole process
tree (the subprocess and its joblib workers; proportional set size sampled every
0.2 s, so memory shared between workers is counted once, plus the subprocess's own
``ru_maxrss``) and the ARI of the PCC labels to the planted truth.

The side-by-side against Bioconductor's ConsensusClusterPlus (n = 1,000 and
2,000, same blobs) runs CCP with k-means (``clusterAlg="km"``, euclidean),
``reps=50``, ``pItem=0.8`` and ``maxK=20`` (CCP always computes every k up to
maxK; we read its k = 20 result) against the same scconsensus recipe, and
prints the time ratio and both ARIs.

Usage::

    python benchmarks/scale.py                                # 1e4, 1e5 and CCP
    python benchmarks/scale.py --sizes 1000000 --no-ccp       # the long one
    python benchmarks/scale.py --sizes 10000 --n-jobs 1 --ccp-sizes 1000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

N_CLUSTERS = 20
DIM = 50
SPREAD = 0.75
RECIPE = {"n_partitions": 50, "method": "kmeans", "k": (20, 40), "subsample": 0.8}
PCC = {"n_clusters": 20, "divergence": "kl", "n_init": 1}


def make_blobs(n: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(X float32 n x 50, truth)``: 20 overlapping Gaussian blobs of unequal size."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=SPREAD, size=(N_CLUSTERS, DIM))
    weights = rng.dirichlet(np.full(N_CLUSTERS, 5.0))
    truth = rng.choice(N_CLUSTERS, size=n, p=weights)
    scale = rng.uniform(0.8, 1.2, size=N_CLUSTERS).astype(np.float32)
    X = rng.standard_normal((n, DIM), dtype=np.float32)
    X *= scale[truth, None]
    X += centers[truth].astype(np.float32)
    return X, truth


def _adata(X: np.ndarray, truth: np.ndarray):
    import pandas as pd
    from anndata import AnnData

    obs = pd.DataFrame(
        {"truth": pd.Categorical(truth.astype(str))}, index=[f"c{i}" for i in range(len(truth))]
    )
    adata = AnnData(obs=obs)
    adata.obsm["X_pca"] = X
    return adata


class _Timer:
    """Wraps a function, adding its wall time under ``name``."""

    def __init__(self, times: dict, name: str, fn):
        self.times, self.name, self.fn = times, name, fn

    def __call__(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.times[self.name] = self.times.get(self.name, 0.0) + time.perf_counter() - t


def run_scconsensus(
    n: int,
    n_jobs: int,
    seed: int = 0,
    max_iter: int | None = None,
    recipe: str = "defaults",
    extra: dict | None = None,
) -> dict:
    """The end-to-end run on ``n`` cells (in this process)."""
    import scconsensus as scc
    from scconsensus.core.pcc import _consensus as pcc_module
    from scconsensus.metrics import adjusted_rand_index

    _warm_up(scc)
    times: dict[str, float] = {}
    t = time.perf_counter()
    X, truth = make_blobs(n, seed=seed)
    adata = _adata(X, truth)
    del X
    times["data"] = time.perf_counter() - t
    extra = dict(extra or {})

    stages = _capture_stage_log()
    ens_kw, pcc_kw = (RECIPE, PCC) if recipe == "fixed" else ({}, {})
    if max_iter is not None:
        pcc_kw = {**pcc_kw, "max_iter": max_iter}
    c0 = time.process_time()
    t0 = time.perf_counter()
    scc.tl.ensemble(adata, **ens_kw, random_state=seed, n_jobs=n_jobs, progress=False)
    times["ensemble"] = time.perf_counter() - t0
    ensemble_cpu = time.process_time() - c0
    t = time.perf_counter()
    with _stage_timers(pcc_module, times):
        scc.tl.pcc(adata, **pcc_kw, random_state=seed, progress=False, **extra)
    times["pcc"] = time.perf_counter() - t
    times["end_to_end"] = time.perf_counter() - t0
    # CPU of this process (all its threads); joblib workers (n_jobs > 1) are not counted
    times["cpu"] = time.process_time() - c0
    times["ensemble_cpu"] = ensemble_cpu
    info = adata.uns["pcc"]
    return {
        "n": n,
        "times": times,
        "ari": adjusted_rand_index(truth, adata.obs["pcc"].to_numpy()),
        "n_found": int(adata.obs["pcc"].nunique()),
        "route": str(info.get("route", "")),
        "n_pairs": int(info.get("n_pairs", -1)) if "n_pairs" in info else -1,
        "pcc_n_iter": int(np.sum(info.get("n_iter", -1))),
        "pcc_converged": bool(info.get("converged", False)),
        "pcc_max_iter": max_iter,
        "recipe": recipe,
        "n_clusters_chosen": int(info.get("n_clusters_chosen", -1)),
        "pcc_options": extra,
        "pair_source": str(info.get("pair_source", "")),
        "fit_size": int(info.get("fit_size", n)),
        "ru_maxrss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
        "pcc_stage_cpu": stages,
    }


#: Stage timers inside tl.pcc (``core.pcc.pcc_consensus``): the names it calls, timed.
STAGES = {
    "sampled_pairs": "pairs",
    "coassociation": "count",
    "pcc": "solver",
    "pcc_lowrank": "solver",
    "extend_checked": "extend",
}


@contextlib.contextmanager
def _stage_timers(module, times: dict):
    """Time the :data:`STAGES` of ``module`` into ``times``, restored on leaving (a name
    it no longer has is an error here, not a silent zero)."""
    saved = {name: getattr(module, name) for name in STAGES}
    try:
        for name, stage in STAGES.items():
            setattr(module, name, _Timer(times, stage, saved[name]))
        yield
    finally:
        for name, function in saved.items():
            setattr(module, name, function)


def _capture_stage_log() -> dict[str, float]:
    """The CPU seconds per stage that ``tl.pcc`` logs at info level, filled as it runs."""
    import logging
    import re

    import scanpy as sc

    stages: dict[str, float] = {}

    class Stages(logging.Handler):
        def emit(self, record):
            msg = record.getMessage()
            if "CPU time per stage:" in msg:
                for name, sec in re.findall(r"([a-zA-Z ]+?) ([0-9.]+) s", msg.split(":", 1)[1]):
                    stages[name.strip(" ,")] = float(sec)

    sc.settings.verbosity = "info"
    sc.settings._root_logger.addHandler(Stages(level=logging.INFO))  # scanpy logs here
    return stages


def run_kmeans(n: int, seed: int = 0) -> dict:
    """The floor: scikit-learn's ``KMeans(20, n_init=3)`` on the same cells."""
    from sklearn.cluster import KMeans

    def cluster(X, truth):
        return KMeans(N_CLUSTERS, n_init=3, random_state=seed).fit_predict(X)

    return _timed_labels(n, seed, cluster)


def run_sc3s(n: int, seed: int = 0) -> dict:
    """SC3s (Quah et al. 2021) with its defaults at K = 20 on the same ``X_pca``."""
    import sc3s

    def cluster(X, truth):
        adata = _adata(X, truth)
        sc3s.tl.consensus(adata, n_clusters=[N_CLUSTERS], random_state=seed)
        return adata.obs[f"sc3s_{N_CLUSTERS}"].to_numpy()

    return _timed_labels(n, seed, cluster)


def _timed_labels(n: int, seed: int, cluster) -> dict:
    """Wall, CPU, ARI and clusters found of ``cluster(X, truth) -> labels`` on the blobs."""
    from scconsensus.metrics import adjusted_rand_index

    X, truth = make_blobs(n, seed=seed)
    c, t = time.process_time(), time.perf_counter()
    labels = cluster(X, truth)
    return {
        "n": n,
        "wall": time.perf_counter() - t,
        "cpu": time.process_time() - c,
        "ari": adjusted_rand_index(truth, labels),
        "n_found": int(np.unique(labels).size),
        "ru_maxrss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
    }


def _warm_up(scc) -> None:
    """Compile the numba kernels of every route first (cached on disk per checkout)."""
    small = _adata(*make_blobs(600, seed=1))
    scc.tl.ensemble(small, n_partitions=10, progress=False)
    routes = ({"mode": "dense"}, {"mode": "sparse"}, {"mode": "sparse", "fit_size": 300})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ten partitions far from K: true, and beside the point
        for i, kw in enumerate(routes):  # a key each: no "overwriting" warning either
            scc.tl.pcc(small, progress=False, key_added=f"warm{i}", **kw)


def _tree_pss(proc) -> int:
    """Proportional set size (RSS if PSS is unavailable) of a process and its descendants."""
    import psutil

    total = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        try:
            mem = p.memory_full_info()
            total += getattr(mem, "pss", mem.rss)
        except psutil.Error:
            pass
    return total


def measure(args: list[str], python: str = sys.executable) -> tuple[dict, float]:
    """Run ``scale.py --child ...`` in a subprocess; its JSON result and peak tree PSS (GiB)."""
    import psutil

    cmd = [python, os.path.abspath(__file__), "--child", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_pss(ps))
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    line = [x for x in out.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :]), peak[0] / 1024**3


def run_ccp(n: int, seed: int = 0) -> dict:
    """ConsensusClusterPlus (k-means, reps=50, maxK=20) and scconsensus on the same blobs."""
    import scconsensus as scc
    from scconsensus.metrics import adjusted_rand_index

    X, truth = make_blobs(n, seed=seed)
    adata = _adata(X.astype(np.float64), truth)
    t = time.perf_counter()
    scc.tl.ensemble(adata, **RECIPE, random_state=seed)
    scc.tl.pcc(adata, **PCC, mode="auto", random_state=seed)
    t_scc = time.perf_counter() - t
    ari_scc = adjusted_rand_index(truth, adata.obs["pcc"].to_numpy())

    t = time.perf_counter()
    try:
        from scconsensus.r import consensus_cluster_plus

        consensus_cluster_plus(
            adata,
            max_k=N_CLUSTERS,
            reps=RECIPE["n_partitions"],
            p_item=RECIPE["subsample"],
            cluster_alg="km",
            distance="euclidean",
            seed=seed,
            use_rep="X_pca",
        )
        ccp_labels = adata.obs[f"ccp_k{N_CLUSTERS}"].to_numpy()
        via = "scconsensus.r.consensus_cluster_plus (rpy2)"
    except ImportError:
        ccp_labels = _ccp_rscript(adata.obsm["X_pca"], seed)
        via = "Rscript subprocess"
    t_ccp = time.perf_counter() - t
    return {
        "n": n,
        "scc_s": t_scc,
        "ccp_s": t_ccp,
        "ari_scc": ari_scc,
        "ari_ccp": adjusted_rand_index(truth, ccp_labels),
        "via": via,
        "ru_maxrss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
    }


def _ccp_rscript(X: np.ndarray, seed: int) -> np.ndarray:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "x.csv"), os.path.join(tmp, "labels.csv")
        np.savetxt(src, X, delimiter=",")
        script = (
            "suppressMessages(library(ConsensusClusterPlus));"
            f"x <- t(as.matrix(read.csv('{src}', header=FALSE)));"
            f"r <- ConsensusClusterPlus(x, maxK={N_CLUSTERS}, reps={RECIPE['n_partitions']},"
            f" pItem={RECIPE['subsample']}, pFeature=1, clusterAlg='km', distance='euclidean',"
            f" seed={seed}, plot=NULL, verbose=FALSE);"
            f"write.csv(r[[{N_CLUSTERS}]]$consensusClass, '{dst}', row.names=FALSE)"
        )
        subprocess.run(["Rscript", "-e", script], check=True, capture_output=True)
        return np.loadtxt(dst, delimiter=",", skiprows=1).astype(int)


def _extra(args) -> dict:
    """tl.pcc options given on the command line (the package's defaults otherwise)."""
    given = {"solver": args.solver, "pairs": args.pairs, "init": args.init}
    given["fit_size"] = args.fit_size
    return {key: value for key, value in given.items() if value is not None}


def _sc3s_available(python: str) -> bool:
    try:
        found = subprocess.run([python, "-c", "import sc3s"], capture_output=True)
    except OSError:  # no such interpreter
        return False
    return found.returncode == 0


def _floor_rows(n: int, args, scc: dict) -> None:
    """KMeans(20, n_init=3) and SC3s on the same cells, each in its own process, and the
    ratio of scconsensus's end-to-end CPU to theirs."""
    rows = [("KMeans(20, n_init=3)", ["kmeans", str(n)], sys.executable)]
    if n > args.sc3s_max:
        print(f"    SC3s: skipped above --sc3s-max={args.sc3s_max} cells", flush=True)
    elif not _sc3s_available(args.sc3s_python):
        print(
            f"    SC3s: not importable from {args.sc3s_python}; skipped (pip install sc3s "
            "into an environment of its own and pass --sc3s-python)",
            flush=True,
        )
    else:
        rows.append(("SC3s defaults, K=20", ["sc3s", str(n)], args.sc3s_python))
    for name, child, python in rows:
        res, peak = measure([*child, "--seed", str(args.seed)], python)
        print(
            f"    {name}: wall {res['wall']:.1f} s, CPU {res['cpu']:.1f} s, peak "
            f"{max(peak, res['ru_maxrss_gib']):.2f} GiB, ARI {res['ari']:.3f}, K "
            f"{res['n_found']}; scconsensus CPU / this CPU = "
            f"{scc['times']['cpu'] / res['cpu']:.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--ccp-sizes", type=int, nargs="*", default=[1_000, 2_000])
    parser.add_argument("--no-ccp", action="store_true", help="skip ConsensusClusterPlus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--recipe", choices=("defaults", "fixed"), default="defaults", help="see the docstring"
    )
    parser.add_argument("--solver", default=None, help="tl.pcc solver (auto, greedy, batch)")
    parser.add_argument(
        "--pcc-max-iter",
        type=int,
        default=None,
        help="cap PCC's iterations (to time the solver's rate on sizes it cannot finish)",
    )
    parser.add_argument("--pairs", default=None, help="tl.pcc pairs (auto, knn, ensemble)")
    parser.add_argument("--init", default=None, help="tl.pcc init (spectral, random, ensemble)")
    parser.add_argument(
        "--fit-size", type=int, default=None, help="tl.pcc fit_size (fit a subset, extend)"
    )
    parser.add_argument(
        "--sc3s-python",
        default=sys.executable,
        help="interpreter with sc3s installed (its pins may need an environment of its own)",
    )
    parser.add_argument(
        "--sc3s-max", type=int, default=100_000, help="largest n given to SC3s (slow above)"
    )
    parser.add_argument("--no-floor", action="store_true", help="skip the KMeans and SC3s rows")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        kind, n = args.child[0], int(args.child[1])
        if kind == "scc":
            result = run_scconsensus(
                n, args.n_jobs, args.seed, args.pcc_max_iter, args.recipe, _extra(args)
            )
        elif kind == "kmeans":
            result = run_kmeans(n, args.seed)
        elif kind == "sc3s":
            result = run_sc3s(n, args.seed)
        else:
            result = run_ccp(n)
        print("RESULT " + json.dumps(result), flush=True)
        return

    recipe = "tl.ensemble() + tl.pcc()"
    if args.recipe == "fixed":
        recipe = f"tl.ensemble({RECIPE}) + tl.pcc({PCC}, mode='auto')"
    print(
        f"recipe: {recipe}; options {_extra(args)}, n_jobs={args.n_jobs}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    header = (
        f"{'n':>9} {'end-to-end s':>12} {'ensemble s':>10} {'pairs s':>8} {'count s':>8} "
        f"{'solver s':>8} {'CPU s':>7} {'peak GiB':>8} {'ARI':>6} {'K':>3} {'pairs/item':>10}"
    )
    print(header)
    for n in args.sizes:
        child = ["scc", str(n), "--n-jobs", str(args.n_jobs), "--seed", str(args.seed)]
        child += ["--recipe", args.recipe]
        for flag, value in _extra(args).items():
            child += [f"--{flag.replace('_', '-')}", str(value)]
        if args.pcc_max_iter is not None:
            child += ["--pcc-max-iter", str(args.pcc_max_iter)]
        res, peak = measure(child)
        t = res["times"]
        stages = ", ".join(f"{k} {v:.1f}" for k, v in res["pcc_stage_cpu"].items())
        print(
            f"{n:>9} {t['end_to_end']:>12.1f} {t['ensemble']:>10.1f} "
            f"{t.get('pairs', 0):>8.1f} "
            f"{t.get('count', 0):>8.1f} {t.get('solver', 0) + t.get('extend', 0):>8.1f} "
            f"{t['cpu']:>7.1f} "
            f"{max(peak, res['ru_maxrss_gib']):>8.2f} {res['ari']:>6.3f} {res['n_found']:>3} "
            f"{2 * res['n_pairs'] / res['fit_size'] if res['n_pairs'] > 0 else float('nan'):>10.1f}"
            + ("" if res["pcc_converged"] else f"  PCC stopped at max_iter={res['pcc_n_iter']}"),
            flush=True,
        )
        print(
            f"    CPU s: ensemble {t['ensemble_cpu']:.1f}, tl.pcc "
            f"{t['cpu'] - t['ensemble_cpu']:.1f} ({stages})",
            flush=True,
        )
        print("    detail: " + json.dumps(res), flush=True)
        if not args.no_floor:
            _floor_rows(n, args, res)
    if args.no_ccp:
        return
    print("\nConsensusClusterPlus (km, reps=50, maxK=20, pItem=0.8) vs scconsensus, same data")
    print(f"{'n':>6} {'CCP s':>8} {'scc s':>8} {'CCP/scc':>8} {'ARI CCP':>8} {'ARI scc':>8}")
    for n in args.ccp_sizes:
        res, peak = measure(["ccp", str(n)])
        print(
            f"{n:>6} {res['ccp_s']:>8.1f} {res['scc_s']:>8.1f} {res['ccp_s'] / res['scc_s']:>8.1f} "
            f"{res['ari_ccp']:>8.3f} {res['ari_scc']:>8.3f}   ({res['via']}; peak {peak:.2f} GiB)",
            flush=True,
        )


if __name__ == "__main__":
    main()
