"""Nothing lost: outputs are written whole or not at all, and refused before computing.

The slow tests run ``scconsensus run`` in subprocesses: SIGKILL at random instants, and two
runs on one output at once.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anndata as ad
import matplotlib.pyplot as plt
import numpy as np
import pytest

from scconsensus._io import atomic_dir, atomic_file, output_lock
from scconsensus._report import check_report_folder
from scconsensus.cli import main
from scconsensus.pl._utils import finish


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_atomic_file_keeps_old_content_on_failure(tmp_path):
    target = tmp_path / "a.h5ad"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_file(target) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_atomic_dir_swaps_whole_folder(tmp_path):
    folder = tmp_path / "figs"
    folder.mkdir()
    (folder / "stale.png").write_text("old")
    with pytest.raises(RuntimeError), atomic_dir(folder) as tmp:
        (tmp / "new.png").write_text("new")
        raise RuntimeError
    assert [p.name for p in folder.iterdir()] == ["stale.png"]
    with atomic_dir(folder) as tmp:
        (tmp / "new.png").write_text("new")
    # a figure of the previous run does not survive next to the new ones
    assert [p.name for p in folder.iterdir()] == ["new.png"]
    assert _leftovers(tmp_path) == []


def test_report_folder_with_other_files_is_refused(tmp_path):
    check_report_folder(tmp_path / "new")
    check_report_folder(tmp_path)  # empty
    (tmp_path / "report.md").write_text("# old")
    (tmp_path / "a.png").write_bytes(b"")
    check_report_folder(tmp_path)  # an earlier report
    (tmp_path / "thesis.tex").write_text("")
    with pytest.raises(ValueError, match=r"thesis\.tex.*new or empty folder"):
        check_report_folder(tmp_path)


def test_pl_save_failure_keeps_previous_figure(tmp_path, monkeypatch):
    path = tmp_path / "plot.png"
    path.write_bytes(b"previous")
    fig, _ = plt.subplots()

    def broken(fname, **kwargs):
        Path(fname).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(OSError, match="disk full"):
        finish(fig, show=False, save=path, writekey="plot", result=None)
    assert path.read_bytes() == b"previous"
    assert _leftovers(tmp_path) == []
    plt.close(fig)


@pytest.fixture
def previous_run(tmp_path, blobs_adata):
    src, out = tmp_path / "in.h5ad", tmp_path / "out.h5ad"
    blobs_adata.write_h5ad(src)
    blobs_adata.write_h5ad(out)
    return src, out


def test_backed_reader_on_output_refused_before_computing(previous_run, capsys):
    src, out = previous_run
    before = _digest(out)
    reader = ad.read_h5ad(out, backed="r")
    try:
        assert main(["run", str(src), "--out", str(out), "--no-figures"]) == 2
    finally:
        reader.file.close()
    captured = capsys.readouterr()
    assert captured.err.startswith("scconsensus: error: --out")
    assert "held open" in captured.err and "close it there" in captured.err
    assert "ensemble:" not in captured.out  # refused before the ensemble was built
    assert _digest(out) == before


def test_second_writer_of_one_output_refused(previous_run, capsys):
    src, out = previous_run
    before = _digest(out)
    with output_lock(out):  # as another run holds it
        assert main(["run", str(src), "--out", str(out), "--no-figures"]) == 2
    captured = capsys.readouterr()
    assert "being written by another scconsensus run" in captured.err
    assert "ensemble:" not in captured.out
    assert _digest(out) == before
    assert _leftovers(out.parent) == []  # the lock file goes with its holder


def test_a_failed_run_leaves_no_lock_file(tmp_path, capsys):
    out = tmp_path / "y.h5ad"
    # refused after the lock is taken: the input is read before n_clusters is judged
    assert main(["run", "iris", "--out", str(out), "--n-clusters", "500", "--no-figures"]) == 2
    assert "too large" in capsys.readouterr().err
    assert _leftovers(tmp_path) == [] and not out.exists()


def test_unwritable_output_refused(previous_run, capsys):
    src, out = previous_run
    target = out.parent / "is_a_file" / "out.h5ad"
    (out.parent / "is_a_file").write_text("")
    assert main(["run", str(src), "--out", str(target), "--no-figures"]) == 2
    assert "cannot create the folder" in capsys.readouterr().err


def test_a_kill_between_the_renames_of_a_folder_swap_loses_no_report(tmp_path, monkeypatch):
    """A trial killed a run after the previous report was renamed away and before the new
    one was renamed in: the folder was gone, and the next run deleted the hidden copy
    before it even read its input. The next writer now puts it back."""
    from scconsensus import _io

    folder = tmp_path / "out_figures"
    folder.mkdir()
    (folder / "report.md").write_text("previous")
    real = os.replace
    calls = []

    def killed_at_the_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise SystemExit  # the process dies here; no cleanup of the renamed-away copy
        real(src, dst)

    monkeypatch.setattr(_io.os, "replace", killed_at_the_second)
    with pytest.raises(SystemExit), atomic_dir(folder) as tmp:
        (tmp / "report.md").write_text("new")
    monkeypatch.setattr(_io.os, "replace", real)
    assert not folder.exists() and [p.name[:17] for p in tmp_path.iterdir()] == [
        ".out_figures.old-"
    ]
    # a run that fails on its input touches nothing
    out = tmp_path / "out.h5ad"
    assert main(["run", str(tmp_path / "missing.h5ad"), "--out", str(out)]) == 2
    assert len(_leftovers(tmp_path)) == 1
    _io.remove_stale(folder)  # what the next run does under its lock
    assert (folder / "report.md").read_text() == "previous" and _leftovers(tmp_path) == []


def test_out_and_report_are_published_together(previous_run, tmp_path, monkeypatch, capsys):
    """A trial killed a run while its report was drawn: out.h5ad held the new run, the
    report the previous one. Both are now renamed into place after both are written; a
    report that fails still publishes the file (the results are not lost to a figure)
    and keeps the previous report, and says so."""
    import scconsensus._cli_publish as cli

    src, out = previous_run
    folder = tmp_path / "figs"
    argv = ["run", str(src), "--out", str(out), "--figures", str(folder), "--no-progress"]
    argv += ["--method", "pla", "--n-partitions", "6", "--k", "3,5"]
    assert main(argv) == 0
    before, report = _digest(out), (folder / "report.md").read_text()

    def fails(*args, **kwargs):
        raise RuntimeError("a figure failed")

    monkeypatch.setattr(cli, "draw_report", fails)
    assert main([*argv[:-2], "--k", "3,6"]) == 2
    err = capsys.readouterr().err
    assert "the report could not be drawn (RuntimeError: a figure failed); wrote" in err
    assert "left the previous report in" in err
    assert _digest(out) != before and (folder / "report.md").read_text() == report
    assert main([*argv[:5], str(tmp_path / "new_figs"), *argv[6:]]) == 2
    said = capsys.readouterr()
    assert "and wrote no report." in said.err and "pla" in said.out  # the table was said
    assert _leftovers(tmp_path) == [] and _leftovers(out.parent) == []
    # a killed demo's temporary folder under an explicit --figures is cleaned up too
    (tmp_path / ".figs.tmp-0123456789ab").mkdir()
    monkeypatch.undo()
    assert main(argv) == 0
    assert _leftovers(tmp_path) == []


def test_a_report_named_as_the_out_file_keeps_its_own_leftovers(tmp_path):
    """A review: --out res.h5ad and --figures res share the stem "res", and the cleanup of
    one took the other's hidden copy (deleting the only report, or renaming it onto
    res.h5ad)."""
    from scconsensus._io import remove_stale

    (tmp_path / "res.h5ad").write_text("file")
    old = tmp_path / ".res.old-0123456789ab"
    old.mkdir()
    (old / "report.md").write_text("previous")
    remove_stale(tmp_path / "res.h5ad")  # not the file's: left alone
    assert old.is_dir()
    (tmp_path / "res.h5ad").unlink()
    remove_stale(tmp_path / "res.h5ad")
    assert old.is_dir() and not (tmp_path / "res.h5ad").exists()
    remove_stale(tmp_path / "res")  # the folder's own: put back
    assert (tmp_path / "res" / "report.md").read_text() == "previous"


def test_the_default_figure_folder_is_locked_under_its_own_name(previous_run, capsys):
    """A review: a run writing res_figures through --figures did not stop another whose
    --out res.h5ad has it as its default folder, which removed the first one's files."""
    src, out = previous_run
    figures = out.parent / (out.stem + "_figures")
    with output_lock(figures, "--figures"):  # as another run holds it
        assert main(["run", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scconsensus: error: --figures") and "another scconsensus run" in err


def test_outputs_are_checked_before_and_made_after_the_input(tmp_path, monkeypatch, capsys):
    """A trial: a missing input left an empty new folder for --out; an unwritable
    --figures failed with a traceback after the whole run; an empty input was told
    "--n-clusters 0 is too large"."""
    out = tmp_path / "new" / "sub" / "out.h5ad"
    assert main(["run", str(tmp_path / "missing.h5ad"), "--out", str(out)]) == 2
    assert not (tmp_path / "new").exists()
    ad.AnnData(np.zeros((0, 3))).write_h5ad(tmp_path / "empty.h5ad")
    assert main(["run", str(tmp_path / "empty.h5ad"), "--out", str(out)]) == 2
    assert "has 0 cell(s); at least 3 are needed" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    (tmp_path / "a_file").write_text("")
    argv = ["run", "iris", "--out", str(tmp_path / "o.h5ad"), "--figures"]
    assert main([*argv, str(tmp_path / "a_file" / "figs")]) == 2
    assert "--figures: cannot create the folder" in capsys.readouterr().err
    import tempfile

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    assert main([*argv, str(tmp_path / "ro" / "figs")]) == 2
    err = capsys.readouterr()
    assert "cannot be written" in err.err and "Read-only file system" in err.err
    assert "ensemble:" not in err.out  # refused before any computing
    assert not (tmp_path / "o.h5ad").exists()


def test_report_folders_that_would_lose_the_output_or_a_link_are_refused(
    tmp_path, monkeypatch, capsys
):
    """A verification trial: --figures F with --out F/res.h5ad "wrote" the file and then
    deleted it with the old folder; a linked --figures lost its link, left a hidden one
    that broke every later run, and a dangling one failed after the run; a mount point or
    an immutable report folder failed after the run; a one-cell input made --out's folder
    before it was refused."""
    from scconsensus import _io

    out = tmp_path / "F" / "res.h5ad"
    for figures in (tmp_path / "F", out, tmp_path):
        assert main(["run", "iris", "--out", str(out), "--figures", str(figures)]) == 2
        assert "the report replaces its folder whole" in capsys.readouterr().err
    assert not (tmp_path / "F").exists()
    (tmp_path / "real").mkdir()
    for name, target in (("link", tmp_path / "real"), ("dangling", tmp_path / "nowhere")):
        (tmp_path / name).symlink_to(target)
        argv = ["run", "iris", "--out", str(tmp_path / "o.h5ad"), "--figures", str(tmp_path / name)]
        assert main(argv) == 2
        said = capsys.readouterr()
        assert "is a link; name the folder itself" in said.err and "ensemble:" not in said.out
    # a link left by an older run under the temporary name is removed, not kept, nor put
    # back as the report folder when it points to one (a review)
    for target in ("nowhere", "real"):
        (tmp_path / ".rep.old-0123456789ab").symlink_to(tmp_path / target)
        _io.remove_stale(tmp_path / "rep")
        assert not os.path.lexists(tmp_path / ".rep.old-0123456789ab")
        assert not os.path.lexists(tmp_path / "rep")
    # the current folder, or one holding it, is no report folder (a review: --figures .)
    (tmp_path / "real" / "deeper").mkdir()
    monkeypatch.chdir(tmp_path / "real" / "deeper")
    for here in (".", ".."):
        assert main(["run", "iris", "--out", str(tmp_path / "o.h5ad"), "--figures", here]) == 2
        assert "holds the current folder" in capsys.readouterr().err
    (tmp_path / "rep").mkdir()
    real = os.replace

    def immutable(src, dst):
        if Path(src) == tmp_path / "rep":
            raise PermissionError(1, "Operation not permitted")
        real(src, dst)

    monkeypatch.setattr(_io.os, "replace", immutable)
    argv = ["run", "iris", "--out", str(tmp_path / "o.h5ad"), "--figures", str(tmp_path / "rep")]
    assert main(argv) == 2
    said = capsys.readouterr()
    assert "--figures" in said.err and "cannot be replaced (Operation not permitted)" in said.err
    assert "ensemble:" not in said.out and not (tmp_path / "o.h5ad").exists()
    monkeypatch.undo()
    ad.AnnData(np.zeros((1, 3))).write_h5ad(tmp_path / "one.h5ad")
    assert main(["run", str(tmp_path / "one.h5ad"), "--out", str(tmp_path / "n" / "o.h5ad")]) == 2
    assert "has 1 cell(s); at least 3 are needed" in capsys.readouterr().err
    assert not (tmp_path / "n").exists()


def _cli(src: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "scconsensus", "run", str(src), "--out", str(out),
            "--n-partitions", "6", "--k", "3,5", "--method", "pla", "--no-progress"]  # fmt: skip


def _report_complete(folder: Path) -> bool:
    """``report.md`` exists and every figure it shows is there."""
    text = (folder / "report.md").read_text()
    shown = [line.split("(")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    return bool(shown) and all((folder / name).is_file() for name in shown)


@pytest.mark.slow
def test_sigkill_never_damages_output_or_input(tmp_path, blobs_adata):
    src, out = tmp_path / "in.h5ad", tmp_path / "out.h5ad"
    blobs_adata.write_h5ad(src)
    start = time.perf_counter()
    subprocess.run(_cli(src, out), check=True, capture_output=True)
    clean = time.perf_counter() - start
    rng = np.random.default_rng(0)
    kills = 0
    for trial in range(48):  # until 20 kills: on a loaded machine some runs finish first
        if kills >= 20:
            break
        # every other run writes onto its own input, the audit's worst case
        target = src if trial % 2 else out
        before = _digest(target)
        proc = subprocess.Popen(_cli(src, target), stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.0) * clean)  # late instants: computing and writing
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        code = proc.wait()  # 0 when it finished just before the signal
        assert code in (0, -signal.SIGKILL)
        kills += code == -signal.SIGKILL
        if _digest(target) != before:  # replaced: the complete new result, never a part
            assert "pla" in ad.read_h5ad(target).obs
        for path in (src, out):
            back = ad.read_h5ad(path)  # raises on a truncated or half-written file
            np.testing.assert_array_equal(back.X, blobs_adata.X)
        assert _report_complete(tmp_path / "out_figures")
    assert kills >= 20
    # the next complete runs clear what the killed ones left (temporary files, locks)
    for target in (src, out):
        subprocess.run(_cli(src, target), check=True, capture_output=True)
    assert _leftovers(tmp_path) == []


_WAITING_RUN = """
import sys
from scconsensus.cli import main
sys.stdin.readline()  # imported; run when the test says
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_concurrent_runs_one_result_one_error(tmp_path, blobs_adata):
    src, out = tmp_path / "in.h5ad", tmp_path / "out.h5ad"
    blobs_adata.write_h5ad(src)
    args = _cli(src, out)[3:]
    second = subprocess.Popen(
        [sys.executable, "-c", _WAITING_RUN, *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    first = subprocess.Popen(_cli(src, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lock = tmp_path / ".out.h5ad.lock"
    while not lock.exists():  # the first run has checked its output and holds it
        assert first.poll() is None, first.communicate()
        time.sleep(0.01)
    _, err = second.communicate("go\n")
    assert first.wait() == 0
    assert second.returncode == 2
    assert "being written by another scconsensus run" in err
    assert "Traceback" not in err
    back = ad.read_h5ad(out)
    np.testing.assert_array_equal(back.X, blobs_adata.X)
    assert "pla" in back.obs


def _interrupt_at_line(fault_at: int, codes: set) -> None:
    """Raise KeyboardInterrupt at the ``fault_at``-th line run inside ``codes``."""
    state = {"n": 0}

    def trace(frame, event, arg):
        if frame.f_code not in codes or state["n"] >= fault_at:
            return None
        if event == "line":
            state["n"] += 1
            if state["n"] == fault_at:
                raise KeyboardInterrupt
        return trace

    sys.settrace(trace)


def _slots(adata) -> dict:
    """The keys of every slot a store writes, and the older result it must keep."""
    return {
        "obs": list(adata.obs.columns),
        "obsm": sorted(adata.obsm),
        "obsp": sorted(adata.obsp),
        "uns": sorted(adata.uns),
        "old": adata.obs["old"].tolist(),
    }


def _interrupt_every_line(adata, write, codes: set):
    """Run ``write(copy of adata)`` with a Ctrl-C forced at its 1st, 2nd, ... line
    inside ``codes`` until it completes: each interrupted run must leave its copy as it
    was or complete (a Ctrl-C in the log line after the store). Returns ``(lines
    interrupted, the completed copy)``."""
    complete = adata.copy()
    write(complete)
    states = (_slots(adata), _slots(complete))
    for fault_at in range(1, 1000):
        target = adata.copy()
        try:
            _interrupt_at_line(fault_at, codes)
            write(target)
        except KeyboardInterrupt:
            assert _slots(target) in states, f"half a result after a Ctrl-C at line {fault_at}"
            continue
        finally:
            sys.settrace(None)
        return fault_at - 1, target
    raise AssertionError("the store never completed")


def _with_older_result(adata):
    import pandas as pd

    adata = adata.copy()
    adata.obs["old"] = pd.Categorical(["x"] * adata.n_obs)  # an older result to keep
    return adata


def test_store_is_all_or_nothing_under_interrupts(blobs_adata):
    """A Ctrl-C at every line of the store step leaves the AnnData unchanged or complete."""
    from scconsensus.tl import _anndata

    adata = _with_older_result(blobs_adata)
    membership = np.eye(3)[np.arange(adata.n_obs) % 3]
    codes = {
        _anndata.store_consensus.__code__,
        _anndata.consensus_entries.__code__,
        _anndata.assign_all.__code__,
    }

    def write(target):
        _anndata.store_consensus(target, "pcc", membership, method="pcc", params={"a": 1})

    interrupted, adata = _interrupt_every_line(adata, write, codes)
    assert interrupted > 10  # at each line, then complete
    assert adata.obs["pcc"].tolist()[:3] == ["0", "1", "2"]
    assert adata.uns["pcc"]["params"] == {"a": 1}


def test_consensus_k_store_of_every_k_is_all_or_nothing(blobs_adata):
    """``keep_k="all", store_matrices=True`` writes one key set per k: a Ctrl-C at any
    line of that store leaves none of them (the audit's 149 ms window)."""
    from scanpy import logging as logg

    from scconsensus.core.consensus_k import consensus_k
    from scconsensus.tl import _anndata, _consensus_k

    adata = _with_older_result(blobs_adata)
    res = consensus_k(adata.X, 4, 8, keep_matrices=True, random_state=0)
    extra = {"use_rep": None, "layer": None, "store_matrices": True}
    codes = {
        f.__code__
        for f in (
            _consensus_k._write,
            _consensus_k._entries_k,
            _anndata.labels_table,
            _anndata.consensus_entries,
            _anndata.merge_entries,
            _anndata.assign_all,
        )
    }

    def write(target):
        _consensus_k._write(target, res, "ck", "all", extra, (logg.info("start"), 0.0))

    interrupted, adata = _interrupt_every_line(adata, write, codes)
    assert interrupted > 30
    for k in (2, 3, 4):
        assert adata.obs[f"ck_k{k}"].cat.categories.size == k
        assert adata.obsp[f"ck_k{k}_consensus"].shape == (adata.n_obs,) * 2
    assert list(adata.uns["ck"]["keys"]) == ["ck_k2", "ck_k3", "ck_k4"]


def test_interruptible_raises_ctrl_c_while_the_worker_runs():
    """The caller gets the KeyboardInterrupt within a wait slice, not after the call."""
    import _thread
    import threading

    from scconsensus._threads import interruptible

    timer = threading.Timer(0.2, _thread.interrupt_main)  # Ctrl-C, as the signal sets it
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        interruptible(time.sleep, 5.0)  # releases the interpreter, as LAPACK via ctypes
    assert time.monotonic() - start < 3.0
    assert interruptible(divmod, 7, 2) == (3, 1)
    with pytest.raises(ZeroDivisionError):  # the worker's error reaches the caller
        interruptible(divmod, 1, 0)


def test_eigh_evr_is_scipy_evr_bit_for_bit():
    import scipy.linalg

    from scconsensus.core._lapack import eigh_evr

    rng = np.random.default_rng(0)
    for n in (2, 9, 120):
        a = rng.normal(size=(n, n))
        a = a + a.T
        for subset in (None, (n - 2, n - 1), (0, 0)):
            w, v = eigh_evr(a, subset_by_index=subset)
            ref_w, ref_v = scipy.linalg.eigh(a, driver="evr", subset_by_index=subset)
            assert w.tobytes() == ref_w.tobytes() and v.tobytes() == ref_v.tobytes()
    with pytest.raises(ValueError, match="Requested eigenvalue indices"):
        eigh_evr(a, subset_by_index=(3, 200))


def test_eigh_evr_overwrites_only_a_writeable_fortran_float64_input():
    """overwrite_a skips the copy only where LAPACK may write: any other input (C order,
    float32, a list, a read-only array) is copied and left as it was, with the same bits."""
    from scconsensus.core._lapack import eigh_evr

    a = np.cov(np.random.default_rng(0).normal(size=(9, 30)))
    ref_w, ref_v = eigh_evr(a, (5, 8))
    readonly = np.asfortranarray(a)
    readonly.setflags(write=False)
    for x in (a, a.astype(np.float32), a.tolist(), readonly):
        before = np.array(x, dtype=np.float64)
        w, v = eigh_evr(x, (5, 8), overwrite_a=True)
        assert np.array_equal(np.asarray(x, dtype=np.float64), before)
        if np.asarray(x).dtype == np.float64:
            assert w.tobytes() == ref_w.tobytes() and v.tobytes() == ref_v.tobytes()
    scratch = np.asfortranarray(a)
    w, v = eigh_evr(scratch, (5, 8), overwrite_a=True)
    assert w.tobytes() == ref_w.tobytes() and not np.array_equal(scratch, a)  # no copy


_DPP_CHILD = """
import sys, threading, time
import anndata as ad
import numpy as np
import scconsensus as scc
from scconsensus.core.dpp import _samplers

def marked(L, *args, **kwargs):
    print("eigh", flush=True)  # the eigendecomposition starts
    return eigh(L, *args, **kwargs)

eigh, _samplers.eigh_evr = _samplers.eigh_evr, marked
rng = np.random.default_rng(0)
adata = ad.AnnData(rng.normal(size=(int(sys.argv[1]), 5)).astype(np.float32))
before = (list(adata.obs), list(adata.obsm), list(adata.obsp), list(adata.uns))
try:
    scc.tl.dpp(adata, mode="dense", n_runs=5, use_rep="X")
except KeyboardInterrupt:
    caught = time.monotonic()
    busy = any(t.name == "scconsensus-worker" for t in threading.enumerate())
    after = (list(adata.obs), list(adata.obsm), list(adata.obsp), list(adata.uns))
    print("caught", caught, busy, after == before, flush=True)
"""


def test_ctrl_c_during_dpp_eigendecomposition_arrives_at_once(tmp_path):
    """SIGINT while LAPACK decomposes DPP's kernel (seconds at 3,000 items, which ignored
    Ctrl-C until it returned): the KeyboardInterrupt reaches the caller at once and the
    AnnData is unchanged. ``benchmarks/interrupt.py`` measures the latency itself; 3 s
    here leaves room for a loaded machine."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _DPP_CHILD, "3000"],
        stdout=subprocess.PIPE, text=True, env=env, cwd=Path(__file__).parents[1],
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "eigh"
        time.sleep(0.2)  # inside the decomposition (seconds on one thread)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        fields = proc.stdout.readline().split()
    finally:
        proc.kill()
        proc.wait()
    assert fields[0] == "caught", fields
    assert fields[2] == "True"  # the decomposition was still running when it arrived
    assert fields[3] == "True"  # nothing written
    assert float(fields[1]) - sent < 3.0
