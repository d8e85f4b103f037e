"""The owner's web page in a real browser: headless Chromium from the distribution, via Selenium.

Chromium and chromedriver come from Debian's packages (``chromium``, ``chromium-driver``): no
downloaded browser build. When they are missing and the tests run as root, the test installs them
with apt-get; otherwise (or if that fails) it is skipped, saying why.

The test signs in with an owner token, checks the page's tables (data sets, budgets, analysts'
spend, requests, audit log, tokens), the spend plot (an inline SVG with one line per analyst),
creates a token through the form (shown once) and revokes it, and saves a screenshot, checked to
be non-blank and to show the plot's colours. ``DPINFER_SCREENSHOT`` names a path to keep a copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("selenium")

from service_helpers import Server, make_site, tokens  # noqa: E402

import dpinfer  # noqa: E402

pytestmark = pytest.mark.slow


def _browser() -> tuple[str, str] | str:
    """(chromium, chromedriver) paths, installing the Debian packages as root if missing; or why not."""

    def find() -> tuple[str, str] | None:
        chrome = shutil.which("chromium") or shutil.which("chromium-browser")
        driver = shutil.which("chromedriver")
        return (chrome, driver) if chrome and driver else None

    found = find()
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "chromium or chromium-driver missing (as root: apt-get install chromium chromium-driver)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "--no-install-recommends", "chromium", "chromium-driver"],
    ):
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if done.returncode != 0:
            return f"could not install chromium from the distribution ({' '.join(cmd)} failed)"
    return find() or "chromium installed but not found on PATH"


def test_the_owner_page_in_headless_chromium(tmp_path):
    found = _browser()
    if isinstance(found, str):
        pytest.skip(found)
    chrome, driver_path = found
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    site = make_site(tmp_path / "site", budget=10.0, accountant="pure", delta=None)
    made = tokens(
        site,
        {
            "owner": ("owner", "owner", 1.0),
            "alice": ("alice", "analyst", 1.0),
            "bob": ("bob", "analyst", 1.0),
        },
    )
    server = Server(site)
    try:
        for who, col, k in (("alice", "bmi", 3), ("bob", "age", 2)):
            with dpinfer.connect(server.url, made[who][0]) as svc:
                for _ in range(k):
                    svc.mean("survey", col, epsilon=0.25)
        opts = webdriver.ChromeOptions()
        opts.binary_location = chrome
        for arg in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1100,2200",
        ):
            opts.add_argument(arg)
        browser = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=opts)
        try:
            browser.get(f"{server.url}/owner")
            assert "/owner/login" in browser.current_url  # no session: the login form
            browser.find_element(By.NAME, "token").send_keys(made["alice"][0])
            browser.find_element(By.TAG_NAME, "button").click()
            wait = WebDriverWait(browser, 30)
            wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "body"), "for the data owner"))
            browser.find_element(By.NAME, "token").send_keys(made["owner"][0])
            browser.find_element(By.TAG_NAME, "button").click()
            wait.until(ec.presence_of_element_located((By.ID, "spend-plot")))
            assert browser.current_url.endswith("/owner")
            text = browser.find_element(By.TAG_NAME, "body").text
            for needle in (
                "Data sets and budgets",
                "survey",
                "Analysts",
                "alice",
                "bob",
                "Spend per analyst over time",
                "Audit log",
                "Tokens",
                "release clamped",
            ):
                assert needle in text, needle
            datasets = browser.find_element(By.ID, "datasets").text
            assert "1.25" in datasets  # spent: 5 releases at ε = 0.25 (pure accountant)
            plot = browser.find_element(By.ID, "spend-plot")
            assert len(plot.find_elements(By.TAG_NAME, "polyline")) == 2
            assert "alice / survey" in plot.text and "bob / survey" in plot.text
            shot = tmp_path / "owner_page.png"
            browser.save_screenshot(str(shot))
            # token management: create one through the form (shown once), then revoke it
            form = browser.find_element(By.ID, "new-token-form")
            form.find_element(By.NAME, "principal").send_keys("carol")
            form.find_element(By.TAG_NAME, "button").click()
            wait.until(ec.presence_of_element_located((By.ID, "new-token")))
            shown = browser.find_element(By.CLASS_NAME, "token").text
            assert shown.startswith("dpi_") and "carol" in browser.find_element(By.ID, "new-token").text
            browser.get(f"{server.url}/owner")
            assert shown not in browser.page_source  # shown once only
            tid = shown.split("_")[1]
            old = browser.find_element(By.ID, "tokens")
            browser.find_element(By.CSS_SELECTOR, f"form[action='/owner/tokens/{tid}/revoke'] button").click()
            wait.until(ec.staleness_of(old))
            wait.until(ec.presence_of_element_located((By.ID, "tokens")))
            row = [
                r
                for r in browser.find_element(By.ID, "tokens").find_elements(By.TAG_NAME, "tr")
                if tid in r.text
            ]
            assert row and "revoked" in row[0].text
        finally:
            browser.quit()
    finally:
        server.stop()
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(shot)[..., :3]
    assert img.shape[0] > 500 and img.shape[1] > 500
    assert img.std() > 0.05  # not blank
    colours = np.round(img.reshape(-1, 3) * 255).astype(int)
    blue = np.array([0x1B, 0x6C, 0xA8])
    assert (np.abs(colours - blue).sum(1) < 30).sum() > 50  # the first analyst's line is drawn
    keep = os.environ.get("DPINFER_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
