"""Package-wide settings (memory limits for dense ``n x n`` objects)."""

from __future__ import annotations

import os
from dataclasses import dataclass

#: The environment variable that sets :attr:`Settings.max_dense_bytes` at import.
ENV_MAX_DENSE_BYTES = "SCCONSENSUS_MAX_DENSE_BYTES"


@dataclass
class Settings:
    """Global knobs of scconsensus.

    Attributes
    ----------
    max_dense_bytes
        Largest dense ``n x n`` allocation (in bytes, all matrices of one call
        together, for PCC, PLA and DPP their working arrays included) that
        scconsensus makes before refusing with an error that points to the
        sparse route. Default 4 GiB, or the environment variable
        ``SCCONSENSUS_MAX_DENSE_BYTES`` (bytes) when set before import: the command
        line's way to raise it.
    dense_auto_max_items
        ``mode="auto"`` uses dense co-association up to this many items and the
        sparse (sampled pairs) route above it (PCC and PLA: see also the next).
    dense_auto_max_items_knn
        PCC's and PLA's ``mode="auto"`` limit where the sparse route would draw kNN
        pairs (``pairs`` ``"auto"`` or ``"knn"``, ``n_neighbors > 0`` and a
        representation at hand): sampled kNN and random pairs, not all pairs, above
        this many fitted items (and never above ``dense_auto_max_items``). On 20
        clear groups of unequal sizes (2,000 cells, 5 seeds) PCC on all pairs
        labelled 18-19 clusters (PLA 18-20), on kNN pairs 20 on every seed, for a
        third to half the CPU; on digits at the true K, PCC's ARI 0.60 became 0.68
        (``benchmarks/README.md``). Default 1,000: the labelled panel's smaller sets
        stay on all pairs, where kNN pairs lost (krumsiek11, 640 cells: PCC 0.51 to
        0.45, PLA 0.44 to 0.37).
    auto_fit_size
        With ``fit_size="auto"``, PCC and PLA fit at most this many items drawn
        at random and extend the fit to the rest. One number, no threshold, so
        the cost grows smoothly with n: a full fit up to it, above it a fit of
        constant size plus an extension linear in n. ``None`` (default): each
        method's own, 10,000 for PCC and 20,000 for PLA. On 100,000 planted
        cells (``benchmarks/scale.py``) PCC fitted on 10,000 items reaches ARI
        0.980 in 7.5 s CPU, against 0.978 in 12.7 s fitted on 20,000
        (``benchmarks/README.md``).
    """

    max_dense_bytes: int = 4 * 1024**3
    dense_auto_max_items: int = 5_000
    dense_auto_max_items_knn: int = 1_000
    auto_fit_size: int | None = None

    def __setattr__(self, name: str, value: object) -> None:
        # Checked on assignment, so a bad value fails where it is set, not as a raw
        # TypeError deep inside the next clustering call.
        if name not in _COUNTS:
            hint = _REMOVED.get(name, f"the settings are {', '.join(_COUNTS)}")
            raise AttributeError(f"scconsensus.settings has no {name!r}: {hint}.")
        if not (value is None and name in _OPTIONAL):
            value = _check_count(value, name)
        super().__setattr__(name, value)


#: Settings that are non-negative whole numbers (those in ``_OPTIONAL`` may be ``None``).
_COUNTS = ("max_dense_bytes", "dense_auto_max_items", "dense_auto_max_items_knn", "auto_fit_size")
#: Settings that may also be ``None`` (each method's own default).
_OPTIONAL = ("auto_fit_size",)
#: Names that existed once, and what replaced them.
_REMOVED = {
    "auto_fit_above": "fit_size='auto' now fits at most settings.auto_fit_size items at any n "
    "(no threshold); set auto_fit_size instead",
}


def _check_count(value: object, name: str) -> int:
    """``value`` as a non-negative int; integral floats (``4e9``) accepted, strings refused."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        also = " or None (each method's own)" if name in _OPTIONAL else ""
        raise ValueError(
            f"scconsensus.settings.{name} must be a whole number{also}, got {value!r}; "
            f"e.g. scconsensus.settings.{name} = {_EXAMPLES.get(name, 1000)}."
        )
    value = int(value)
    if value < 0:
        raise ValueError(f"scconsensus.settings.{name} must be non-negative, got {value}.")
    return value


_EXAMPLES = {"max_dense_bytes": "8 * 1024**3", "auto_fit_size": "20_000"}


settings = Settings()


def _from_environment() -> str | None:
    """:attr:`Settings.max_dense_bytes` from ``SCCONSENSUS_MAX_DENSE_BYTES``; for a value that
    is not a non-negative whole number of bytes, the words that say it is ignored. They are
    said when the limit is first read (:func:`scconsensus._memory_guard.limit`), not at
    import: an error there would end every call, ``scconsensus --version`` too, in a
    traceback, and a warning there comes before the command line can word it as its own."""
    text = os.environ.get(ENV_MAX_DENSE_BYTES, "").strip().replace("_", "")
    if not text:
        return None
    try:
        try:
            number = int(text)  # exact for any size; float() rounds above 2**53
        except ValueError:
            number = float(text)
            number = int(number) if number.is_integer() else number
        settings.max_dense_bytes = number
    except ValueError:
        return (
            f"{ENV_MAX_DENSE_BYTES}={os.environ[ENV_MAX_DENSE_BYTES]!r} is not a non-negative "
            f"whole number of bytes: ignored, the limit stays {settings.max_dense_bytes} bytes "
            f"(e.g. {ENV_MAX_DENSE_BYTES}=8589934592 for 8 GiB)."
        )
    return None


#: What :func:`_from_environment` found wrong, said once by the memory guard.
ENV_PROBLEM = [_from_environment()]
