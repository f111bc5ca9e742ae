"""``scconsensus run``'s outputs, published: the ``.h5ad`` and the report written to
temporary names and renamed into place together, then the console's summary."""

from __future__ import annotations

import argparse
from contextlib import nullcontext
from pathlib import Path

import anndata as ad

from ._io import atomic_dir, atomic_file
from ._report import draw_report
from ._report_table import NA_NOTE, results_table

__all__ = ["publish"]


def publish(adata: ad.AnnData, args: argparse.Namespace, run: tuple, figures: Path | None) -> int:
    """Write ``--out`` and the report, each to a temporary name, and rename both into place
    one after the other at the end: a kill leaves the previous pair, or (in the instant
    between the renames) the new file beside the previous report, never a part of either.
    A report that fails leaves the previous one and still publishes the file: the run's
    results are not lost to a figure. ``run``: the result keys, the input's results
    computed again, the truth column."""
    keys, replaced, truth = run
    out, failed = Path(args.out), None
    table = results_table(adata, keys, truth)
    had_report = figures is not None and (figures / "report.md").is_file()
    with atomic_dir(figures) if figures is not None else nullcontext() as folder:
        with atomic_file(out) as tmp:
            adata.write_h5ad(tmp)
            if folder is not None:
                try:
                    draw_report(adata, folder, keys, truth=truth, progress=args.progress)
                except Exception as err:  # said below, once the file is out
                    failed = err
        _say_results(adata, keys, truth, replaced, out, table)
        if failed is not None:  # the new folder is dropped, the previous report kept
            left = "wrote no report"
            if had_report:
                left = f"left the previous report in {figures} as it was"
            raise ValueError(
                f"the report could not be drawn ({type(failed).__name__}: {failed}); wrote "
                f"{out}, and {left}."
            ) from failed
    print(f"wrote {out}" + (f" and {figures / 'report.md'}" if figures is not None else ""))
    return 0


def _say_results(adata, keys, truth, replaced: list[str], out: Path, table) -> None:
    """The console's summary: results computed again, and the table of results."""
    if replaced:
        verb = "is" if len(replaced) == 1 else "are"
        print(f"note: the input's {', '.join(replaced)} {verb} computed again in {out}")
    if not table.empty:
        # cluster sizes make lines wider than a terminal; report.md lists them
        table = table.drop(columns="sizes").set_index("result").round(3)
        print(table.to_string(na_rep="n/a", index_names=False))
        if table.isna().to_numpy().any():
            print(NA_NOTE)
