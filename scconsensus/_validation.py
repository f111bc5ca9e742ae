"""Input checks shared by the array core and the AnnData wrappers.

Every public entry point validates here so that bad input fails with a message
that names the problem and the fix, never deep inside numba or BLAS.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._warnings import warn

RandomState = int | np.random.Generator | np.random.RandomState | None


def check_matrix(
    X: Any, name: str = "X", *, min_items: int = 3, keep_float32: bool = False
) -> np.ndarray | sp.csr_matrix:
    """Return ``X`` as a 2-D float array (or CSR matrix), refusing NaN/inf and tiny inputs.

    float64, or float32 left as it is with ``keep_float32`` (scanpy's ``X_pca``): k-means
    and kNN searches run in the input's precision, as scikit-learn's do, and a float64
    copy of 10^6 x 50 would cost 400 MB and a third of every k-means partition's time.
    """
    if hasattr(X, "dask") and hasattr(X, "compute"):
        # a dask array is read into memory here, where its chunks' kind is known: one of
        # sparse chunks would become an array of objects through np.asarray
        X = X.compute()
    float32 = keep_float32 and getattr(X, "dtype", None) == np.float32
    dtype = np.float32 if float32 else np.float64
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=dtype)
        values = X.data
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {X.dtype}.")
        X = X.astype(dtype, copy=False)
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
        why = " to cluster (2 or more clusters, each of fewer items)" if min_items == 3 else ""
        raise ValueError(f"{name} has {X.shape[0]} item(s); at least {min_items} are needed{why}.")
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
    if isinstance(value, str | bool) or not isinstance(value, int | float | np.number):
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}.")
    value = float(value)
    if not (0.0 < value <= 1.0):
        raise ValueError(f"{name} must be in (0, 1], got {value}.")
    return value


def check_int(value: Any, name: str, minimum: int | None = None, *, hint: str = "") -> int:
    """An integer count, the one rule for every count argument.

    Integral numbers (``3``, ``np.int64(3)``, ``3.0``, a 0-d array) are accepted; strings,
    booleans and fractional numbers are refused, so ``k="25"`` cannot be read as ``{2, 5}``.
    ``hint`` ends every refusal: what else the caller accepts (see :func:`k_hint`).
    """
    tail = f" {hint}" if hint else ""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, str):
        if _is_number(value):
            raise ValueError(
                f"{name} must be a number, not the string {value!r}; pass it without quotes.{tail}"
            )
        raise ValueError(f"{name} must be {_integer(minimum)}, not the string {value!r}.{tail}")
    if isinstance(value, float | np.floating) and np.isfinite(value) and float(value).is_integer():
        value = int(value)
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {value!r}.{tail}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be {_integer(minimum, below=True)}, got {value}.{tail}")
    return value


def _integer(minimum: int | None, *, below: bool = False) -> str:
    """The integers ``check_int`` takes, in words.

    ``below``: for an integer under ``minimum``, which need not be told it is one, so a
    bound that has no name reads "at least 2" rather than "an integer >= 2".
    """
    if minimum is None:
        return "an integer"
    bound = f"at least {minimum}" if below else f"an integer >= {minimum}"
    return {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, bound)


def _is_number(text: str) -> bool:
    """Whether ``text`` reads as a number, so that dropping its quotes is the fix."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def is_k_list(n_clusters: Any) -> bool:
    """Whether ``n_clusters`` names several K: any iterable but a string, a mapping or a
    0-d array (a list, tuple, range, set, 1-d array, pandas Series...)."""
    if isinstance(n_clusters, np.ndarray):
        return n_clusters.ndim > 0
    return isinstance(n_clusters, Iterable) and not isinstance(n_clusters, str | bytes | Mapping)


def k_hint(value: Any, *, lists: bool = False, nearest: bool = False) -> str:
    """The forms a number of clusters may take, for the end of a refusal of ``value``.

    ``lists``: a list of K is also taken (``tl.pcc``, ``tl.pla``); ``nearest``: the
    request of a method that returns the cut nearest to it (DPP), which also takes
    ``None`` and 1. A string that is ``"auto"`` in another case is told so.
    """
    if nearest:
        forms = '"auto" or None (the number chosen from the data) or an integer >= 1'
    elif lists:
        forms = '"auto" (K chosen from the ensemble), an integer >= 2 or a list of them: [4, 8]'
    else:
        forms = '"auto" (K chosen from the ensemble) or an integer >= 2'
    case = isinstance(value, str) and value != "auto" and value.strip().lower() == "auto"
    # a list where one K is taken: DPP cuts one consensus (a user trial passed [2, 5])
    several = not lists and is_k_list(value)
    return (
        f"Give {forms}"
        + (' ("auto" is lower case).' if case else ".")
        + (" This method returns one clustering: call it once per K." if several else "")
    )


#: Most restarts a solver accepts: each is a full fit, so more is a typo, not a wish.
MAX_RESTARTS = 1000


def check_restarts(value: Any, name: str) -> int:
    """A number of restarts in ``[1, MAX_RESTARTS]`` (``1e9`` would run for ever)."""
    value = check_int(value, name, 1)
    if value > MAX_RESTARTS:
        raise ValueError(
            f"{name}={value} restarts would each run a full fit; use at most {MAX_RESTARTS}."
        )
    return value


def check_bool(value: Any, name: str) -> bool:
    """``True`` or ``False`` (numpy booleans included); ``"yes"``, ``1`` and ``None`` are refused.

    A truthy string would otherwise switch an option on, and ``copy="no"`` would copy.
    """
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def check_number(value: Any, name: str, *, within: tuple[float, float] | None = None) -> float:
    """A finite real number (no strings, booleans, arrays or tuples), in ``within`` if given.

    ``within`` is a closed interval ``(low, high)``.
    """
    if isinstance(value, str | bool) or not isinstance(value, int | float | np.number):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    if within is not None and not within[0] <= value <= within[1]:
        raise ValueError(f"{name}={value:g} must lie in [{within[0]:g}, {within[1]:g}].")
    return value


def check_n_clusters(
    n_clusters: Any,
    n_items: int,
    name: str = "n_clusters",
    *,
    nearest: bool = False,
    hint: str = "",
) -> int | None:
    """The one ``n_clusters`` contract: an int in ``[2, n_items - 1]``; ``hint`` ends a
    refusal of its type or minimum (what else the caller takes: :func:`k_hint`).

    A model fitted at ``K`` clusters (PCC, PLA, the spectral start, ``max_k``) needs two
    clusters at least and fewer than items. ``nearest=True`` is the contract of a method
    that returns the cut *nearest* to a number asked for (DPP's thresholded consensus):
    ``None`` or ``"auto"`` (the number chosen from the data) pass as ``None``, and the
    trivial cuts are valid requests, so any int in ``[1, n_items]``.
    """
    if not nearest:
        n_clusters = check_int(n_clusters, name, 2, hint=hint)
        if n_clusters >= n_items:
            raise ValueError(too_many_clusters(name, n_clusters, n_items))
        return n_clusters
    # "auto" is what tl.pcc/tl.pla and the command line call a K chosen from the data
    if n_clusters is None or (isinstance(n_clusters, str) and n_clusters == "auto"):
        return None
    n_clusters = check_int(n_clusters, name, 1, hint=hint or k_hint(n_clusters, nearest=True))
    if n_clusters > n_items:
        raise ValueError(
            f"{name} must be between 1 and the number of items ({n_items}), got {n_clusters}."
        )
    return n_clusters


def check_options(value: Any, cls: type, name: str, default: Any = None) -> Any:
    """``value`` if it is an options record of type ``cls``; ``None``: ``default``, else
    ``cls()``."""
    if value is None:
        return cls() if default is None else default
    if not isinstance(value, cls):
        raise ValueError(
            f"{name} must be a {cls.__name__} (e.g. {name}={cls.__name__}()), "
            f"got {type(value).__name__}."
        )
    return value


def too_many_clusters(name: str, value: int, n_items: int, where: str = "items") -> str:
    """Why ``value`` clusters cannot be cut from ``n_items`` items, with advice that exists.

    Fewer than 3 items leave no valid choice (at least 2 clusters are needed and fewer
    than the number of items), so the advice is then to give more items, never
    "choose {name} < 2".
    """
    head = f"{name}={value} is too large for {n_items} {where}"
    if n_items <= 2:
        return (
            f"{head}: at least 3 items are needed for 2 or more clusters; use more items "
            "(or a larger subsample fraction)."
        )
    return f"{head}; choose {name} < {n_items} (or use more items)."


def check_min_mass(min_mass: Any, n_items: int) -> float:
    """A cluster-size threshold in ``[0, n_items)``: at or above ``n_items`` no cluster is left."""
    if isinstance(min_mass, str | bool) or not isinstance(min_mass, int | float | np.number):
        raise ValueError(f"min_mass must be a number of items, got {min_mass!r}.")
    min_mass = float(min_mass)
    if not (np.isfinite(min_mass) and 0.0 <= min_mass < n_items):
        raise ValueError(
            f"min_mass={min_mass:g} must lie in [0, {n_items}): clusters with an expected size "
            f"at most min_mass are dropped, so {n_items} items or more would drop them all. "
            "The default 0.5 drops clusters that hold less than half an item."
        )
    return min_mass


def check_key(key: Any, name: str = "key_added") -> str:
    """A key for ``.obs``/``.obsm``/``.uns``: a non-empty string without ``/``.

    ``.h5ad`` files store keys as HDF5 paths, so ``"a/b"`` would write a nested
    group that :func:`anndata.read_h5ad` cannot read back, losing the whole file.
    Called before any work so a bad key never leaves partial results behind.
    """
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"{name} must be a non-empty string, got {key!r}.")
    if "/" in key:
        raise ValueError(
            f"{name}={key!r} contains '/', which .h5ad files read as a folder: the saved file "
            f"could not be read back. Use another separator, e.g. {key.replace('/', '_')!r}."
        )
    return key


def check_kwargs(
    kwargs: Mapping[str, Any], valid: Iterable[str], where: str, *, suggest: Iterable[str] = ()
) -> None:
    """Refuse keyword arguments ``where`` does not take, suggesting the closest valid name.

    Parameters
    ----------
    kwargs
        The keyword arguments received.
    valid
        Names accepted in ``kwargs``.
    where
        The function, for the message.
    suggest
        Further names to suggest for a typo (the function's own parameters, which a
        ``**kwargs`` catch-all would otherwise swallow).
    """
    valid = sorted(valid)
    unknown = [name for name in kwargs if name not in valid]
    if not unknown:
        return
    candidates = [*valid, *suggest]
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(str(name), candidates, n=1, cutoff=0.6)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    accepted = f"valid names: {valid}" if valid else "it takes none"
    raise ValueError(f"{where} got unknown argument(s) {', '.join(hints)}; {accepted}.")


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


def random_state_record(random_state: RandomState) -> int | str | None:
    """How a run records ``random_state`` in its ``params``: the same for every method.

    An integer seed as an ``int``, ``None`` as ``None`` (h5ad keeps both), and a
    generator, ``RandomState`` or ``SeedSequence`` as ``"custom"``: its state cannot be
    written down, so the record says that the run cannot be replayed from it.
    """
    if random_state is None:
        return None
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        return int(random_state)
    return "custom"


def check_rng(random_state: RandomState) -> np.random.Generator:
    """A :class:`numpy.random.Generator` from any accepted ``random_state``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(seed_sequence(random_state))


def check_n_jobs(n_jobs: Any) -> int | None:
    """``None``, a positive number of workers, or a negative count from the end (-1 = all)."""
    if n_jobs is None:
        return None
    n_jobs = check_int(n_jobs, "n_jobs")
    if n_jobs == 0:
        raise ValueError(
            "n_jobs=0 asks for no workers; use n_jobs=1 (serial), a positive number of "
            "workers, or -1 for all cores."
        )
    return n_jobs


def check_correlation_rows(X: Any, distance: str) -> None:
    """Refuse items whose correlation distance is undefined (constant rows, one feature).

    A constant item has no correlation with anything; silently placing it at the
    largest distance makes it a singleton cluster, which looks like a finding.
    """
    if distance not in ("pearson", "spearman"):
        return
    if X.shape[1] < 2:
        raise ValueError(
            f"distance={distance!r} correlates items across features and needs at least 2 "
            "features; use distance='euclidean'."
        )
    dense = X.toarray() if sp.issparse(X) else np.asarray(X)
    constant = np.flatnonzero(np.ptp(dense, axis=1) == 0)
    if constant.size:
        raise ValueError(
            f"{constant.size} item(s) (e.g. row {constant[0]}) are constant across features, "
            f"so their {distance} correlation is undefined; remove them or use "
            "distance='euclidean'."
        )


def check_correlation_subsample(n_feat: int, p: int, distance: str, name: str) -> None:
    """Refuse a feature subsample too small to correlate items on (fewer than 2 features).

    On one feature every item is constant: all correlation distances are undefined, every
    partition arbitrary, and the consensus looked perfectly stable (PAC 0 at every k).
    """
    if n_feat < 1:
        raise ValueError(
            f"{name} keeps no feature of {p} per subsample; raise {name} to at least "
            f"{min(1.0, np.ceil(100 / p) / 100):g}."
        )
    if distance in ("pearson", "spearman") and n_feat < 2:
        raise ValueError(
            f"{name} keeps {n_feat} of {p} features per subsample, but distance={distance!r} "
            f"correlates items across features and needs at least 2: raise {name} (to at "
            f"least {min(1.0, np.ceil(200 / p) / 100):g}) or use distance='euclidean'."
        )


def check_choice(value: str, choices: Sequence[str], name: str) -> str:
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is not supported; choose one of {list(choices)}.")
    return value


def renamed_args(**old_to_new: str) -> Callable:
    """Keep old keyword names working for one release, with a ``FutureWarning``.

    The wrapped function's signature shows only the new names; ``__renamed__`` maps old to
    new (the R bridge forwards old names so that the warning reaches R users).

    Examples
    --------
    >>> import warnings
    >>> from scconsensus._validation import renamed_args
    >>> @renamed_args(methods="method")
    ... def f(method="kmeans"):
    ...     return method
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     f(methods="hc"), w[0].category.__name__
    ('hc', 'FutureWarning')
    """

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise ValueError(f"Pass {new}= only ({old}= is its old name).")
                warn(
                    f"{function.__name__}(): {old}= is now {new}=; the old name will stop "
                    "working in the next release.",
                    FutureWarning,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        wrapper.__renamed__ = dict(old_to_new)
        return wrapper

    return decorate
