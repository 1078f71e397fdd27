"""How a run ends when its process is stopped, and how a later run recognises an orphan.

- ``Stopped``: SIGTERM (what SLURM and other schedulers send on preemption or timeout)
  and SIGINT (Ctrl-C) are raised as this exception in the main thread, so the code that
  owns an MLflow run can mark it KILLED with the reason before the process exits with
  ``128 + signal`` (143, 130). ``install_handlers`` sets both; an inherited "ignore" on
  SIGINT (a background job of a non-interactive shell, or a sweep's job process, which
  its main process stops) is respected. Only the first stop is raised (a second one
  would cut the closing of the runs in two); ``deferred`` holds a stop back until a
  block that must not be cut in two ends.
- ``watch_parent``: a job process started by the sweep's main process stops itself (as
  if sent SIGTERM, with the reason) when the main process sends it the reason (the
  sweep was stopped) or dies, so no worker outlives a stopped or killed sweep.
- ``this_process`` / ``is_dead``: every run is tagged with the process that owns it
  (host, boot, pid, start time); a RUNNING run whose process is gone from this machine
  is an orphan (``experiments.tracking.Tracker.reap_orphans``). The start time and the
  boot id guard against a reused pid and a rebooted machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from functools import cache
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

STOP_GRACE_SECONDS = 15.0
"""How long a process asked to stop may take to close its runs before it is killed."""


class Stopped(KeyboardInterrupt):
    """The process was asked to stop by ``signum``; ``reason`` says why, for the run."""

    def __init__(self, signum: int, reason: str | None = None) -> None:
        self.signum = signum
        self.reason = reason or f"stopped by {signal.Signals(signum).name}"
        super().__init__(self.reason)

    @property
    def exit_code(self) -> int:
        """``128 + signal``: 143 for SIGTERM, 130 for SIGINT, as a shell reports it."""
        return 128 + self.signum


_pending_reason: dict[str, str] = {}
_deferred: dict[str, Any] = {"depth": 0, "stop": None}


def _raise_stopped(signum: int, _frame: Any) -> None:
    """Raise the first stop (later ones are ignored: the process is already closing its
    runs, and a second exception in the middle of that would leave them half-closed);
    inside ``deferred()`` the stop waits until the block ends."""
    stop = Stopped(signum, _pending_reason.pop("reason", None))
    if _deferred["depth"]:
        _deferred["stop"] = _deferred["stop"] or stop
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    raise stop


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A block a stop must not cut in two (handing a job to its new process: a stop in
    the middle leaves the child reading half a message); a stop that arrives inside is
    raised when the block ends."""
    _deferred["depth"] += 1
    try:
        yield
    finally:
        _deferred["depth"] -= 1
    stop, _deferred["stop"] = _deferred["stop"], None
    if stop is not None and not _deferred["depth"]:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        raise stop


def install_handlers() -> None:
    """Raise ``Stopped`` on SIGTERM, and on SIGINT unless it is ignored (inherited)."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, _raise_stopped)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _raise_stopped)


def stop_self(reason: str) -> None:
    """Stop this process as SIGTERM would, with ``reason`` (from any thread)."""
    _pending_reason["reason"] = reason
    os.kill(os.getpid(), signal.SIGTERM)


def watch_parent(
    alive: Connection, done: threading.Event, grace: float = STOP_GRACE_SECONDS
) -> threading.Thread:
    """A daemon thread that stops this process when the main process sends a reason on
    ``alive`` (the sweep was stopped) or its other end closes (the main process died)
    before ``done`` is set; it exits hard if the stop takes longer than ``grace``."""

    def watch() -> None:
        reason = None
        with contextlib.suppress(EOFError, OSError):
            reason = alive.recv()
        if done.is_set():
            return
        stop_self(str(reason) if reason else "the sweep's main process died")
        time.sleep(grace)
        os._exit(137)

    thread = threading.Thread(target=watch, name="procmem-parent-watch", daemon=True)
    thread.start()
    return thread


@cache
def boot_id() -> str:
    """This boot of the machine (Linux), so a pid from before a reboot is never alive."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux); None if it is gone or
    a zombie (dead, not yet reaped by its parent)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def this_process() -> str:
    """``host/boot/pid/start``: the process that owns a run (tag ``procmem.process``)."""
    pid = os.getpid()
    return f"{socket.gethostname()}/{boot_id()}/{pid}/{start_time(pid) or '?'}"


def is_dead(owner: str) -> bool:
    """True when ``owner`` (from ``this_process``) was a process of this machine that no
    longer runs; False when it runs, or belongs to another machine (cannot be told)."""
    try:
        host, boot, pid, start = owner.split("/")
    except ValueError:
        return False
    if host != socket.gethostname():
        return False
    if boot != boot_id():
        return True
    now = start_time(int(pid))
    return now is None or (start != "?" and now != start)
