"""The local Tavily stand-in itself: lifecycle, request log, failure injection."""

from __future__ import annotations

import socket

import httpx
import pytest

from claudecode_model.tavily.testing import FakeTavilyServer, generated_search_results


def test_start_and_stop_leave_nothing_behind() -> None:
    server = FakeTavilyServer().start()
    port = int(server.base_url.rsplit(":", 1)[1])
    assert server.base_url == f"http://127.0.0.1:{port}"
    server.stop()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", port))
    server.stop()  # stopping twice is harmless


def test_cannot_start_twice() -> None:
    with FakeTavilyServer() as server, pytest.raises(RuntimeError, match="already running"):
        server.start()


def test_stop_cuts_a_slow_answer_short() -> None:
    with FakeTavilyServer() as server:
        server.inject("/search", delay=600)
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{server.base_url}/search", json={"query": "q"}, timeout=0.1)
    # Leaving the block returned although the answer was due in ten minutes; the leak check confirms the
    # thread and both ends of the connection are gone.


async def test_canned_results_and_the_request_log(fake_tavily: FakeTavilyServer) -> None:
    fake_tavily.reset(search_results=[{"title": "T", "url": "https://t.example", "content": "C", "score": 0.5}] * 3)
    headers = {"Authorization": f"Bearer {fake_tavily.api_key}"}
    async with httpx.AsyncClient(base_url=fake_tavily.base_url, headers=headers) as client:
        response = await client.post("/search", json={"query": "q", "max_results": 2})
    assert response.status_code == 200
    assert len(response.json()["results"]) == 2
    [request] = fake_tavily.requests
    assert (request.path, request.body, request.authorization) == (
        "/search",
        {"query": "q", "max_results": 2},
        f"Bearer {fake_tavily.api_key}",
    )


async def test_auth_and_request_checks(fake_tavily: FakeTavilyServer) -> None:
    async with httpx.AsyncClient(base_url=fake_tavily.base_url) as client:
        anonymous = await client.post("/search", json={"query": "q"})
        headers = {"Authorization": f"Bearer {fake_tavily.api_key}"}
        no_query = await client.post("/search", json={}, headers=headers)
        no_urls = await client.post("/extract", json={"urls": []}, headers=headers)
        not_json = await client.post("/search", content=b"{", headers=headers)
    assert anonymous.status_code == 401
    assert anonymous.json() == {"detail": {"error": "Unauthorized: missing or invalid API key."}}
    assert [no_query.status_code, no_urls.status_code, not_json.status_code] == [400, 400, 400]


async def test_injections_are_consumed_in_order(fake_tavily: FakeTavilyServer) -> None:
    fake_tavily.inject("/search", status=429, times=2)
    fake_tavily.inject("/search", status=500, detail="boom")
    headers = {"Authorization": f"Bearer {fake_tavily.api_key}"}
    async with httpx.AsyncClient(base_url=fake_tavily.base_url, headers=headers) as client:
        statuses = [(await client.post("/search", json={"query": "q"})).status_code for _ in range(4)]
        extract = await client.post("/extract", json={"urls": ["https://a.example"]})
    assert statuses == [429, 429, 500, 200]
    assert extract.status_code == 200
    with pytest.raises(ValueError, match="times"):
        fake_tavily.inject("/search", status=500, times=0)


def test_generated_results_are_deterministic() -> None:
    assert generated_search_results("Hello, World!", 2) == [
        {
            "title": "Hello, World! - source 1",
            "url": "https://example.com/hello-world/1",
            "content": "Summary 1 about Hello, World!.",
            "score": 0.95,
            "raw_content": None,
        },
        {
            "title": "Hello, World! - source 2",
            "url": "https://example.com/hello-world/2",
            "content": "Summary 2 about Hello, World!.",
            "score": 0.85,
            "raw_content": None,
        },
    ]
