"""Which PLA components ``merge_duplicates`` may merge: duplicates against distinct clusters.

Two cases (issue 24): the PLA banana toy of ``accuracy.py --papers`` (``n_clusters=2``,
EM from the spectral start smoothed by 0.1 … 0.9, ``n_init=1``), whose two components
are distinct clusters; and 3 planted groups of 80, 60, 40 items, 30 partitions with
5–45 % of the labels redrawn, fitted with ``n_clusters`` 4, 6, 9, where the components
beyond 3 duplicate a group. For every pair of components with profile cosine >= 0.75
(before merging) it prints the cosine and the ensemble's co-association of the items
labelled with the two, ``c_ab / sqrt(c_aa c_bb)`` (``_together``), then the range of
that ratio per case. ``merge_duplicates`` merges at cosine >= 0.8 and ratio >= 0.85.

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 python benchmarks/pla_merge.py
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

ROWS: list[tuple] = []


def _recording(merge, case: str):
    """``merge_duplicates`` that first records its pairs' cosine and ratio under ``case``."""
    from scconsensus.core.pla import _model

    def wrapped(posteriors, likelihoods, prior, members, alpha, *args, **kwargs):
        W = likelihoods / np.linalg.norm(likelihoods, axis=0)
        cosine = W.T @ W
        mean = _model._group_coassociation(posteriors, members, alpha)
        within = np.diag(mean)
        within_a = np.where(np.isnan(within)[:, None], within[None, :], within[:, None])
        ratio = mean / np.sqrt(within_a * within_a.T)
        a, b = np.triu_indices(cosine.shape[0], 1)
        for i, j in zip(a, b, strict=True):
            if cosine[i, j] >= 0.75 and np.isfinite(ratio[i, j]):
                ROWS.append((case, cosine[i, j], ratio[i, j]))
        return merge(posteriors, likelihoods, prior, members, alpha, *args, **kwargs)

    return wrapped


def main() -> None:
    from pla_toy_starts import toy

    from scconsensus.core._plan import smoothed_one_hot
    from scconsensus.core._spectral import spectral_consensus
    from scconsensus.core.pla import _model

    warnings.filterwarnings("ignore")
    merge = _model.merge_duplicates
    for seed in range(5):
        _, _, ens = toy(seed)
        hard = spectral_consensus(ens, 2, random_state=seed)
        _model.merge_duplicates = _recording(merge, "toy, 2 distinct clusters")
        for smoothing in (0.1, 0.3, 0.5, 0.7, 0.9):
            start = smoothed_one_hot(hard, 2, smoothing)
            _model.pla(ens, 2, init=start, n_init=1, random_state=seed)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        truth = np.tile(np.repeat([0, 1, 2], [80, 60, 40])[:, None], (1, 30))
        _model.merge_duplicates = _recording(merge, "planted, duplicates (cosine >= 0.8)")
        for noise in (0.05, 0.15, 0.3, 0.45):
            labels = truth.copy()
            flip = rng.random(labels.shape) < noise
            labels[flip] = rng.integers(0, 3, flip.sum())
            for K in (4, 6, 9):
                _model.pla(labels, K, random_state=seed)
    _model.merge_duplicates = merge
    print("| case | pairs | cosine | co-association ratio |\n|---|---|---|---|")
    for case in dict.fromkeys(r[0] for r in ROWS):
        rows = np.array([r[1:] for r in ROWS if r[0] == case])
        if case.startswith("planted"):
            rows = rows[rows[:, 0] >= 0.8]
        lo, hi = rows.min(axis=0), rows.max(axis=0)
        print(f"| {case} | {len(rows)} | {lo[0]:.3f}–{hi[0]:.3f} | {lo[1]:.3f}–{hi[1]:.3f} |")


if __name__ == "__main__":
    main()
