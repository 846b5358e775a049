"""A tool pair for a model, written against the sessionbox SDK:
execute_python and install_packages in one session, with results a model can
use (text bounded, head and tail kept, charts as PNGs beside a line saying
what they are). Framework-neutral: TOOLS are name, description and JSON
schema; SessionTools.call runs one. docs/agents.md plugs it into LangChain
and the OpenAI and Anthropic tool-calling loops; tests/test_agent_tools.py
runs it against a real API.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Union

from sessionbox import Session, SessionboxError

#: Text a model gets from one call at most; the rest is cut from the middle.
MAX_CHARS = 20_000

TOOLS: List[Dict[str, Any]] = [
    {
        "name": "execute_python",
        "description": (
            "Run Python in a persistent Jupyter-like kernel: variables, files in /home/user and installed packages "
            "persist between calls. Returns stdout, stderr, the last expression's value, any exception, and charts "
            "(matplotlib plt.show()) as PNG images."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "minLength": 1, "description": "Python source"},
                "timeout_secs": {"type": "integer", "minimum": 1, "maximum": 900, "default": 60},
            },
            "required": ["code"],
            "additionalProperties": False,
        },
    },
    {
        "name": "install_packages",
        "description": "Install Python packages with pip into the same sandbox (names and version specifiers only).",
        "parameters": {
            "type": "object",
            "properties": {"packages": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50}},
            "required": ["packages"],
            "additionalProperties": False,
        },
    },
]


def bounded(text: str, limit: int = MAX_CHARS) -> str:
    """text, or its head and tail with a line saying how much was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


class SessionTools:
    """The tools bound to one session. Each call returns {"text", "images", "is_error"}."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def execute_python(self, code: str, timeout_secs: int = 60) -> Dict[str, Any]:
        run = self.session.execute(code, timeout_secs=timeout_secs)
        parts, images = [], []
        if run.stdout:
            parts.append(f"stdout:\n{run.stdout}")
        if run.stderr:
            parts.append(f"stderr:\n{run.stderr}")
        for r in run.results:
            if "png" in r:
                images.append(r.png)
                parts.append(f"[image {len(images)}: a PNG chart{' — ' + r.text if r.get('text') else ''}]")
            elif r.get("isMainResult") and r.get("text") is not None:
                parts.append(f"result: {r.text}")
        if run.get("error"):
            parts.append(f"error: {run.error.name}: {run.error.value}\n{run.error.traceback}")
        text = bounded("\n".join(parts) or "(no output)")
        return {"text": text, "images": images, "is_error": not run.success}

    def install_packages(self, packages: List[str]) -> Dict[str, Any]:
        res = self.session.install(packages)
        return {"text": bounded(json.dumps(res)), "images": [], "is_error": not res.get("success", True)}

    def call(self, name: str, arguments: Union[str, Dict[str, Any]]) -> Dict[str, Any]:
        """Runs the tool a model called; a refusal of the API comes back as text the model can act on."""
        args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        fn = {"execute_python": self.execute_python, "install_packages": self.install_packages}.get(name)
        if fn is None:
            return {"text": f"unknown tool {name!r}", "images": [], "is_error": True}
        try:
            return fn(**args)
        except SessionboxError as e:
            return {"text": f"{e.title}: {e.detail}", "images": [], "is_error": True}
        except TypeError as e:
            return {"text": f"bad arguments for {name}: {e}", "images": [], "is_error": True}
