"""Screenshots of the built documentation in headless Chromium (the distribution's packages).

Run ``make docs`` first (the tutorials are executed there), then::

    python benchmarks/docs_screenshots.py [--html docs/_build/html] [--out benchmarks/results]

It opens four pages from ``docs/_build/html`` as ``file://`` URLs with Selenium and Debian's
``chromium`` and ``chromium-driver`` (``apt-get install chromium chromium-driver``; no downloaded
browser build) and saves ``docs_tutorial_analyst.png`` (a rendered, executed notebook),
``docs_index.png``, ``docs_api_dpinfer.png`` (the API reference) and ``docs_privacy_model.png``.
Each screenshot is checked not to be blank.
Without a built site, Chromium or Selenium it says why and exits 0 (``make bench`` runs every
script here).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "docs_tutorial_analyst.png": "tutorials/analyst.html",
    "docs_index.png": "index.html",
    "docs_api_dpinfer.png": "api/generated/dpinfer.html",
    "docs_privacy_model.png": "privacy-model.html",
}


def _why_not(html: Path) -> str | None:
    if not (html / "index.html").is_file():
        return f"no built site in {html} (run `make docs` first)"
    if not (shutil.which("chromium") or shutil.which("chromium-browser")) or not shutil.which("chromedriver"):
        return "chromium or chromium-driver missing (as root: apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium missing (the dev extra)"
    return None


def _not_blank(path: Path) -> bool:
    """More than one colour in the image (matplotlib reads the PNG)."""
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(path)
    return bool(np.unique(img.reshape(-1, img.shape[-1]), axis=0).shape[0] > 16)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--html", type=Path, default=ROOT / "docs" / "_build" / "html")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--height", type=int, default=2000)
    args = p.parse_args(argv)
    why = _why_not(args.html)
    if why:
        print(f"docs_screenshots: skipped: {why}")
        return 0

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(chrome)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={args.width},{args.height}", "--allow-file-access-from-files"):
        opts.add_argument(arg)
    browser = webdriver.Chrome(service=DriverService(executable_path=str(shutil.which("chromedriver"))),
                               options=opts)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        for name, page in PAGES.items():
            browser.get((args.html / page).resolve().as_uri())
            browser.execute_script("return document.readyState")
            path = args.out / name
            browser.save_screenshot(str(path))
            ok = _not_blank(path)
            print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {page}"
                  f"{'' if ok else ' (BLANK)'}")
            if not ok:
                return 1
    finally:
        browser.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
