"""The web viewer end to end: a real server and Debian's headless Chromium driven by Selenium.

Needs `chromium` and `chromium-driver` (apt) and `selenium` (the test extra); .ci/run installs them.
Without them the test fails, unless AGENTMEM_ALLOW_NO_BROWSER=1 turns that into a skip (local use).
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


@pytest.fixture
def browser() -> Iterator[Any]:
    missing = _missing()
    if missing:
        if ALLOW_NO_BROWSER:
            pytest.skip(f"AGENTMEM_ALLOW_NO_BROWSER=1 and {missing}")
        pytest.fail(f"the browser test needs a browser: {missing}; set AGENTMEM_ALLOW_NO_BROWSER=1 to skip it")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1400",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=opts)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.browser
def test_watch_a_belief_die_in_the_browser(server: Server, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    ARTIFACTS.mkdir(exist_ok=True)
    server.start()
    with Client(server.url, token=TOKEN) as c:
        old = c.remember(NewMemory(content="The API listens on port 8080", key="api.port")).memory
        c.remember(NewMemory(content="Invoices are exported nightly as CSV files", kind="procedure"))
        c.remember(NewMemory(content="<script>document.title='owned'</script> is not code here"))

    def text() -> str:
        return str(browser.find_element(By.TAG_NAME, "main").text)

    # sign in: the list is behind the token
    browser.get(f"{server.url}/ui/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Sign in"
    browser.find_element(By.ID, "token").send_keys(TOKEN, Keys.ENTER)

    # the list of current memories, with retention tiers; the script stays inert text
    assert browser.find_element(By.TAG_NAME, "h1").text == "Memories in shop"
    assert "The API listens on port 8080" in text() and "Invoices are exported nightly" in text()
    assert "<script>document.title='owned'</script>" in text() and "owned" not in browser.title

    # search, by keyboard
    box = browser.find_element(By.ID, "q")
    box.send_keys("which port does the API use", Keys.ENTER)
    assert "Recalled for" in text()
    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert "port 8080" in rows[0].text
    browser.save_screenshot(str(ARTIFACTS / "viewer-search.png"))

    # open the memory: its chain has one version so far
    rows[0].find_element(By.LINK_TEXT, f"#{old.id}").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == f"Memory #{old.id}"
    assert len(browser.find_elements(By.CSS_SELECTOR, "ol.timeline > li")) == 1
    assert browser.find_element(By.ID, "key").get_attribute("value") == "api.port"

    # write the superseding memory through the remember box, and watch the old belief die
    browser.find_element(By.ID, "content").send_keys("We moved the API to port 4000")
    browser.find_element(By.CSS_SELECTOR, "form[action$='/remember'] button[type=submit]").click()
    # the POST embeds and writes on the server: wait for its page rather than racing the old one
    outcome = WebDriverWait(browser, 90).until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "section.outcome"))
    ).text
    assert "Superseded" in outcome and "The API listens on port 8080" in outcome
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
    browser.find_element(By.LINK_TEXT, "Run the full id check").click()
    assert browser.find_elements(By.CSS_SELECTOR, "svg[role=img]") and "consistent" in text()
    browser.save_screenshot(str(ARTIFACTS / "viewer-stats.png"))
