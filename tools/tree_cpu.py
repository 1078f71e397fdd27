"""CPU seconds of a command's whole process tree: ``python tools/tree_cpu.py CMD ...``.

``/usr/bin/time`` counts only the descendants that were waited for. A sweep's fork server
(``experiments.launcher``) outlives the sweep's main process and is never waited for, so
its preload and every job forked from it are missing from that count. Here this process
is a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): orphans are re-parented to it and
reaped, so their CPU is counted. It prints ``user``, ``sys``, their total and the wall time
of the command to stderr, and exits with the command's status.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
ORPHAN_WAIT_SECONDS = 60.0


def reap_orphans(deadline: float) -> None:
    """Reap every remaining descendant, until none is left or ``deadline`` passes."""
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.2)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    start = time.monotonic()
    code = subprocess.call(argv)
    wall = time.monotonic() - start
    reap_orphans(time.monotonic() + ORPHAN_WAIT_SECONDS)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = usage.ru_utime, usage.ru_stime
    print(
        f"CPU user {user:.3f} s, sys {system:.3f} s, total {user + system:.3f} s; "
        f"wall {wall:.1f} s; exit {code}",
        file=sys.stderr,
    )
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
