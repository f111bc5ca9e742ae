"""First call after an install: ``scconsensus demo`` with an empty numba cache.

Runs the demo in a subprocess whose ``NUMBA_CACHE_DIR`` is a fresh temporary folder
(nothing compiled yet, as after ``pip install``), and prints its wall and CPU time and
every kernel numba compiled on the way (numba's compile events: CPU and wall seconds of
each top-level compilation, nested ones included in their caller's).

Run from the repository root (one thread, as in the README's figures)::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/first_call.py

With ``--warmup``, ``scconsensus warmup`` (which ``tools/setup.sh`` runs after installing)
runs first in the same fresh cache, in a process of its own, and both are timed: the demo
then is the first call a user of the README's commands waits for.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def child(outdir: str) -> None:
    from numba.core import event

    sys.path.insert(0, ROOT)  # this checkout's package
    stack, rows = [], []

    class Timer(event.Listener):
        def on_start(self, ev):
            stack.append((time.perf_counter(), time.process_time()))

        def on_end(self, ev):
            wall, cpu = stack.pop()
            if not stack:
                fn = ev.data["dispatcher"].py_func
                name = f"{fn.__module__}.{fn.__qualname__}"
                rows.append((time.process_time() - cpu, time.perf_counter() - wall, name))

    event.register("numba:compile", Timer())
    from scconsensus import cli

    cli.main(["demo", "--outdir", outdir])
    rows.sort(reverse=True)
    print(f"\n{len(rows)} kernels compiled: {sum(r[0] for r in rows):.1f} s CPU")
    for cpu, wall, name in rows:
        print(f"{cpu:6.2f} s CPU {wall:6.2f} s wall  {name}")


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``cmd`` in a subprocess."""
    t0, c0 = time.perf_counter(), os.times()
    subprocess.run(cmd, env=env, check=True)
    wall, c1 = time.perf_counter() - t0, os.times()
    return wall, c1.children_user + c1.children_system - c0.children_user - c0.children_system


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        return child(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", action="store_true", help="run scconsensus warmup first")
    warm = parser.parse_args().warmup
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": path}
        if warm:
            wall, cpu = timed([sys.executable, "-m", "scconsensus", "warmup"], env)
            print(
                f"scconsensus warmup with an empty numba cache: {wall:.1f} s wall, {cpu:.1f} s CPU"
            )
        wall, cpu = timed([sys.executable, __file__, "--child", out], env)
    state = "after the warm-up" if warm else "with an empty numba cache"
    print(f"demo {state}: {wall:.1f} s wall, {cpu:.1f} s CPU")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
