"""Retries, typed errors and broken streams, with faults injected by
httpx.MockTransport: what a real API rarely shows on demand."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

import sessionbox
from sessionbox import AsyncSessionbox, Sessionbox
from sessionbox.errors import parse_retry_after

SESSION = {"sessionId": "s", "state": "running", "pauseOnIdle": False}


def problem(status: int, kind: str, detail: str = "x", headers=None) -> httpx.Response:
    body = {"type": f"https://sessionbox.dev/problems/{kind}", "title": kind, "status": status, "detail": detail, "requestId": "req-1"}
    return httpx.Response(status, json=body, headers={"Content-Type": "application/problem+json", **(headers or {})})


def ndjson(*lines) -> httpx.Response:
    return httpx.Response(200, content="".join(json.dumps(l) + "\n" for l in lines).encode(), headers={"Content-Type": "application/x-ndjson"})


def client(answers, **kw):
    """A client whose n-th request gets answers[n] (a response, or a function of the request)."""
    seen = []

    def handle(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        a = answers[min(len(seen) - 1, len(answers) - 1)]
        return a(req) if callable(a) else a

    sb = Sessionbox("http://api.test", "sbx_fake", base_delay=0.001, transport=httpx.MockTransport(handle), **kw)
    return sb, seen


def test_retries_idempotent_calls_after_retry_after():
    sb, seen = client([problem(503, "unavailable", headers={"Retry-After": "0"}), problem(429, "limit-reached", headers={"Retry-After": "0"}), httpx.Response(200, json=SESSION)])
    assert sb.status("s") == SESSION
    assert [r.method for r in seen] == ["GET"] * 3
    assert seen[0].headers["Authorization"] == "Bearer sbx_fake"


def test_retries_put_with_the_whole_body_again():
    entry = {"name": "a", "path": "/home/user/a", "type": "file", "size": 3, "modifiedAt": "2026-01-01T00:00:00Z"}
    sb, seen = client([problem(503, "unavailable", headers={"Retry-After": "0"}), httpx.Response(200, json=entry)])
    assert sb.write_file("s", "a", b"abc").size == 3
    assert [r.content for r in seen] == [b"abc", b"abc"]
    assert seen[1].headers["Content-Type"] == "application/octet-stream"


@pytest.mark.parametrize(
    "status,kind,cls",
    [
        (400, "invalid-input", sessionbox.InvalidInputError),
        (401, "unauthorized", sessionbox.UnauthorizedError),
        (404, "not-found", sessionbox.NotFoundError),
        (409, "conflict", sessionbox.ConflictError),
        (410, "gone", sessionbox.GoneError),
        (413, "too-large", sessionbox.TooLargeError),
        (429, "limit-reached", sessionbox.LimitReachedError),
        (503, "unavailable", sessionbox.UnavailableError),
        (504, "timeout", sessionbox.RequestTimeoutError),
        (507, "insufficient-storage", sessionbox.InsufficientStorageError),
    ],
)
def test_never_retries_execute_and_types_the_problem(status, kind, cls):
    sb, seen = client([problem(status, kind, "went wrong", {"Retry-After": "7"})])
    with pytest.raises(cls) as e:
        sb.execute("s", "1")
    assert len(seen) == 1
    err = e.value
    assert (err.status, err.type, err.detail, err.request_id, err.retry_after) == (
        status, f"https://sessionbox.dev/problems/{kind}", "went wrong", "req-1", 7.0)


def test_a_retry_after_past_max_delay_fails_at_once():
    sb, seen = client([problem(429, "limit-reached", headers={"Retry-After": "120"})], max_delay=5)
    t = time.monotonic()
    with pytest.raises(sessionbox.LimitReachedError) as e:
        sb.status("s")
    assert time.monotonic() - t < 2 and len(seen) == 1 and e.value.retry_after == 120


def test_gives_up_after_max_retries():
    sb, seen = client([problem(503, "unavailable", headers={"Retry-After": "0"})], max_retries=2)
    with pytest.raises(sessionbox.UnavailableError):
        sb.list_files("s")
    assert len(seen) == 3


def test_an_answer_that_is_not_a_problem():
    sb, _ = client([httpx.Response(502, content=b"<html>Bad Gateway</html>")])
    with pytest.raises(sessionbox.SessionboxError) as e:
        sb.status("s")
    assert type(e.value) is sessionbox.SessionboxError
    assert (e.value.status, e.value.type) == (502, "about:blank") and "Bad Gateway" in e.value.detail


def test_a_late_failure_in_a_200_body_raises():
    late = {"type": "https://sessionbox.dev/problems/internal", "title": "Internal", "status": 500, "detail": "the sandbox died"}
    sb, _ = client([httpx.Response(200, content=b"   " + json.dumps(late).encode())])
    with pytest.raises(sessionbox.InternalServerError, match="the sandbox died"):
        sb.execute("s", "1")


def test_stream_failure_line_raises_its_problem_after_the_output():
    sb, _ = client([ndjson({"type": "start"}, {"type": "stdout", "text": "a\n"},
                           {"type": "failure", "problem": {"type": "https://sessionbox.dev/problems/timeout", "title": "T", "status": 504, "detail": "late"}})])
    got = []
    with pytest.raises(sessionbox.RequestTimeoutError):
        for line in sb.execute_stream("s", "1"):
            got.append(line.type)
    assert got == ["start", "stdout"]


def test_stream_cut_before_done_raises():
    sb, _ = client([ndjson({"type": "start"}, {"type": "stdout", "text": "a"})])
    with pytest.raises(sessionbox.IncompleteStreamError):
        sb.execute("s", "1", on_stdout=lambda t: None)


def test_callbacks_rebuild_the_result():
    summary = {"success": False, "durationMs": 5, "truncated": False, "restarted": False, "kernelRestarted": False, "timedOut": False}
    sb, seen = client([ndjson({"type": "start"}, {"type": "stdout", "text": "a"}, {"type": "keepalive"}, {"type": "stderr", "text": "b"},
                              {"type": "result", "result": {"text": "1", "isMainResult": True}},
                              {"type": "error", "error": {"name": "E", "value": "v", "traceback": "t"}}, {"type": "done", "summary": summary})])
    calls = []
    run = sb.execute("s", "x", timeout_secs=5, on_stdout=lambda t: calls.append(("out", t)), on_stderr=lambda t: calls.append(("err", t)),
                     on_result=lambda r: calls.append(("res", r.text)), on_error=lambda e: calls.append(("exc", e.name)))
    assert calls == [("out", "a"), ("err", "b"), ("res", "1"), ("exc", "E")]
    assert (run.stdout, run.stderr, run.text, run.error.name, run.success, run.duration_ms) == ("a", "b", "1", "E", False, 5)
    assert seen[0].url.path == "/v1/sessions/s/execute/stream"
    assert json.loads(seen[0].content) == {"code": "x", "timeoutSecs": 5}
    assert seen[0].headers["Accept"] == "application/x-ndjson"


def test_presigned_transfers_carry_no_api_key():
    ticket = {"uploadUrl": "http://storage.test/put", "method": "PUT", "headers": {"X-Sig": "1"}, "expiresAt": "2026-01-01T00:00:00Z", "transferId": "t1"}
    entry = {"name": "f", "path": "/home/user/f", "type": "file", "size": 10, "modifiedAt": "2026-01-01T00:00:00Z"}

    def storage(req):
        assert "Authorization" not in req.headers and req.headers["X-Sig"] == "1" and req.headers["Content-Length"] == "10"
        return httpx.Response(200)

    sb, seen = client([httpx.Response(200, json=ticket), storage, httpx.Response(200, json=entry)])
    assert sb.upload_file("s", "f", b"0123456789", inline_limit=0).size == 10
    assert [str(r.url) for r in seen] == ["http://api.test/v1/sessions/s/files/upload-url", "http://storage.test/put", "http://api.test/v1/sessions/s/files/import"]
    assert json.loads(seen[0].content) == {"path": "f", "sizeBytes": 10}
    assert seen[1].read() == b"0123456789"
    assert json.loads(seen[2].content) == {"transferId": "t1"}


def test_async_retries_and_types():
    busy = problem(503, "unavailable", headers={"Retry-After": "0"})
    answers = ["refused", busy, httpx.Response(200, json=SESSION), busy]
    seen = []

    def handle(req):
        seen.append(req.method)
        a = answers[len(seen) - 1]
        if a == "refused":
            raise httpx.ConnectError("connection refused", request=req)
        return a

    async def main():
        async with AsyncSessionbox("http://api.test", "k", base_delay=0.001, transport=httpx.MockTransport(handle)) as sb:
            assert await sb.session("s").status() == SESSION
            with pytest.raises(sessionbox.UnavailableError):
                await sb.execute("s", "1")

    asyncio.run(main())
    assert seen == ["GET", "GET", "GET", "POST"], "the GET sent again after a refused connection and a 503, the execute not after a 503"


def test_parse_retry_after():
    assert parse_retry_after(None) is None
    assert parse_retry_after("3") == 3
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0


def test_inline_413_falls_back_to_presigned_both_ways():
    ticket = {"uploadUrl": "http://storage.test/put", "method": "PUT", "headers": {}, "expiresAt": "2026-01-01T00:00:00Z", "transferId": "t1"}
    entry = {"name": "f", "path": "/home/user/f", "type": "file", "size": 5, "modifiedAt": "2026-01-01T00:00:00Z"}

    def handle(req: httpx.Request) -> httpx.Response:
        path = req.url.path
        if req.url.host == "storage.test":
            assert "Authorization" not in req.headers
            return httpx.Response(200, content=b"hello" if req.method == "GET" else b"")
        if path.endswith("/files/content"):
            return problem(413, "too-large", "past this deployment's limit")
        if path.endswith("/upload-url"):
            return httpx.Response(200, json=ticket)
        if path.endswith("/download-url"):
            return httpx.Response(200, json={"downloadUrl": "http://storage.test/get", "expiresAt": "2026-01-01T00:00:00Z", "sizeBytes": 5})
        return httpx.Response(200, json=entry)

    seen = []
    transport = httpx.MockTransport(lambda r: seen.append(f"{r.method} {r.url.host}{r.url.path}") or handle(r))
    with Sessionbox("http://api.test", "k", transport=transport) as sb:
        assert sb.upload_file("s", "f", b"hello").size == 5
        assert sb.download_file("s", "f") == b"hello"
    assert seen == [
        "PUT api.test/v1/sessions/s/files/content",
        "POST api.test/v1/sessions/s/files/upload-url",
        "PUT storage.test/put",
        "POST api.test/v1/sessions/s/files/import",
        "GET api.test/v1/sessions/s/files/content",
        "POST api.test/v1/sessions/s/files/download-url",
        "GET storage.test/get",
    ]


def test_a_request_that_never_reached_the_server_is_sent_again_even_an_execute():
    summary = {"success": True, "stdout": "", "stderr": "", "results": [], "durationMs": 1, "truncated": False,
               "restarted": False, "kernelRestarted": False, "timedOut": False}

    def refused(req):
        raise httpx.ConnectError("connection refused", request=req)

    sb, seen = client([refused, refused, httpx.Response(200, json=summary)])
    assert sb.execute("s", "1").success
    assert len(seen) == 3

    sb, seen = client([refused], max_retries=1)
    with pytest.raises(httpx.ConnectError):
        sb.status("s")
    assert len(seen) == 2


def test_a_request_cut_after_it_was_sent_is_not_sent_again():
    def cut(req):
        raise httpx.ReadError("connection reset", request=req)

    sb, seen = client([cut])
    with pytest.raises(httpx.ReadError):
        sb.execute("s", "1")
    assert len(seen) == 1


@pytest.mark.parametrize("make", [lambda b: b, lambda b: __import__("io").BytesIO(b)], ids=["bytes", "file"])
def test_a_presigned_put_is_sent_again_on_storage_503_with_the_whole_body(make):
    ticket = {"uploadUrl": "http://storage.test/put", "method": "PUT", "headers": {}, "expiresAt": "2026-01-01T00:00:00Z", "transferId": "t1"}
    entry = {"name": "f", "path": "/home/user/f", "type": "file", "size": 10, "modifiedAt": "2026-01-01T00:00:00Z"}
    bodies = []

    def storage(req):
        bodies.append(req.read())
        return httpx.Response(503, headers={"Retry-After": "0"}) if len(bodies) == 1 else httpx.Response(200)

    for cls in (Sessionbox, AsyncSessionbox):
        bodies.clear()
        answers = [httpx.Response(200, json=ticket), storage, storage, httpx.Response(200, json=entry)]
        seen = []

        def handle(req, answers=answers, seen=seen):
            seen.append(req)
            a = answers[len(seen) - 1]
            return a(req) if callable(a) else a

        sb = cls("http://api.test", "k", transport=httpx.MockTransport(handle))
        call = sb.upload_file("s", "f", make(b"0123456789"), inline_limit=0)
        res = asyncio.run(call) if cls is AsyncSessionbox else call
        assert res.size == 10
        assert bodies == [b"0123456789", b"0123456789"], cls.__name__


def test_a_stream_line_that_is_not_the_services_is_an_error():
    sb, _ = client([httpx.Response(200, content=b'{"type":"start"}\n<html>proxy</html>\n', headers={"Content-Type": "application/x-ndjson"})])
    with pytest.raises(sessionbox.SessionboxError, match="proxy"):
        list(sb.execute_stream("s", "1"))
