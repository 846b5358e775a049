"""examples/agent_tools.py, the tool pair docs/agents.md plugs into agent frameworks, against a real API."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from agent_tools import MAX_CHARS, TOOLS, SessionTools  # noqa: E402
from conftest import session_id  # noqa: E402


def test_tool_pair(sb):
    assert [t["name"] for t in TOOLS] == ["execute_python", "install_packages"]
    s = sb.session(session_id("tools"))
    try:
        kit = SessionTools(s)
        r = kit.call("execute_python", '{"code": "x = 6\\nprint(\'hi\')\\nx * 7"}')
        assert r["text"] == "stdout:\nhi\n\nresult: 42" and not r["is_error"]
        r = kit.call("execute_python", {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"})
        assert len(r["images"]) == 1 and base64.b64decode(r["images"][0])[:4] == b"\x89PNG"
        assert "[image 1: a PNG chart" in r["text"], "a text beside the image"
        r = kit.call("execute_python", {"code": "print('x' * 300_000)"})
        assert len(r["text"]) < MAX_CHARS + 200 and "characters cut" in r["text"]
        r = kit.call("execute_python", {"code": "1/0"})
        assert r["is_error"] and "ZeroDivisionError" in r["text"]
        r = kit.call("install_packages", {"packages": ["pandas; rm -rf /"]})
        assert r["is_error"] and "rm -rf" in r["text"]
        assert kit.call("nope", {})["is_error"]
    finally:
        s.delete()
