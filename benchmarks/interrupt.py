"""Ctrl-C latency of every ``tl`` function: from SIGINT to the caller's KeyboardInterrupt.

The audit's method (issue 29): each function runs in a subprocess of its own, at a size
where one call takes seconds; the child calls it over and over, and this process sends
SIGINT after a random delay (uniform over one clean call), ``--trials`` times per
function. The child notes the instant its ``except KeyboardInterrupt`` runs; the
latency is that instant minus the instant the signal was sent (``time.monotonic`` is
one clock for the whole machine on Linux). A long compiled or LAPACK call that holds
the interpreter shows as a latency of up to its own length.

Run ``python benchmarks/interrupt.py`` (all functions, 10 trials each) or
``python benchmarks/interrupt.py --functions dpp pcc --trials 5``. One BLAS/OpenMP
thread, as the other benchmarks; the ``clean`` column is one uninterrupted call, ``not
KI`` counts the trials where the caller got a SystemError caused by the interrupt
instead of the KeyboardInterrupt (numba turns a Ctrl-C that lands while a kernel calls
back into Python into one).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

#: Function (and route) -> items of the data it runs on: each call takes seconds on
#: one thread. PCC fits at most 10,000 items (``fit_size='auto'``), PLA all of them.
SIZES = {
    "ensemble": 50_000,
    "coassociation": 8_000,
    "pcc": 20_000,
    "pcc_dense": 5_000,
    "pla": 60_000,
    "pla_dense": 5_000,
    "pla_transfer": 60_000,
    "dpp": 3_000,
    "consensus_k": 2_000,
    "compare": 100_000,
}
THREADS = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")}


def _data(n: int, seed: int = 0):
    """``n`` items of 8 Gaussian groups in 20 dimensions, as an AnnData."""
    import anndata as ad

    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 10, size=(8, 20))
    truth = rng.integers(8, size=n)
    adata = ad.AnnData((centres[truth] + rng.normal(size=(n, 20))).astype(np.float32))
    adata.obs["truth"] = truth.astype(str)
    return adata


def _with_ensemble(n: int):
    import scconsensus as scc

    adata = _data(n)
    scc.tl.ensemble(adata, n_partitions=50, k=(4, 12), use_rep="X", random_state=0)
    return adata


def _setup(name: str, n: int):
    """A no-argument callable that runs ``scc.tl.<name>`` once on ``n`` items
    (``pcc_dense``: ``scc.tl.pcc(mode="dense")``, likewise ``pla_dense``)."""
    import scconsensus as scc

    if name == "ensemble":
        adata = _data(n)
        return lambda: scc.tl.ensemble(adata, n_partitions=50, k=(4, 12), use_rep="X")
    if name == "dpp":
        adata = _data(n)
        return lambda: scc.tl.dpp(adata, mode="dense", n_runs=20, use_rep="X")
    if name == "consensus_k":
        adata = _data(n)
        return lambda: scc.tl.consensus_k(
            adata, max_k=6, reps=20, distance="euclidean", keep_k="all", store_matrices=True
        )
    adata = _with_ensemble(n)
    if name == "coassociation":
        return lambda: scc.tl.coassociation(adata, mode="dense")
    if name in ("pcc", "pla"):  # the defaults: K chosen, sparse route at this size
        return lambda: getattr(scc.tl, name)(adata)
    if name in ("pcc_dense", "pla_dense"):
        return lambda: getattr(scc.tl, name[:3])(adata, mode="dense")
    if name == "pla_transfer":
        ref, new = adata[: n // 2].copy(), adata[n // 2 :].copy()
        scc.tl.pla(ref, n_clusters=8)
        return lambda: scc.tl.pla_transfer(new, ref, use_rep="X")
    if name == "compare":
        rng = np.random.default_rng(1)
        for key in ("a", "b", "c", "d"):  # four labelings to compare, with confidences
            adata.obs[key] = rng.integers(8, size=n).astype(str)
            adata.obs[f"{key}_confidence"] = rng.random(n)
        return lambda: scc.tl.compare(adata, keys=["a", "b", "c", "d"], truth="truth")
    raise ValueError(f"unknown function {name!r}")


def child(name: str, n: int) -> None:
    """Set up, time one clean call, then run until interrupted, once per ``go``."""
    import scanpy as sc

    warnings.simplefilter("ignore")  # the repeated calls overwrite their own results
    sc.settings.verbosity = 0
    call = _setup(name, n)
    call()  # numba compilation
    t0 = time.perf_counter()
    call()
    print("ready", time.perf_counter() - t0, flush=True)
    for _ in sys.stdin:
        try:
            print("started", flush=True)  # the parent's delay counts from here
            while True:  # the signal lands in some call, at any stage of it
                call()
        except KeyboardInterrupt:
            print("caught", time.monotonic(), flush=True)
        except SystemError as exc:  # a Ctrl-C inside a numba call back into Python
            if not isinstance(exc.__cause__, KeyboardInterrupt | SystemError):
                raise
            print("other", time.monotonic(), flush=True)


def measure(name: str, n: int, trials: int, seed: int = 0) -> tuple[float, list[float]]:
    """``(clean seconds, latencies)`` of ``trials`` SIGINTs at random delays."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", name, str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **THREADS, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        clean = float(proc.stdout.readline().split()[1])
        rng = np.random.default_rng(seed)
        latencies, other = [], 0
        for _ in range(trials):
            proc.stdin.write("go\n")
            proc.stdin.flush()
            proc.stdout.readline()  # started
            time.sleep(rng.uniform(0.0, clean))
            sent = time.monotonic()
            os.kill(proc.pid, signal.SIGINT)
            kind, when = proc.stdout.readline().split()
            latencies.append(float(when) - sent)
            other += kind != "caught"
    finally:
        proc.stdin.close()
        proc.wait()
    return clean, latencies, other


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--n", type=int, help="items for every function (default: SIZES)")
    args = parser.parse_args(argv)
    print(f"{'function':14} {'items':>7} {'clean s':>8} {'median s':>9} {'max s':>7} {'not KI':>6}")
    for name in args.functions:
        n = args.n or SIZES[name]
        clean, lat, other = measure(name, n, args.trials)
        print(
            f"{name:14} {n:7d} {clean:8.2f} {np.median(lat):9.3f} {max(lat):7.3f} {other:6d}",
            flush=True,
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
