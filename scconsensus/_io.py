"""Files written whole or not at all: temporary names, renames, and a lock per output.

Every file the package writes (``scconsensus run``'s ``.h5ad``, its figure folder and
report, ``pl``'s ``save=``) goes to a temporary name in the folder of its target and is
renamed into place only once complete: :func:`os.replace` within one folder is atomic, so
a reader — or a run killed at any instant — sees the old file or the new one, never a
truncated one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: files are still written atomically, only not locked
    fcntl = None

__all__ = [
    "atomic_dir",
    "atomic_file",
    "check_not_open",
    "check_replaceable",
    "check_writable",
    "output_lock",
    "remove_stale",
]

#: Middle part of every temporary name, so stale ones (a killed run's) are recognisable;
#: ``_OLD`` marks the previous folder while :func:`atomic_dir` swaps the new one in.
_TMP, _OLD = ".tmp-", ".old-"


def _temporary(path: Path, marker: str = _TMP) -> Path:
    """A hidden name next to ``path`` that keeps its suffix (formats are read from it)."""
    return path.with_name(f".{path.stem}{marker}{uuid.uuid4().hex[:12]}{path.suffix}")


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` when the block ends.

    An exception (or Ctrl-C) inside the block removes the temporary file and leaves
    ``path`` as it was.

    Parameters
    ----------
    path
        The file to write; its folder must exist.

    Yields
    ------
    pathlib.Path
        Where to write instead, in the same folder and with the same suffix.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from scconsensus._io import atomic_file
    >>> target = Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_file(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'
    """
    path = Path(path)
    tmp = _temporary(path)
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    """Flush ``path`` to disk, so the rename never publishes a file the OS has not written."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a new temporary folder next to ``path``; swap it in for ``path`` when done.

    The old folder is renamed away, the new one renamed onto ``path``, then the old one
    removed: the folder at ``path`` is always one complete set, never a mix of two. A
    failure inside the block removes the new folder and leaves the old one; a kill between
    the two renames leaves the old one under a name that :func:`remove_stale` renames back.

    Parameters
    ----------
    path
        The folder to (re)place; its parent is created.

    Yields
    ------
    pathlib.Path
        The empty folder to fill.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    tmp.mkdir()
    try:
        yield tmp
        old = _temporary(path, _OLD)
        if path.exists():
            os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_stale(path: str | Path) -> None:
    """Remove temporary files and folders a killed writer of ``path`` left behind, and
    put back a folder :func:`atomic_dir` had renamed away when the kill left ``path``
    without one (the previous report is then the only one: a trial lost it).

    Call only while holding :func:`output_lock` on ``path``: no one else writes them then.
    """
    path = Path(path)
    olds = sorted(_left_by(path, _OLD), key=lambda p: p.lstat().st_mtime)
    last = olds[-1] if olds else None
    if last and last.is_dir() and not last.is_symlink() and not os.path.lexists(path):
        os.replace(olds.pop(), path)
    for stale in [*_left_by(path, _TMP), *olds]:
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:  # a file, or a link (rmtree refuses links: a trial's stayed and broke runs)
            stale.unlink(missing_ok=True)


def check_replaceable(folder: str | Path, option: str) -> None:
    """Refuse an existing folder :func:`atomic_dir` could not rename away (a mount point,
    an immutable folder: a trial's report failed after the whole run), by renaming it
    away and back. Call while holding :func:`output_lock` on it, before any computing; a
    kill between the two renames is undone by :func:`remove_stale`.

    Raises
    ------
    ValueError
        Naming the folder and the reason.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return
    if os.path.ismount(folder):
        raise ValueError(
            f"{option} {str(folder)!r} is a mount point, which the report cannot replace "
            "whole; name a folder inside it."
        )
    away = _temporary(folder, _OLD)
    try:
        os.replace(folder, away)
    except OSError as err:
        raise ValueError(
            f"{option} {str(folder)!r} cannot be replaced ({err.strerror}); the report "
            "replaces its folder whole: name another folder."
        ) from None
    os.replace(away, folder)


def _left_by(path: Path, marker: str) -> list[Path]:
    """The temporary names :func:`_temporary` made for ``path`` itself, not for a
    neighbour of the same stem (``--out res.h5ad`` beside ``--figures res``)."""
    name = re.compile(
        rf"\.{re.escape(path.stem)}{re.escape(marker)}[0-9a-f]{{12}}{re.escape(path.suffix)}"
    )
    return [p for p in path.parent.glob(f".{path.stem}{marker}*") if name.fullmatch(p.name)]


def check_not_open(path: str | Path, option: str = "--out") -> None:
    """Refuse a file another process has open through HDF5 (h5py, ``backed`` AnnData).

    HDF5 takes a shared ``flock`` for every reader; an exclusive one that cannot be had
    means someone holds the file. Checked before any computing, so a run is never lost
    at its last step.

    Parameters
    ----------
    path
        The output; nothing is checked when it does not exist yet.
    option
        The option that named it, for the message.

    Raises
    ------
    ValueError
        When the file is held open, or exists and cannot be replaced.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{option} {str(path)!r} is a folder; name an .h5ad file.")
    if fcntl is None or not path.exists():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ValueError(
            f"{option} {str(path)!r} is held open (e.g. by a reader with backed='r' "
            "or h5py); close it there, or write to another file."
        ) from None
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def check_writable(folder: str | Path, option: str) -> None:
    """Refuse a folder an output cannot be written into, creating nothing.

    The folder, or where it would be created (its nearest existing parent), is tried by
    making and removing a hidden folder in it: permissions alone pass a read-only file
    system or an immutable folder for root (a trial's report failed after the whole run).

    Parameters
    ----------
    folder
        Where an output goes.
    option
        The option that named it, for the message.

    Raises
    ------
    ValueError
        Naming the folder and the reason.
    """
    folder = Path(folder)
    # a link counts where it stands, dangling or not: mkdir would meet it there
    base = next(
        p for p in (folder, *folder.parents) if p.exists() or p.is_symlink() or p == Path(p.anchor)
    )
    if not base.is_dir():
        what = "a link to nothing" if base.is_symlink() and not base.exists() else "a file"
        raise ValueError(
            f"{option}: cannot create the folder {str(folder)!r} ({str(base)!r} is {what}); "
            "choose a folder you can write to."
        )
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".scconsensus{_TMP}", dir=base))
    except OSError as err:
        where = "" if base == folder else f" (in {str(base)!r})"
        raise ValueError(
            f"{option}: the folder {str(folder)!r} cannot be written{where}: {err.strerror}; "
            "choose a folder you can write to."
        ) from None


def _check_folder(folder: Path, option: str) -> None:
    """The folder an output goes into can be written, and exists."""
    check_writable(folder, option)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # what the probe cannot foresee (a race, a full disk)
        raise ValueError(
            f"{option}: cannot create the folder {str(folder)!r} ({err.strerror}); "
            "choose a folder you can write to."
        ) from None


@contextlib.contextmanager
def output_lock(path: str | Path, option: str = "--out") -> Iterator[None]:
    """Hold an exclusive lock on ``path`` for a whole run; a second writer is refused.

    The lock is an ``flock`` on a hidden file ``.{name}.lock`` next to ``path``, taken
    without waiting. It is released (and the file removed) when the block ends, or by the
    operating system when the process dies, so a killed run never blocks the next.

    Parameters
    ----------
    path
        The output file.
    option
        The option that named it, for the messages.

    Raises
    ------
    ValueError
        When the folder cannot be written or another process holds the lock.
    """
    path = Path(path)
    _check_folder(path.parent, option)
    lock = path.with_name(f".{path.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    held = False
    try:
        _acquire(fd, lock, path, option)
        held = True
        yield
    finally:
        if held:  # a failed run too; never the file of the run that holds it
            lock.unlink(missing_ok=True)  # before the release, so no one locks a removed file
        os.close(fd)


def _acquire(fd: int, lock: Path, path: Path, option: str) -> None:
    if fcntl is None:
        return
    busy = ValueError(
        f"{option} {str(path)!r} is being written by another scconsensus run; wait for it "
        "to finish, or write to another file or folder."
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise busy from None
    # the holder before us may have removed the file between our open and our lock
    try:
        same = os.stat(lock).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        same = False
    if not same:
        raise busy
