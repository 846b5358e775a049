"""The API the tests talk to: SESSIONBOX_URL and SESSIONBOX_API_KEY when both
are set, else a `sessionbox serve` built from this repository and started on a
free port with a temporary data dir and a generated key."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[3]


class Api:
    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url
        self.api_key = api_key


def _serve(tmp: Path):
    binary = os.environ.get("SESSIONBOX_BIN")
    if not binary:
        binary = str(tmp / "sessionbox")
        subprocess.run(["go", "build", "-o", binary, "./cmd/sessionbox"], cwd=REPO, check=True)
    key = "sbx_" + secrets.token_hex(16)
    proc = subprocess.Popen(
        [binary, "serve", "--addr", "127.0.0.1:0", "--data-dir", str(tmp / "data"), "--api-keys", f"py={key}", "--min-free-mib", "-1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    logs = []
    for line in proc.stderr:
        logs.append(line)
        m = re.search(r"serving on (http://\S+)", line)
        if m:
            break
    else:
        proc.wait()
        raise RuntimeError(f"sessionbox serve exited with {proc.returncode} before serving:\n{''.join(logs)}")
    # Keep draining its log so serve never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, Api(m.group(1), key)


@pytest.fixture(scope="session")
def api():
    url, key = os.environ.get("SESSIONBOX_URL"), os.environ.get("SESSIONBOX_API_KEY")
    if url and key:
        yield Api(url, key)
        return
    tmp = Path(tempfile.mkdtemp(prefix="sessionbox-py-"))
    proc, a = _serve(tmp)
    try:
        yield a
    finally:
        # SIGTERM: serve kills its sandboxes on the way out.
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def sb(api):
    from sessionbox import Sessionbox

    with Sessionbox(api.base_url, api.api_key) as client:
        yield client


def session_id(name: str) -> str:
    return f"py-{name}-{secrets.token_hex(4)}"
