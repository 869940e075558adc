"""The web viewer and the API docs end to end: a real server and Debian's headless Chromium driven
by Selenium, with the network outside loopback blocked (agentmem is local-first: nothing may come
from a CDN).

Needs `chromium` and `chromium-driver` (apt) and `selenium` (the test extra); `scripts/test.sh`
installs the browser where it can. Without them the tests fail, unless AGENTMEM_ALLOW_NO_BROWSER=1
turns that into a skip. Every step waits for what it checks (a page, an element), never for time.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem import NewMemory
from agentmem.client import Client
from servers import TOKEN, Server

WAIT = 120  # seconds: at most, for a page or an element; each step returns as soon as it is there

ALLOW_NO_BROWSER = os.environ.get("AGENTMEM_ALLOW_NO_BROWSER") == "1"  # read before conftest clears AGENTMEM_*
ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is not installed (pip install -e '.[test]')"
    if not CHROMIUM or not DRIVER:
        return "Debian's chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)"
    return None


def headless(*args: str) -> Iterator[Any]:
    """A headless Chromium (Selenium) that reaches loopback alone: any other request goes to a dead
    proxy and names resolve only as `args` map them; fails, or skips with AGENTMEM_ALLOW_NO_BROWSER=1,
    when there is no browser."""
    missing = _missing()
    if missing:
        if ALLOW_NO_BROWSER:
            pytest.skip(f"AGENTMEM_ALLOW_NO_BROWSER=1 and {missing}")
        pytest.fail(f"the browser test needs a browser: {missing}; set AGENTMEM_ALLOW_NO_BROWSER=1 to skip it")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--proxy-server=http://127.0.0.1:9", *args):  # fmt: skip
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=opts)
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser() -> Iterator[Any]:
    yield from headless("--window-size=1280,1400", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")


def _waits(browser: Any) -> tuple[Any, Any]:
    """`shown(css, text)`: the first element matching `css` once its text holds `text`;
    `listed(css)`: the elements matching `css` once there is at least one."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.wait import WebDriverWait

    # While a submitted form loads, the old page's element can leave the document between finding
    # it and reading it: chromedriver then says "Node with given id does not belong to the
    # document". Look again until the wait runs out; a page that never comes still times out.
    def wait() -> WebDriverWait:
        return WebDriverWait(browser, WAIT, ignored_exceptions=(WebDriverException,))

    def shown(css: str, text: str) -> Any:
        wait().until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))
        return browser.find_element(By.CSS_SELECTOR, css)

    def listed(css: str) -> list[Any]:
        return wait().until(lambda b: b.find_elements(By.CSS_SELECTOR, css))  # type: ignore[no-any-return]

    return shown, listed


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.browser
def test_watch_a_belief_die_in_the_browser(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    shown, listed = _waits(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    server = Server(tmp_path / "data", tokens=f"w:{TOKEN}:admin:*")  # of every project: it may run the id check
    try:
        server.start()
        with Client(server.url, token=TOKEN) as c:
            old = c.remember(NewMemory(content="The API listens on port 8080", key="api.port", project="shop")).memory
            invoices = "Invoices are exported nightly as CSV files"
            c.remember(NewMemory(content=invoices, kind="procedure", project="shop"))
            c.remember(NewMemory(content="<script>document.title='owned'</script> is not code here", project="shop"))

        def text() -> str:
            return str(browser.find_element(By.TAG_NAME, "main").text)

        # sign in: the list is behind the token
        browser.get(f"{server.url}/ui/p/shop/")
        shown("h1", "Sign in")
        browser.find_element(By.ID, "token").send_keys(TOKEN, Keys.ENTER)

        # the list of current memories, with retention tiers; the script stays inert text
        shown("h1", "Memories in shop")
        assert "The API listens on port 8080" in text() and "Invoices are exported nightly" in text()
        assert "<script>document.title='owned'</script>" in text() and "owned" not in browser.title

        # search, by keyboard
        browser.find_element(By.ID, "q").send_keys("which port does the API use", Keys.ENTER)
        shown("main", "Recalled for")
        rows = listed("tbody tr")
        assert "port 8080" in rows[0].text
        browser.save_screenshot(str(ARTIFACTS / "viewer-search.png"))

        # open the memory: its chain has one version so far
        rows[0].find_element(By.LINK_TEXT, f"#{old.id}").click()
        shown("h1", f"Memory #{old.id}")
        assert len(browser.find_elements(By.CSS_SELECTOR, "ol.timeline > li")) == 1
        assert browser.find_element(By.ID, "key").get_attribute("value") == "api.port"

        # write the superseding memory through the remember box, and watch the old belief die
        browser.find_element(By.ID, "content").send_keys("We moved the API to port 4000")
        browser.find_element(By.CSS_SELECTOR, "form[action$='/remember'] button[type=submit]").click()
        # the POST embeds and writes on the server: wait for its page rather than racing the old one
        outcome = shown("section.outcome", "Superseded").text
        assert "The API listens on port 8080" in outcome
        chain = browser.find_elements(By.CSS_SELECTOR, "ol.timeline > li")
        assert len(chain) == 2
        assert "dead" in str(chain[0].get_attribute("class")) and "port 8080" in chain[0].text
        assert "Replaced by" in chain[0].text and "key" in chain[0].text and "superseded" in chain[0].text
        assert "port 4000" in chain[1].text and "active" in chain[1].text

        shot = ARTIFACTS / "viewer-superseded.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 1000
        print(f"screenshot: {shot}")

        # the stats page draws its plot without JavaScript
        browser.get(f"{server.url}/ui/p/shop/stats")
        shown("h1", "Stats of shop")
        browser.find_element(By.LINK_TEXT, "Run the full id check").click()
        shown("main", "consistent")
        assert browser.find_elements(By.CSS_SELECTOR, "svg[role=img]")
        browser.save_screenshot(str(ARTIFACTS / "viewer-stats.png"))
    finally:
        server.close()


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.browser
def test_api_docs_load_with_no_network(server: Server, browser: Any) -> None:
    _, listed = _waits(browser)
    server.start()
    browser.get(f"{server.url}/docs/")
    paths = {str(op.get_attribute("data-path")) for op in listed(".opblock-summary-path")}
    assert {"/v1/memories", "/v1/recall", "/v1/stats", "/health"} <= paths, paths
    loaded = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded and all(url.startswith(f"{server.url}/docs/") for url in loaded), loaded
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "api-docs.png"))
