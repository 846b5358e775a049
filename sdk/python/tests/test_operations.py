"""Every operation of pkg/api/openapi.json has a method on both clients, so a
new route cannot land without its Python call (or a reason here why not)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

import sessionbox
from sessionbox import AsyncSessionbox, Sessionbox

DOC = Path(__file__).resolve().parents[3] / "pkg" / "api" / "openapi.json"

#: operationId -> the methods that call it.
METHODS = {
    "listSessions": ["list_sessions", "sessions"],
    "startSandbox": ["start", "create_session"],
    "stopSandbox": ["stop"],
    "sandboxStatus": ["status"],
    "sandboxMetrics": ["metrics"],
    "execute": ["execute"],
    "executeStream": ["execute_stream"],
    "executeOnce": ["execute_once"],
    "executeOnceStream": ["execute_once_stream"],
    "reset": ["reset"],
    "install": ["install"],
    "installStream": ["install_stream"],
    "checkpoint": ["checkpoint"],
    "deleteSession": ["delete_session"],
    "listFiles": ["list_files"],
    "readFile": ["read_file", "download_file", "iter_file"],
    "writeFile": ["write_file", "upload_file"],
    "deleteFile": ["delete_file"],
    "uploadUrl": ["upload_file"],
    "importFile": ["upload_file"],
    "downloadUrl": ["download_url", "download_file"],
    "uploadUrls": ["upload_urls"],
    "submitRun": ["submit_run"],
    "getRun": ["get_run", "wait_for_run"],
    "runCommand": ["run_command", "run_command_stream", "start_command"],
    "listCommands": ["list_commands"],
    "getCommand": ["get_command", "attach_command"],
    "readCommandOutput": ["read_command_output"],
    "killCommand": ["kill_command"],
    "createContext": ["create_context"],
    "listContexts": ["list_contexts"],
    "resetContext": ["reset_context"],
    "deleteContext": ["delete_context"],
}

#: Operations with no SDK method, and why.
NOT_SDK = {
    "healthz": "a load balancer's probe",
    "openapi": "the document itself",
    "mcp": "for MCP clients (sessionbox mcp, the official SDKs)",
}


def test_every_operation_has_a_method():
    doc = json.loads(DOC.read_text())
    ops = {o["operationId"] for item in doc["paths"].values() for m, o in item.items() if isinstance(o, dict) and "operationId" in o}
    missing = ops - METHODS.keys() - NOT_SDK.keys()
    assert not missing, f"operations without a Python method: {sorted(missing)}"
    assert not (METHODS.keys() - ops), f"methods of operations the document no longer has: {sorted(METHODS.keys() - ops)}"
    for cls in (Sessionbox, AsyncSessionbox):
        for op, names in METHODS.items():
            for n in names:
                assert callable(getattr(cls, n, None)), f"{cls.__name__}.{n} ({op})"


READ = {
    "commandId": "cmd-1", "running": False, "exitCode": 3, "stdout": "a\n", "stderr": "e\n", "more": False,
    "stdoutPath": "/tmp/sessionbox-commands/cmd-1/stdout", "stderrPath": "/tmp/sessionbox-commands/cmd-1/stderr",
    "stdoutBytes": 2, "stderrBytes": 2,
}


def _answers(seen):
    """READ to the first request, a 503 asking to come back at once to the rest."""
    def handle(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        if len(seen) == 1:
            return httpx.Response(200, json=READ)
        body = {"type": "https://sessionbox.dev/problems/unavailable", "title": "unavailable", "status": 503, "detail": "busy"}
        return httpx.Response(503, json=body, headers={"Content-Type": "application/problem+json", "Retry-After": "0"})
    return httpx.MockTransport(handle)


def _check_read(out, seen):
    assert out == READ and out.exit_code == 3 and out.stdout_path.endswith("/stdout")
    assert seen[0].method == "GET"
    assert seen[0].url.raw_path == b"/v1/sessions/s%201/commands/cmd%2F1/output?waitSecs=5"
    assert seen[0].headers["Authorization"] == "Bearer sbx_fake"
    # Without wait_secs no query; a 503 is not retried, since a read moves the read position.
    assert len(seen) == 2 and seen[1].url.raw_path == b"/v1/sessions/s/commands/cmd-1/output"


def test_read_command_output_sends_wait_and_decodes():
    seen = []
    sb = Sessionbox("http://api.test", "sbx_fake", base_delay=0.001, transport=_answers(seen))
    out = sb.session("s 1").commands.read_output("cmd/1", wait_secs=5)
    with pytest.raises(sessionbox.SessionboxError) as err:
        sb.read_command_output("s", "cmd-1")
    assert err.value.status == 503
    _check_read(out, seen)


def test_read_command_output_async():
    seen = []

    async def main():
        async with AsyncSessionbox("http://api.test", "sbx_fake", base_delay=0.001, transport=_answers(seen)) as sb:
            out = await sb.session("s 1").commands.read_output("cmd/1", wait_secs=5)
            with pytest.raises(sessionbox.SessionboxError):
                await sb.read_command_output("s", "cmd-1")
            return out

    _check_read(asyncio.run(main()), seen)
