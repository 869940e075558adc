"""The docs site: it builds with `mkdocs build --strict`, loads nothing from another host, shows the
quickstart page in a real browser (a screenshot goes to tests/artifacts/), and its reference pages
are the ones the code generates today (scripts/docs_reference.py), so an operation's arguments, a
CLI flag or a settings field cannot change without the docs."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from test_viewer_browser import ARTIFACTS, WAIT, headless

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `mkdocs build --strict` writes it (a warning, a broken link or anchor fails it)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    pages = {p.relative_to(ROOT / "docs").with_suffix(".html") for p in (ROOT / "docs").rglob("*.md")}
    built = {p.relative_to(site) for p in site.rglob("*.html")}
    assert pages <= built, sorted(map(str, pages - built))
    # the benchmarks' own plots and tables are published beside the pages that show them
    for name in ("latency.png", "locomo.png", "situatedqa.html"):
        assert (site / "benchmarks" / "results" / name).stat().st_size > 0


LOADED = re.compile(r"""<(?:script|link|img|iframe|source)\b[^>]*?\b(?:src|href)=["']([^"']+)["']""", re.I)


def test_no_page_loads_anything_from_another_host(site: Path) -> None:
    """Local-first: no web font, CDN script, analytics or remote image (links a reader clicks are fine)."""
    remote = {}
    for page in site.rglob("*.html"):
        for url in LOADED.findall(page.read_text(encoding="utf-8")):
            if re.match(r"(?i)^(https?:)?//", url):
                remote.setdefault(url, str(page.relative_to(site)))
    for css in site.rglob("*.css"):
        for url in re.findall(r"""url\(["']?((?:https?:)?//[^)"']+)""", css.read_text(encoding="utf-8")):
            remote.setdefault(url, str(css.relative_to(site)))
    assert not remote, remote


def test_reference_pages_are_the_ones_the_code_generates() -> None:
    done = subprocess.run([sys.executable, "scripts/docs_reference.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_changed_argument_flag_or_field_shows_in_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a new recall argument, CLI flag or Config field changes the pages."""
    import msgspec

    from agentmem import config as config_module

    ref = _reference()
    schema = ref.openapi_schema()
    before = ref.http_page(schema)
    schema["components"]["schemas"]["RecallRequest"]["properties"]["min_score"] = {"type": "number"}
    assert "`min_score`" in ref.http_page(schema) and "`min_score`" not in before

    parser = ref.cli_parser()
    before = ref.cli_page(parser)
    recall = next(a for a in parser._actions if a.dest == "command").choices["recall"]
    recall.add_argument("--min-score", type=float, help="drop hits below this score")
    assert "--min-score" in ref.cli_page(parser) and "--min-score" not in before

    before = ref.config_page()
    wider = msgspec.defstruct("Config", [("min_score", float, 0.0)], bases=(config_module.Config,), frozen=True,
                              kw_only=True, module="agentmem.config")  # fmt: skip
    monkeypatch.setattr(config_module, "Config", wider)
    monkeypatch.setattr(ref, "_comments", lambda cls: {})  # the new struct has no source to read
    assert "`min_score`" in ref.config_page() and "`min_score`" not in before


def test_every_route_flag_and_field_is_on_a_reference_page() -> None:
    """What the pages hold, read back: each API route, each subcommand and each settings field."""
    ref = _reference()
    http = (ROOT / "docs" / "reference" / "http.md").read_text()
    for path, ops in ref.openapi_schema()["paths"].items():
        if path.startswith(ref.API_PREFIXES):
            for method in ops:
                assert f"`{method.upper()} {path}`" in http
    cli = (ROOT / "docs" / "reference" / "cli.md").read_text()
    for command in ("remember", "recall", "serve", "mcp", "ingest conversation", "delete", "export"):
        assert f"## `agentmem {command}`" in cli
    import msgspec

    from agentmem.config import Config
    from api.settings import Settings

    config = (ROOT / "docs" / "reference" / "config.md").read_text()
    for struct in (Config, Settings):
        for field in msgspec.structs.fields(struct):
            assert f"| `{field.name}` |" in config, field.name


def test_readme_is_short_and_links_only_to_files_that_exist() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    for target in re.findall(r"\]\(((?:docs/|CHANGELOG)[^)#]*)", text):
        assert (ROOT / target).exists(), target
    # the set-up commands CI and reviewers run verbatim
    assert "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e . && .venv/bin/agentmem serve" in text
    assert "\nbash scripts/test.sh\n" in text


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on loopback (search needs a server; the pages also open from file://)."""
    handler = partial(SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def browser() -> Iterator[Any]:
    yield from headless("--window-size=1280,1000", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")


@pytest.mark.browser
def test_the_quickstart_page_renders_in_a_browser(served: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.wait import WebDriverWait

    browser.get(f"{served}/quickstart.html")
    WebDriverWait(browser, WAIT).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "article h1"), "Quickstart"))
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "docs-quickstart.png"))
    article = browser.find_element(By.CSS_SELECTOR, "article")
    assert "agentmem remember" in article.text and "superseded" in article.text
    # the theme's stylesheet applied: Material's header bar is laid out, the code block highlighted
    header = browser.find_element(By.CSS_SELECTOR, "header.md-header")
    assert header.size["height"] > 20 and header.value_of_css_property("position") in ("sticky", "fixed")
    assert browser.find_elements(By.CSS_SELECTOR, "article .highlight pre code")
    nav = browser.find_element(By.CSS_SELECTOR, "nav.md-nav--primary").get_attribute("textContent")
    for section in ("Concepts", "Guides", "Operations", "Reference", "Benchmarks", "Design notes"):
        assert section in nav
    # every resource the page asked for came from this server
    hosts = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => new URL(e.name).host)"
    )  # fmt: skip
    assert set(hosts) <= {served.removeprefix("http://")}, hosts
