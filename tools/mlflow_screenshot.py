"""Screenshot an ``mlflow ui`` view with headless Chromium driven over DevTools.

``python tools/mlflow_screenshot.py --experiment live --view traces --out docs/img/live_traces.png``
starts ``mlflow ui`` on a free loopback port over the tracking store (``--uri``, else
``$MLFLOW_TRACKING_URI``, else the repo's ``mlflow.db``), waits until it answers
``/health``, starts ``chromium-headless-shell`` (``apt-get install
chromium-headless-shell``; ``chromium`` works too) with ``--remote-debugging-port`` on
another free loopback port and drives the page over the Chrome DevTools Protocol
(``tools/cdp.py``): it waits for the table rows, clicks away MLflow 3.17's "Detect
Issues" tip and assistant panel, for ``--view sessions`` clicks the Traces tab's "Group
traces by session" control, then writes ``Page.captureScreenshot`` to the PNG and stops
both. Used for the pictures in docs/live.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from cdp import Cdp  # tools/cdp.py: run as a script, tools/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
VIEWS = {"traces": "traces", "sessions": "traces", "runs": "runs"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def browser() -> str:
    """The first headless Chromium on PATH, or exit naming the package to install."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no Chromium found: apt-get install chromium-headless-shell (or chromium)")


def wait_for(url: str, seconds: float) -> None:
    """Poll ``url`` until it answers 200, or exit after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"mlflow ui did not answer {url} within {seconds:.0f} s")


def experiment_id(uri: str, name: str) -> str:
    from mlflow.tracking import MlflowClient

    found = MlflowClient(uri).get_experiment_by_name(name)
    if found is None:
        sys.exit(f"no experiment {name!r} in {uri}")
    return found.experiment_id


# Page scripts (Runtime.evaluate). Controls are found by their text, aria-label or title.
FIND = """(re) => [...document.querySelectorAll('button, [role=button], a')].filter(b => {
  const r = b.getBoundingClientRect();
  const labels = [b.innerText, b.getAttribute('aria-label'), b.getAttribute('title')];
  return r.width > 0 && r.height > 0 && labels.some(t => t && re.test(t.trim()));
})"""
CLICK = "(" + FIND + ")({re}).map(b => (b.click(), 1)).length"
DISMISS = r"/^(got it|close|dismiss|close assistant|close panel)$/i"
ROWS = "document.querySelectorAll('[role=row], tbody tr').length"
GROUP = r"/^group (traces )?by session$/i"


def clicks(page: Cdp, pattern: str) -> int:
    """Click every visible control whose text/aria-label/title matches ``pattern``."""
    return int(page.evaluate(CLICK.replace("{re}", pattern)) or 0)


def drive(page: Cdp, url: str, view: str, out: Path, seconds: float) -> Path:
    """Load ``url``, clear MLflow's tip and assistant panel, group if asked, capture."""
    page.call("Page.enable")
    page.call("Page.navigate", url=url)
    if not page.wait_until(f"{ROWS} > 1", seconds):
        sys.exit(f"the {view} view drew no table rows within {seconds:.0f} s")
    time.sleep(2)  # late popovers and panels open after the first rows
    for _ in range(3):
        n = clicks(page, DISMISS)
        print(f"dismissed {n} tip/panel control(s)", file=sys.stderr)
        if not n:
            break
        time.sleep(0.5)
    if view == "sessions":
        if not clicks(page, GROUP):
            sys.exit("no 'Group by session' control on the Traces view")
        if not page.wait_until(f"{ROWS} > 1", seconds):
            sys.exit(f"the sessions grouping drew no rows within {seconds:.0f} s")
        time.sleep(1)
        clicks(page, DISMISS)
    time.sleep(1)
    shot = page.call("Page.captureScreenshot", format="png")
    out.write_bytes(base64.b64decode(shot["data"]))
    return out


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group ``proc`` leads (SIGKILL after 30 s) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:  # uvicorn waiting on a worker: stop it all
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    with contextlib.suppress(ProcessLookupError):  # children outliving their leader
        os.killpg(proc.pid, signal.SIGKILL)


def capture(url: str, view: str, out: Path, seconds: float) -> Path:
    """Run headless Chromium with DevTools on a free loopback port and ``drive`` it."""
    port = free_port()
    with tempfile.TemporaryDirectory(
        prefix="shots-profile-", ignore_cleanup_errors=True
    ) as profile:
        # its own process group: /usr/bin/chromium-headless-shell is a sh wrapper
        chrome = subprocess.Popen(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1600,1000", f"--remote-debugging-port={port}",
             "--remote-debugging-address=127.0.0.1", f"--user-data-dir={profile}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            page = Cdp.page(port)
            try:
                return drive(page, url, view, out, seconds)
            finally:
                page.close()
        finally:
            stop_group(chrome)


def screenshot(
    uri: str, experiment: str, view: str, out: Path, seconds: float = 120.0,
    start_seconds: float = 600.0,
) -> Path:  # fmt: skip
    """Start ``mlflow ui`` over ``uri``, capture the experiment's ``view`` into ``out``."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/health", start_seconds)
        url = f"{base}/#/experiments/{experiment_id(uri, experiment)}/{VIEWS[view]}"
        out.parent.mkdir(parents=True, exist_ok=True)
        return capture(url, view, out, seconds)
    finally:
        stop_group(server)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--uri", default=os.environ.get("MLFLOW_TRACKING_URI"))
    p.add_argument("--experiment", default="live")
    p.add_argument("--view", choices=sorted(VIEWS), default="traces")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "live_traces.png")
    p.add_argument("--wait", type=float, default=120.0, help="seconds for rows to appear")
    args = p.parse_args(argv)
    uri = args.uri or f"sqlite:///{ROOT / 'mlflow.db'}"
    print(screenshot(uri, args.experiment, args.view, args.out, args.wait))


if __name__ == "__main__":
    main()
