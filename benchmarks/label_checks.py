"""Passes over the whole ensemble that check its labels, within one ``pcc_consensus`` call.

Random labels (``--k`` clusters per partition, ``--missing`` of the entries -1), one call
of ``scconsensus.core.pcc_consensus(labels, random_state=0)`` after a warm-up call on a
slice that fits a subset and extends it (numba's compile). Prints how often
``check_labels`` and the numbering check ``_numbered`` read an array of all the items,
the CPU of one such pass, and the call's CPU seconds by stage (everything but "pairs and
fit" is the planning and the extension).
Compare two versions of the package by running the same command with ``PYTHONPATH`` at
each::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/label_checks.py --n 200000

Random labels have no groups: the sparse solver runs to its iteration limit on the
20,000 fitted items (about 4 min on one core); ``--max-iter`` bounds it when only the
other stages are of interest.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import scconsensus
from scconsensus._validation import check_labels
from scconsensus.core import FitRoute, pcc_consensus
from scconsensus.core._labels import _numbered


def counted(function, n_items: int) -> list[int]:
    """Count the calls of ``function`` on ``n_items``-row arrays in every package module."""
    calls: list[int] = []

    def counting(labels, *args, **kwargs):
        if np.shape(labels)[0] == n_items:
            calls.append(1)
        return function(labels, *args, **kwargs)

    for module in list(sys.modules.values()):
        name = function.__name__
        if module.__name__.startswith("scconsensus") and getattr(module, name, None) is function:
            setattr(module, name, counting)
    return calls


def cpu(fn, *args) -> float:
    """CPU seconds of one call of ``fn``."""
    t = time.process_time()
    fn(*args)
    return time.process_time() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--missing", type=float, default=0.2)
    parser.add_argument("--max-iter", type=int, default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    labels = rng.integers(0, args.k, size=(args.n, args.partitions), dtype=np.int32)
    labels[rng.random(labels.shape) < args.missing] = -1
    print(f"package: {scconsensus.__file__}")
    print(f"labels: {args.n} x {args.partitions}, k={args.k}, {args.missing:.0%} missing")
    # numba's compile, the extension's kernels included (a subset fitted, the rest extended)
    warm = FitRoute(fit_size=1_000)
    pcc_consensus(labels[:3_000], random_state=0, max_iter=args.max_iter, route=warm)
    one = {"check_labels": cpu(check_labels, labels), "_numbered": cpu(_numbered, labels)}
    checks, numbering = counted(check_labels, args.n), counted(_numbered, args.n)
    t = time.process_time()
    res = pcc_consensus(labels, random_state=0, max_iter=args.max_iter)
    total = time.process_time() - t
    stages = res.plan.seconds
    print(f"one pass: check_labels {one['check_labels']:.3f} s, _numbered {one['_numbered']:.3f} s")
    print(f"passes over all items: check_labels {len(checks)}, _numbered {len(numbering)}")
    print("stages (CPU s): " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
    rest = total - stages.get("pairs and fit", 0.0)
    print(f"call: {total:.2f} s CPU, not 'pairs and fit': {rest:.2f} s, K={res.plan.n_clusters}")


if __name__ == "__main__":
    main()
