"""Input checks shared by the array core and the AnnData wrappers.

Every public entry point validates here so that bad input fails with a message
that names the problem and the fix, never deep inside numba or BLAS.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._settings import settings

RandomState = int | np.random.Generator | np.random.RandomState | None


def check_matrix(X: Any, name: str = "X", *, min_items: int = 2) -> np.ndarray | sp.csr_matrix:
    """Return ``X`` as a 2-D float array (or CSR matrix), refusing NaN/inf and tiny inputs."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        values = X.data
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {X.dtype}.")
        X = X.astype(np.float64, copy=False)
        values = X
    if X.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D (items x features) matrix, got shape {X.shape}. "
            "Reshape a single feature with X.reshape(-1, 1)."
        )
    if not np.all(np.isfinite(values)):
        n_bad = int(np.size(values) - np.count_nonzero(np.isfinite(values)))
        raise ValueError(
            f"{name} contains {n_bad} NaN or infinite value(s). Impute or remove them "
            "(e.g. np.nan_to_num, or drop the affected items/features) before clustering."
        )
    if X.shape[0] < min_items:
        raise ValueError(
            f"{name} has {X.shape[0]} item(s); consensus clustering needs at least {min_items}."
        )
    if X.shape[1] < 1:
        raise ValueError(f"{name} has no features (shape {X.shape}).")
    return X


def check_labels(labels: Any, name: str = "labels") -> np.ndarray:
    """An ensemble label matrix as C-contiguous int32 (items x partitions), -1 = unsampled."""
    labels = np.asarray(labels)
    if labels.ndim == 1:
        labels = labels[:, None]
    if labels.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D (items x partitions) label matrix, got shape {labels.shape}."
        )
    if labels.dtype.kind == "f":
        if not np.all(np.isfinite(labels)) or not np.all(labels == np.round(labels)):
            raise ValueError(f"{name} must hold integer cluster labels (-1 for unsampled items).")
    elif labels.dtype.kind not in "iub":
        raise ValueError(f"{name} must hold integer cluster labels, got dtype {labels.dtype}.")
    if labels.shape[0] < 2:
        raise ValueError(f"{name} has {labels.shape[0]} item(s); at least 2 are needed.")
    if labels.shape[1] < 1:
        raise ValueError(f"{name} has no partitions (shape {labels.shape}).")
    if labels.size and labels.min() < -1:
        raise ValueError(f"{name} has labels below -1; use -1 only to mark unsampled items.")
    if labels.size and labels.max() > np.iinfo(np.int32).max:
        raise ValueError(f"{name} has labels too large for int32.")
    return np.ascontiguousarray(labels, dtype=np.int32)


def check_fraction(value: float, name: str) -> float:
    """A fraction in (0, 1]."""
    value = float(value)
    if not (0.0 < value <= 1.0):
        raise ValueError(f"{name} must be in (0, 1], got {value}.")
    return value


def check_n_clusters(n_clusters: int, n_items: int, name: str = "n_clusters") -> int:
    """A number of clusters in [2, n_items - 1] (or 1..n for maxima)."""
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, int | np.integer):
        if isinstance(n_clusters, float) and n_clusters.is_integer():
            n_clusters = int(n_clusters)
        else:
            raise ValueError(f"{name} must be an integer, got {n_clusters!r}.")
    n_clusters = int(n_clusters)
    if n_clusters < 2:
        raise ValueError(f"{name} must be at least 2, got {n_clusters}.")
    if n_clusters >= n_items:
        raise ValueError(
            f"{name}={n_clusters} is too large for {n_items} items; choose {name} < {n_items}."
        )
    return n_clusters


def seed_sequence(random_state: RandomState) -> np.random.SeedSequence:
    """Turn any accepted ``random_state`` into a :class:`numpy.random.SeedSequence`.

    Child sequences spawned from it give every partition or restart its own
    stream, which is what makes results independent of ``n_jobs``.
    """
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2**63)))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(2**31)))
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}.")
        return np.random.SeedSequence(int(random_state))
    raise ValueError(
        f"random_state must be None, an int, or a numpy Generator, got {type(random_state)}."
    )


def check_rng(random_state: RandomState) -> np.random.Generator:
    """A :class:`numpy.random.Generator` from any accepted ``random_state``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(seed_sequence(random_state))


def check_dense_memory(n_items: int, *, n_matrices: int = 1, itemsize: int = 8, what: str) -> None:
    """Refuse a dense ``n x n`` allocation above :attr:`settings.max_dense_bytes`.

    Raises
    ------
    MemoryError
        Naming the size that would be needed and the sparse alternative.
    """
    need = int(n_items) ** 2 * int(itemsize) * int(n_matrices)
    if need > settings.max_dense_bytes:
        raise MemoryError(
            f"{what} needs {n_matrices} dense {n_items} x {n_items} matrix/matrices "
            f"({need / 1024**3:.1f} GiB), above the limit of "
            f"{settings.max_dense_bytes / 1024**3:.1f} GiB. Use mode='sparse' (sampled pairs) "
            "or raise scconsensus.settings.max_dense_bytes if you have the memory."
        )


def check_choice(value: str, choices: Sequence[str], name: str) -> str:
    """One of a fixed set of strings."""
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not supported; choose one of {list(choices)}.")
    return value
