"""Every operation of pkg/api/openapi.json has a method on both clients, so a
new route cannot land without its Python call (or a reason here why not)."""

from __future__ import annotations

import json
from pathlib import Path

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
