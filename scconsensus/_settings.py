"""Package-wide settings (memory limits for dense ``n x n`` objects)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Settings:
    """Global knobs of scconsensus.

    Attributes
    ----------
    max_dense_bytes
        Largest dense ``n x n`` allocation (in bytes, all matrices of one call
        together) that scconsensus makes before refusing with an error that
        points to the sparse route. Default 4 GiB.
    dense_auto_max_items
        ``mode="auto"`` uses dense co-association up to this many items and the
        sparse (sampled pairs) route above it.
    auto_fit_above, auto_fit_size
        With ``fit_size="auto"``, PCC fits ``auto_fit_size`` items drawn at random
        and extends the fit to the rest when there are more than
        ``auto_fit_above`` items.
    """

    max_dense_bytes: int = 4 * 1024**3
    dense_auto_max_items: int = 5_000
    auto_fit_above: int = 100_000
    auto_fit_size: int = 50_000


settings = Settings()
