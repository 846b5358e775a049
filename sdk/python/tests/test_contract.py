"""The whole of pkg/api/openapi.json is reachable from the Python SDK: every
operation has a method (test_operations.py), and here every parameter and
every request body field of each operation reaches the wire through one of
its methods. scripts/contract/check.sh runs this beside the Go and
TypeScript generators.

Why not a generated Python client: none runs offline here. The generators
that emit Python are PyPI packages (openapi-python-client, datamodel-code-
generator; PyPI is unreachable), Java programs fetched at run time
(@openapitools/openapi-generator-cli downloads its jar), or AutoRest, whose
Python extension pip-installs its own dependencies. So the check is the
other way round: the hand-written SDK must cover the document.

A parameter is reachable when a method names it (snake_case of the API's
name; path ids as session_id, context_id, ...). A body field is reachable
when a method names it or takes **fields, which _core.body() sends
camelCased: the field's snake_case name must then round-trip to exactly the
API's name, or it could not be sent at all."""

from __future__ import annotations

import inspect
import json
import re

from sessionbox import AsyncSessionbox, Sessionbox
from sessionbox._core import _camel

from test_operations import DOC, METHODS

#: Parameters and fields the SDK fills in itself, and how.
SET_BY_SDK = {
    ("uploadUrl", "sizeBytes"): "measured from the data upload_file is given",
    ("importFile", "transferId"): "taken from the upload-url ticket by upload_file",
    ("runCommand", "background"): "run_command and run_command_stream send false, start_command true",
    ("writeFile", "application/octet-stream"): "the data argument, sent as bytes",
}

#: Path parameters and the argument names the SDK gives them.
PATH_IDS = {"id": "session_id", "runId": "run_id", "contextId": "context_id", "commandId": "command_id"}

#: Headers every call may carry through the client's own options.
ANY_CALL = {"X-Request-Id"}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace("-", "_").lower()


def _deref(doc: dict, node: dict) -> dict:
    while "$ref" in node:
        target = doc
        for part in node["$ref"].split("/")[1:]:
            target = target[part]
        node = target
    return node


def _wants(doc: dict, op: dict) -> tuple[list[str], list[str]]:
    """The operation's parameters and request body fields."""
    params = [_deref(doc, p)["name"] for p in op.get("parameters", [])]
    fields: list[str] = []
    for media, content in (op.get("requestBody") or {}).get("content", {}).items():
        props = _deref(doc, content.get("schema", {})).get("properties")
        fields += list(props) if props else [media]
    return [p for p in params if p not in ANY_CALL], fields


def _signatures(cls: type, names: list[str]) -> tuple[set[str], bool]:
    args: set[str] = set()
    var_kw = False
    for n in names:
        for p in inspect.signature(getattr(cls, n)).parameters.values():
            if p.kind is inspect.Parameter.VAR_KEYWORD:
                var_kw = True
            else:
                args.add(p.name)
    return args, var_kw


def test_every_parameter_and_field_reaches_the_sdk():
    doc = json.loads(DOC.read_text())
    missing = []
    for item in doc["paths"].values():
        for op in item.values():
            if not isinstance(op, dict) or op.get("operationId") not in METHODS:
                continue
            oid = op["operationId"]
            params, fields = _wants(doc, op)
            for cls in (Sessionbox, AsyncSessionbox):
                args, var_kw = _signatures(cls, METHODS[oid])
                for p in params:
                    if (oid, p) in SET_BY_SDK or PATH_IDS.get(p, _snake(p)) in args:
                        continue
                    missing.append(f"{cls.__name__} {oid}: parameter {p!r} (as {PATH_IDS.get(p, _snake(p))})")
                for f in fields:
                    if (oid, f) in SET_BY_SDK or _snake(f) in args:
                        continue
                    if var_kw and _camel(_snake(f)) == f:
                        continue
                    missing.append(f"{cls.__name__} {oid}: body field {f!r}")
    assert not missing, "not reachable from the Python SDK:\n" + "\n".join(missing)


def test_exemptions_are_current():
    """An exemption for a parameter the document no longer has is stale."""
    doc = json.loads(DOC.read_text())
    have = set()
    for item in doc["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and "operationId" in op:
                params, fields = _wants(doc, op)
                have |= {(op["operationId"], n) for n in params + fields}
    assert not (SET_BY_SDK.keys() - have), sorted(SET_BY_SDK.keys() - have)
