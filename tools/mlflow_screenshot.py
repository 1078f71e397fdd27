"""Screenshot an ``mlflow ui`` view with headless Chromium (the Debian package).

``python tools/mlflow_screenshot.py --experiment live --view traces --out docs/img/live_traces.png``
starts ``mlflow ui`` on a free loopback port over the tracking store (``--uri``, else
``$MLFLOW_TRACKING_URI``, else the repo's ``mlflow.db``), waits until it answers
``/health``, lets ``chromium-headless-shell`` (``apt-get install
chromium-headless-shell``; ``chromium`` works too) load the experiment's view
(``traces``, ``runs`` or ``chat-sessions``) with a virtual-time budget for the page's
requests, writes the PNG and stops the server. Used for the pictures in docs/live.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
VIEWS = {"traces": "traces", "runs": "runs", "chat-sessions": "chat-sessions"}


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


def screenshot(
    uri: str, experiment: str, view: str, out: Path, wait_ms: int = 20000,
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
        subprocess.run(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1600,1000", f"--virtual-time-budget={wait_ms}",
             f"--screenshot={out}", url],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180,
        )  # fmt: skip
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:  # uvicorn waiting on a worker: stop it all
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(30)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--uri", default=os.environ.get("MLFLOW_TRACKING_URI"))
    p.add_argument("--experiment", default="live")
    p.add_argument("--view", choices=sorted(VIEWS), default="traces")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "live_traces.png")
    p.add_argument("--wait-ms", type=int, default=20000, help="virtual time for the page")
    args = p.parse_args(argv)
    uri = args.uri or f"sqlite:///{ROOT / 'mlflow.db'}"
    print(screenshot(uri, args.experiment, args.view, args.out, args.wait_ms))


if __name__ == "__main__":
    main()
