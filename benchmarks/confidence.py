"""Per-cell confidence candidates on the accuracy panel (issue 24).

For every dataset and seed: ``tl.ensemble(random_state=seed)``, then ``tl.pcc`` and
``tl.pla`` with the defaults and at the true K; the ensembles and labels are cached
(``--cache``), so that scoring a statistic takes seconds. Each candidate is a function
of the ensemble and the consensus labels (``maxmem``: of the model's membership); it is
scored as ``accuracy.py`` scores ``.obs[f"{key}_confidence"]``: AUROC for telling the
cells whose class is not their cluster's majority class from the others, and the
expected calibration error (ten bins), mean over seeds, then over the datasets with a
misassigned cell. ``stored`` is ``.obs[f"{key}_confidence"]`` itself
(:func:`scconsensus.core.ensemble_confidence`); ``baseline`` the issue's (the cell's
mean co-association with its own cluster).

Then what bounds any such statistic: the best candidate per dataset chosen with the
truth (an oracle, optimistic), a logistic combination of all candidates and an isotonic
calibration map, each fitted on the other datasets (leave one dataset out), and the gap
between each dataset's accuracy and the stored confidence's mean (a lower bound of its
ECE: ``ECE >= |mean confidence - accuracy|``).

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/confidence.py --cache /tmp/conf

``--resample B`` adds the consensus resampled: each row's method refitted ``B`` times at
the row's ``k``, each time on a random half of all the ensemble's partitions (of every
``k``), from which the consensus's default ``partitions="matched"`` keeps those whose
number of clusters is near ``k``; the share of refits that give the cell its label
(``B`` x the consensus's time per case).
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import warnings
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

PANEL = (
    "iris",
    "wine",
    "breast_cancer",
    "all_lineage",
    "all_bt",
    "krumsiek11",
    "pbmc_bulk",
    "pbmc_louvain",
)
ROWS = ("pcc_def", "pcc_k", "pla_def", "pla_k")
#: Per-cell statistics of :func:`candidate_stats` (one pass over the partitions).
BASIC = (
    "prec_fine",
    "prec_all",
    "rec",
    "rec_coarse",
    "lab_fine",
    "relmaj_fine",
    "mutual_fine",
    "majcell",
)


def cached_run(name: str, seed: int, cache: str | None) -> dict:
    """Ensemble, truth and each row's labels / membership / stored confidence."""
    path = os.path.join(cache, f"{name}_{seed}.pkl") if cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            return pickle.load(fh)
    from accuracy import load

    import scconsensus as scc

    adata = load(name)
    K = int(adata.obs["truth"].nunique())
    scc.tl.ensemble(adata, random_state=seed, progress=False)
    rec = {"truth": adata.obs["truth"].cat.codes.to_numpy(), "K": K}
    rec["ensemble"] = np.asarray(adata.obsm["scc_ensemble"])
    for row in ROWS:
        method, tag = row.split("_")
        kw = {"n_clusters": K} if tag == "k" else {}
        getattr(scc.tl, method)(adata, random_state=seed, key_added=row, progress=False, **kw)
        rec[row] = {
            "labels": adata.obs[row].cat.codes.to_numpy(),
            "membership": np.asarray(adata.obsm[f"{row}_membership"]),
            "confidence": adata.obs[f"{row}_confidence"].to_numpy(),
        }
    if path:
        os.makedirs(cache, exist_ok=True)
        with open(path, "wb") as fh:
            pickle.dump(rec, fh)
    return rec


def candidate_stats(ensemble: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Per-cell statistics of the ensemble against consensus labels ``0..k-1``.

    Per partition, with ``counts[m, c]`` the cells of partition cluster ``m`` labelled
    ``c``: ``prec`` the share of the cell's co-members carrying its label (partitions of
    at least k clusters, or all); ``rec`` the share of its cluster co-clustered with it;
    ``lab`` whether its partition cluster's majority label is its own; ``relmaj`` the
    same with each label weighed by its size; ``mutual`` ``lab`` or its partition cluster
    being the main one of its label; ``majcell`` whether it lands in its label's main
    partition cluster (the label reproduced). Plus margins against the best other
    cluster of the size-normalised co-association profile (``marg_prof``) and of the
    support (``marg_supp``). Each is a mean over the partitions that sampled the cell.
    """
    from scconsensus.core._labels import compact_labels

    n, k = labels.size, int(labels.max()) + 1
    ens = compact_labels(ensemble.astype(np.int32))
    sizes = ens.max(axis=0).astype(np.int64) + 1
    fine = sizes >= k if (sizes >= k).any() else np.ones(sizes.size, bool)
    coarse = sizes <= k if (sizes <= k).any() else np.ones(sizes.size, bool)
    acc = {key: np.zeros(n) for key in BASIC}
    seen_fine, seen_coarse, seen = np.zeros(n), np.zeros(n), np.zeros(n)
    prof, supp = np.zeros((n, k)), np.zeros((n, k))
    for ids, m, use, use_coarse in zip(ens.T, sizes, fine, coarse, strict=True):
        i = np.flatnonzero(ids >= 0)
        c, mi = labels[i], ids[i]
        counts = np.bincount(mi * k + c, minlength=m * k).reshape(m, k).astype(float)
        share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
        rel = counts / np.maximum(counts.sum(axis=0, keepdims=True), 1)
        own_main = counts.argmax(axis=0)[c] == mi
        mine = {"prec_all": share[mi, c], "rec": rel[mi, c], "majcell": own_main}
        if use:
            mine.update(prec_fine=share[mi, c], lab_fine=share.argmax(axis=1)[mi] == c)
            mine.update(relmaj_fine=rel.argmax(axis=1)[mi] == c)
            mine["mutual_fine"] = mine["lab_fine"] | own_main
            supp[i] += share[mi]
            seen_fine[i] += 1
        if use_coarse:
            mine["rec_coarse"] = rel[mi, c]
            seen_coarse[i] += 1
        for key, value in mine.items():
            acc[key][i] += value
        prof[i] += rel[mi]
        seen[i] += 1
    per = {"fine": seen_fine, "coarse": seen_coarse}
    out = {key: v / np.maximum(per.get(key.split("_")[-1], seen), 1) for key, v in acc.items()}
    out["marg_prof"] = _margin(prof, labels)
    out["marg_supp"] = _margin(supp, labels)
    return out


def _margin(profile: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``own / (own + best other)`` of each row of ``profile``."""
    rows = np.arange(labels.size)
    own = profile[rows, labels]
    other = profile.copy()
    other[rows, labels] = -np.inf
    best = other.max(axis=1) if profile.shape[1] > 1 else np.zeros(labels.size)
    return own / np.maximum(own + best, 1e-12)


def own_coassociation(ensemble: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The issue's baseline: each cell's mean co-association with its own cluster."""
    from scconsensus.core import coassociation

    C, N = coassociation(ensemble)
    F = C / np.maximum(N, 1)
    return np.array([F[i, labels == labels[i]].mean() for i in range(labels.size)])


def resampled_agreement(
    ensemble: np.ndarray, labels: np.ndarray, method: str, n_refits: int, seed: int
) -> np.ndarray:
    """The share of ``n_refits`` consensus refits at the labels' ``k`` (``method``:
    ``"pcc"`` or ``"pla"``) that give the cell its label (each refit's clusters matched
    to the labels by the Hungarian method): the consensus resampled, the issue's
    "resampling" candidate.

    Each refit samples half of all the ensemble's partitions, whatever their ``k``; the
    consensus's default ``StartPlan(partitions="matched")`` then keeps those of the half
    whose number of clusters is near ``k`` (:func:`scconsensus.core.matched_partitions`),
    so a refit fits about half of the partitions the full fit used, not exactly half
    (more distant ones too where the half holds too few near ``k`` and the window widens).
    """
    from scipy.optimize import linear_sum_assignment

    from scconsensus.core import pcc_consensus, pla_consensus

    fit = pcc_consensus if method == "pcc" else pla_consensus
    k, rng = int(labels.max()) + 1, np.random.default_rng(seed)
    agree = np.zeros(labels.size)
    for b in range(n_refits):
        cols = np.sort(rng.choice(ensemble.shape[1], ensemble.shape[1] // 2, replace=False))
        res = fit(np.ascontiguousarray(ensemble[:, cols]), k, random_state=b, progress=False)
        refit = res.membership.argmax(axis=1)
        overlap = np.zeros((k, res.membership.shape[1]))
        np.add.at(overlap, (labels, refit), 1)
        matched_label, matched_refit = linear_sum_assignment(-overlap)
        to_label = np.full(overlap.shape[1], -1)
        to_label[matched_refit] = matched_label
        agree += to_label[refit] == labels
    return agree / n_refits


def _mean(*keys):
    return lambda s: np.mean([s[key] for key in keys], axis=0)


CANDIDATES = {
    "stored (ensemble_confidence)": lambda s: s["stored"],
    "baseline: own co-association": lambda s: s["baseline"],
    "largest membership": lambda s: s["maxmem"],
    **{key: (lambda s, key=key: s[key]) for key in (*BASIC, "marg_prof", "marg_supp")},
    "mean(prec_fine, rec_coarse)": _mean("prec_fine", "rec_coarse"),
    "mean(rec, majcell)": _mean("rec", "majcell"),
    "mean(prec_fine, majcell)": _mean("prec_fine", "majcell"),
    "mean(prec_fine, rec, majcell)": _mean("prec_fine", "rec", "majcell"),
    "mean(relmaj_fine, majcell)": _mean("relmaj_fine", "majcell"),
    "mean(marg_prof, rec)": _mean("marg_prof", "rec"),
    "mean(marg_prof, majcell)": _mean("marg_prof", "majcell"),
    "mean(marg_supp, majcell)": _mean("marg_supp", "majcell"),
    "sqrt(prec_fine * rec)": lambda s: np.sqrt(s["prec_fine"] * s["rec"]),
    "prec_fine * rec": lambda s: s["prec_fine"] * s["rec"],
    "mean(stored, largest membership)": _mean("stored", "maxmem"),
    "stored * largest membership": lambda s: s["stored"] * s["maxmem"],
}
#: With ``--resample``: the consensus refitted on random halves of all the partitions.
RESAMPLED = {
    "resampled (agreement over refits on half the partitions)": lambda s: s["resampled"],
    "mean(stored, resampled)": _mean("stored", "resampled"),
}


def scored_cases(
    datasets, seeds, cache, n_refits: int = 0
) -> list[tuple[str, str, dict, np.ndarray]]:
    """``(dataset, row, statistics, correct)`` per dataset, seed and row (``n_refits``:
    also :func:`resampled_agreement` over that many refits)."""
    from scconsensus.metrics import majority_correct

    cases = []
    for name in datasets:
        for seed in seeds:
            rec = cached_run(name, seed, cache)
            for row in ROWS:
                labels = rec[row]["labels"]
                ok = labels >= 0
                ens, lab = rec["ensemble"][ok], labels[ok]
                stats = candidate_stats(ens, lab)
                stats["baseline"] = own_coassociation(ens, lab)
                stats["maxmem"] = rec[row]["membership"][ok].max(axis=1)
                stats["stored"] = rec[row]["confidence"][ok]
                if n_refits:
                    method = row.split("_")[0]
                    stats["resampled"] = resampled_agreement(ens, lab, method, n_refits, seed)
                cases.append((name, row, stats, majority_correct(rec["truth"][ok], lab)))
        print(f"# {name} done", file=sys.stderr, flush=True)
    return cases


def score(cases, fn) -> dict[tuple[str, str], tuple[float, float]]:
    """``{(row, dataset): (AUROC, ECE)}``, means over seeds, datasets with an error only."""
    from scconsensus.metrics import confidence_auroc, expected_calibration_error

    per = defaultdict(list)
    for name, row, stats, right in cases:
        if right.all():
            continue
        conf = np.clip(fn(stats), 0.0, 1.0)
        per[(row, name)].append(
            (confidence_auroc(conf, right), expected_calibration_error(conf, right))
        )
    return {key: tuple(np.mean(v, axis=0)) for key, v in per.items()}


def candidate_table(cases, candidates=CANDIDATES) -> str:
    """Markdown: per candidate and row, mean AUROC / mean ECE (lowest dataset AUROC)."""
    lines = ["| candidate | " + " | ".join(ROWS) + " |", "|---" * (len(ROWS) + 1) + "|"]
    for label, fn in candidates.items():
        scores = score(cases, fn)
        cells = []
        for row in ROWS:
            v = np.array([s for (r, _), s in scores.items() if r == row])
            cells.append(f"{v[:, 0].mean():.3f} / {v[:, 1].mean():.3f} ({v[:, 0].min():.2f})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def dataset_table(cases, candidates) -> str:
    """Markdown: per candidate, row and dataset, ``AUROC / ECE``."""
    names = sorted({name for name, _, _, right in cases if not right.all()})
    lines = ["| candidate, row | " + " | ".join(names) + " |"]
    lines.append("|---" * (len(names) + 1) + "|")
    for label, fn in candidates.items():
        scores = score(cases, fn)
        for row in ROWS:
            cells = [f"{scores[(row, n)][0]:.2f} / {scores[(row, n)][1]:.3f}" for n in names]
            lines.append(f"| {label}, {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bounds(cases) -> str:
    """What bounds an ensemble statistic: oracle choice, fitted maps, the level gap."""
    from scconsensus.metrics import confidence_auroc

    lines = []
    features = [*BASIC, "marg_prof", "marg_supp", "baseline", "maxmem", "stored"]
    wrong = [(n, r, s, ok) for n, r, s, ok in cases if not ok.all()]
    if len({n for n, *_ in wrong}) < 2:
        return "(the bounds need two datasets with a misassigned cell)"
    for row in ROWS:
        best = defaultdict(list)
        for name, r, stats, right in wrong:
            if r == row:
                a = [confidence_auroc(stats[f], right) for f in features]
                best[name].append(max(max(x, 1 - x) for x in a))
        oracle = np.mean([np.mean(v) for v in best.values()])
        fitted = _leave_one_out(wrong, row, features)
        lines.append(
            f"{row}: best candidate per dataset chosen with the truth, mean AUROC {oracle:.3f}; "
            f"fitted on the other datasets: logistic on all candidates AUROC {fitted[0]:.3f} / "
            f"ECE {fitted[1]:.3f}, isotonic map of stored AUROC {fitted[2]:.3f} / "
            f"ECE {fitted[3]:.3f}"
        )
    lines.append(level_gaps(wrong))
    return "\n".join(lines)


def _leave_one_out(wrong, row, features) -> tuple[float, float, float, float]:
    """Mean ``(AUROC, ECE)`` of a logistic model on ``features`` and of an isotonic map of
    the stored confidence, each fitted on the other datasets' cells."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    from scconsensus.metrics import confidence_auroc, expected_calibration_error

    cases = [(n, s, ok) for n, r, s, ok in wrong if r == row]
    per = defaultdict(list)
    for held in sorted({n for n, _, _ in cases}):
        train = [(s, ok) for n, s, ok in cases if n != held]
        y = np.concatenate([ok for _, ok in train])
        F = np.vstack([np.column_stack([s[f] for f in features]) for s, _ in train])
        logistic = LogisticRegression(max_iter=2000).fit(F, y)
        iso = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
        iso.fit(np.concatenate([s["stored"] for s, _ in train]), y.astype(float))
        for n, s, ok in cases:
            if n == held:
                p = logistic.predict_proba(np.column_stack([s[f] for f in features]))[:, 1]
                q = iso.predict(s["stored"])
                per[n].append(
                    [
                        confidence_auroc(p, ok),
                        expected_calibration_error(p, ok),
                        confidence_auroc(q, ok),
                        expected_calibration_error(q, ok),
                    ]
                )
    return tuple(np.mean([np.mean(v, axis=0) for v in per.values()], axis=0))


def level_gaps(wrong) -> str:
    """Per row and dataset: accuracy, the stored confidence's mean, and its ECE."""
    from scconsensus.metrics import expected_calibration_error

    per = defaultdict(list)
    for name, row, stats, right in wrong:
        conf = stats["stored"]
        per[(row, name)].append(
            (right.mean(), conf.mean(), expected_calibration_error(conf, right))
        )
    lines = ["| row, dataset | accuracy | mean stored confidence | its ECE |", "|---|---|---|---|"]
    for (row, name), v in sorted(per.items()):
        a, c, e = np.mean(v, axis=0)
        lines.append(f"| {row}, {name} | {a:.3f} | {c:.3f} | {e:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(PANEL))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--cache", default=None, help="folder for the runs (reused if there)")
    parser.add_argument("--per-dataset", nargs="*", default=None, help="candidates to detail")
    parser.add_argument(
        "--resample",
        type=int,
        default=0,
        metavar="B",
        help="add the consensus refitted B times at the row's k, each on a random half of all "
        "the partitions, of which the consensus keeps those near k (partitions='matched')",
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    cases = scored_cases(args.datasets, args.seeds, args.cache, args.resample)
    candidates = {**CANDIDATES, **(RESAMPLED if args.resample else {})}
    print(candidate_table(cases, candidates))
    if args.per_dataset is not None:
        wanted = args.per_dataset or list(candidates)
        chosen = {k: v for k, v in candidates.items() if k in wanted}
        print()
        print(dataset_table(cases, chosen))
    print()
    print(bounds(cases))


if __name__ == "__main__":
    main()
