"""A web page cannot read or write a tokenless server, in a real browser (headless Chromium).

A page served from another origin (another loopback port) tries what a hostile page would: a
text/plain fetch (no preflight) that writes and one that deletes, a JSON fetch (preflighted), reads
with and without CORS, a form that posts JSON as text/plain, and a viewer form. And DNS
rebinding: Chromium resolves rebind.test to 127.0.0.1 (--host-resolver-rules), so a page of that
name is same-origin with the server and could read its replies, but sends `Host: rebind.test`.
Nothing is read, nothing is written; see tests/test_viewer_browser.py for the browser set-up.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_viewer_browser import headless

from agentmem import NewMemory
from agentmem.client import Client
from servers import Server, free_port

SECRET = "The vault code is 4417"

ATTACKS = """
const [target, done] = [arguments[0], arguments[arguments.length - 1]];
const out = {};
const note = (content) => JSON.stringify({content: content, project: "shop"});
async function attempt(name, run) {
  try { out[name] = String(await run()); } catch (e) { out[name] = "blocked: " + e; }
}
function post(action, enctype, fields) {  // a form posted into a frame; resolves once the frame has loaded
  return new Promise((resolve) => {
    const frame = document.createElement("iframe");
    frame.name = "sink" + Math.random();
    document.body.appendChild(frame);
    const form = document.createElement("form");
    Object.assign(form, {method: "POST", action: target + action, enctype: enctype, target: frame.name});
    for (const [name, value] of fields) {
      const input = document.createElement("input");
      Object.assign(input, {name: name, value: value});
      form.appendChild(input);
    }
    document.body.appendChild(form);
    frame.onload = () => resolve("submitted");
    setTimeout(() => resolve("no load event"), 10000);
    form.submit();
  });
}
(async () => {
  const plain = {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}};
  await attempt("text/plain write", async () =>
    (await fetch(target + "/v1/memories", {...plain, body: note("pwned by a text/plain fetch")})).type);
  await attempt("text/plain delete", async () =>
    (await fetch(target + "/v1/delete", {...plain, body: JSON.stringify({reason: "erase", project: "shop"})})).type);
  await attempt("JSON write", async () => {
    const r = await fetch(target + "/v1/memories",
                          {method: "POST", headers: {"Content-Type": "application/json"}, body: note("pwned by JSON")});
    return r.status + " " + await r.text();
  });
  await attempt("CORS read", async () => {
    const r = await fetch(target + "/v1/memories?project=shop");
    return r.status + " " + await r.text();
  });
  await attempt("no-cors read", async () => {
    const r = await fetch(target + "/v1/memories?project=shop", {mode: "no-cors"});
    return r.type + " " + await r.text();
  });
  // name=value in text/plain: {"project":"shop","content":"pwned by a form","title":"=x"}
  await attempt("form write", () =>
    post("/v1/memories", "text/plain", [['{"project":"shop","content":"pwned by a form","title":"', 'x"}']]));
  await attempt("viewer form", () =>
    post("/ui/p/shop/remember", "application/x-www-form-urlencoded", [["content", "pwned by a viewer form"]]));
  done(out);
})();
"""

REBOUND = """
const done = arguments[arguments.length - 1];
const out = {};
(async () => {
  try {
    const r = await fetch("/v1/memories?project=shop");
    out.read = r.status + " " + await r.text();
  } catch (e) { out.read = "blocked: " + e; }
  try {
    const body = JSON.stringify({content: "pwned by a rebound page", project: "shop"});
    const r = await fetch("/v1/memories", {method: "POST", headers: {"Content-Type": "application/json"}, body: body});
    out.write = r.status + " " + await r.text();
  } catch (e) { out.write = "blocked: " + e; }
  done(out);
})();
"""


@pytest.fixture
def browser() -> Iterator[Any]:
    rules = "MAP rebind.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"  # rebind.test: DNS rebinding
    yield from headless("--proxy-bypass-list=rebind.test", f"--host-resolver-rules={rules}")


@pytest.fixture
def attacker() -> Iterator[str]:
    """Another origin on loopback: a blank page the attacks run in."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = b"<!doctype html><title>a page the user visits</title><body></body>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    site = ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{site.server_address[1]}/"
    site.shutdown()


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.browser
def test_a_web_page_cannot_read_or_write_a_tokenless_server(tmp_path: Path, browser: Any, attacker: str) -> None:
    server = Server(tmp_path / "data", tokens="")  # the README's default: no tokens, loopback only
    try:
        server.start()
        with Client(server.url) as c:
            c.remember(NewMemory(content=SECRET, project="shop"))

        browser.get(f"http://rebind.test:{server.port}/v1/memories?project=shop")  # first: the attacks may erase
        rebound = {"page": browser.page_source, **browser.execute_async_script(REBOUND)}
        browser.get(attacker)
        tried = browser.execute_async_script(ATTACKS, server.url)
        print({**tried, **{f"rebound {k}": v[:120] for k, v in rebound.items()}})

        assert set(tried) == {"text/plain write", "text/plain delete", "JSON write", "CORS read", "no-cors read",
                              "form write", "viewer form"}  # fmt: skip
        for name, seen in {**tried, **rebound}.items():
            assert "4417" not in seen, f"{name} read the memory: {seen[:300]}"
        assert rebound["read"].startswith("421") and rebound["write"].startswith("421")
        listed = httpx.get(f"{server.url}/v1/memories", params={"project": "shop", "status": "all"}).json()
        assert [m["content"] for m in listed["items"]] == [SECRET]  # nothing written, nothing erased
    finally:
        server.close()
