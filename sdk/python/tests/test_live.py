"""The SDK against a real API (see conftest.py)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import random

import pytest

import sessionbox
from sessionbox import AsyncSessionbox, Sessionbox

from conftest import session_id

CHART = "import matplotlib.pyplot as plt\nprint('drawing', flush=True)\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n6 * 7"
MIB = 1024 * 1024


def big_bytes(n: int) -> bytes:
    return random.Random(7).randbytes(n)


def test_flow_sync(sb):
    """session, execute with callbacks and as an iterator, a chart, 20 MiB up and down, a command."""
    with sb.create_session(session_id("flow")) as s:
        out, results, errors = [], [], []
        run = s.execute(CHART, on_stdout=out.append, on_result=results.append, on_error=errors.append)
        assert run.success and run.text == "42"
        assert out == ["drawing\n"] and errors == []
        png = next(r.png for r in results if "png" in r)
        assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
        assert run.results == results, "the whole result holds what the callbacks saw"

        kinds = [line.type for line in s.execute_stream("print(1)\n1/0") if line.type != "keepalive"]
        assert kinds == ["start", "stdout", "error", "done"]

        data = big_bytes(20 * MIB)
        progress = []
        entry = s.files.write("data/big.bin", data, on_progress=lambda n, total: progress.append(n))
        assert entry.size == len(data)
        assert progress[0] == 0 and progress[-1] == len(data) and progress == sorted(progress)
        with pytest.raises(sessionbox.TooLargeError) as e:
            sb.read_file(s.session_id, "data/big.bin")
        assert e.value.status == 413 and e.value.type.endswith("/too-large")
        back = s.files.read("data/big.bin")
        assert len(back) == len(data) and back == data

        cmd = s.commands.run("sha256sum data/big.bin | cut -c1-64")
        assert cmd.exit_code == 0 and cmd.stdout.strip() == hashlib.sha256(data).hexdigest()


def test_flow_async(api):
    async def main():
        async with AsyncSessionbox(api.base_url, api.api_key) as sb:
            async with await sb.create_session(session_id("aflow")) as s:
                out, results = [], []

                async def on_result(r):
                    results.append(r)

                run = await s.execute(CHART, on_stdout=out.append, on_result=on_result)
                assert run.text == "42" and out == ["drawing\n"]
                assert base64.b64decode(next(r.png for r in results if "png" in r))[:4] == b"\x89PNG"

                lines = [line async for line in s.execute_stream("for i in range(3): print(i, flush=True)")]
                assert "".join(l.text for l in lines if l.type == "stdout") == "0\n1\n2\n"
                assert lines[-1].type == "done" and lines[-1].summary.success

                data = big_bytes(20 * MIB)
                await s.files.write("big.bin", io.BytesIO(data))
                assert await s.files.read("big.bin") == data
                n = 0
                async for chunk in s.files.iter("big.bin"):
                    n += len(chunk)
                assert n == len(data)

                seen = []
                cmd = await s.commands.run("echo a; echo b >&2; exit 3", on_stdout=seen.append, on_stderr=seen.append)
                assert (cmd.exit_code, cmd.stdout, cmd.stderr) == (3, "a\n", "b\n")
                assert sorted(seen) == ["a\n", "b\n"]

    asyncio.run(main())


def test_errors_are_typed(sb):
    with pytest.raises(sessionbox.InvalidInputError) as e:
        sb.execute(session_id("err"), "")
    err = e.value
    assert isinstance(err, sessionbox.SessionboxError)
    assert (err.status, err.type) == (400, "https://sessionbox.dev/problems/invalid-input")
    assert "code" in err.detail and err.request_id

    other = session_id("unknown")
    with pytest.raises(sessionbox.NotFoundError) as e:
        sb.status(other)
    assert other in e.value.detail

    with pytest.raises(sessionbox.InvalidInputError):
        list(sb.execute_stream(other, "1", timeout_secs=100000))

    with pytest.raises(sessionbox.UnauthorizedError):
        Sessionbox(sb._cfg.base_url, "sbx_wrong").execute_once("1")


def test_env_defaults(api, monkeypatch):
    monkeypatch.setenv("SESSIONBOX_URL", api.base_url)
    monkeypatch.setenv("SESSIONBOX_API_KEY", api.api_key)
    with Sessionbox() as sb:
        assert sb.execute_once("1 + 1").text == "2"
    monkeypatch.delenv("SESSIONBOX_URL")
    with pytest.raises(ValueError, match="SESSIONBOX_URL"):
        Sessionbox()


def test_files(sb, tmp_path):
    s = sb.session(session_id("files"))
    try:
        s.files.write("t/a.csv", "a,b\n1,2\n")
        assert s.files.read_text("t/a.csv") == "a,b\n1,2\n"
        src = tmp_path / "in.bin"
        src.write_bytes(bytes(range(256)) * 40000)  # ~10 MB: presigned from a path
        assert s.files.write("t/in.bin", src).size == src.stat().st_size
        dest = tmp_path / "out.bin"
        assert s.files.download("t/in.bin", dest) == src.stat().st_size
        assert dest.read_bytes() == src.read_bytes()
        names = sorted(e.name for e in s.files.list("t").entries)
        assert names == ["a.csv", "in.bin"]
        s.files.remove("t/a.csv")
        with pytest.raises(sessionbox.NotFoundError):
            s.files.read("t/a.csv")
        url = s.files.download_url("t/in.bin")
        assert url.size_bytes == src.stat().st_size
    finally:
        s.delete()


def test_commands_contexts_runs(sb):
    s = sb.session(session_id("cmds"))
    try:
        bg = s.commands.start("echo a; sleep 1; echo b")
        out = "".join(l.text for l in s.commands.attach(bg.command_id) if l.type == "stdout")
        assert out.endswith("b\n")
        _read_until_the_end(s)
        ctx = s.contexts.create(cwd="/tmp")
        assert s.execute("import os\nos.getcwd() == '/tmp'", context=ctx.context_id).text == "True"
        assert any(c.context_id == ctx.context_id for c in s.contexts.list().contexts)
        s.contexts.delete(ctx.context_id)
        with pytest.raises(sessionbox.NotFoundError):
            s.execute("1", context=ctx.context_id)
        accepted = s.submit_run("sum(range(10))", idempotency_key=s.session_id)
        assert s.submit_run("sum(range(10))", idempotency_key=s.session_id).run_id == accepted.run_id
        run = sb.wait_for_run(accepted.run_id, interval=0.1)
        assert run.status == "succeeded" and run.result["results"][0]["text"] == "45"
        assert s.session_id in [x.session_id for x in sb.sessions(limit=1)]
        assert s.stop().state == "stopped"
    finally:
        s.delete()


def _read_until_the_end(s):
    """read_output repeatedly until the command ends: every line once, then its exit code."""
    bg = s.commands.start("for i in $(seq 1 20); do echo line$i; sleep 0.05; done; echo warn >&2; exit 4")
    stdout, stderr = "", ""
    for _ in range(60):
        out = s.commands.read_output(bg.command_id, wait_secs=1)
        assert out.command_id == bg.command_id
        stdout, stderr = stdout + out.stdout, stderr + out.stderr
        if not out.running and not out.more:
            break
    else:
        pytest.fail("the command never ended")
    assert out.exit_code == 4 and out.stdout_bytes == len(stdout) and bg.command_id in out.stdout_path
    assert stdout == "".join(f"line{i}\n" for i in range(1, 21)) and stderr == "warn\n"
    again = s.commands.read_output(bg.command_id)
    assert (again.stdout, again.stderr, again.running, again.exit_code) == ("", "", False, 4)


def test_quickstart_example_runs(api):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "SESSIONBOX_URL": api.base_url, "SESSIONBOX_API_KEY": api.api_key, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, str(root / "examples" / "quickstart.py"), session_id("example")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "step 0\nstep 1\nstep 2\nresult: 45\n" in out.stdout
    assert "mean temperature: 10.5" in out.stdout
    assert "exit code: 3" in out.stdout
    assert "refused: 400 https://sessionbox.dev/problems/invalid-input (InvalidInputError)" in out.stdout
