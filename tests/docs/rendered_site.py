#!/usr/bin/env python3
"""Opens pages of the built documentation site in headless Chromium (through Selenium: Debian's
chromium and chromedriver where installed, else the Chrome for Testing Selenium Manager fetches)
and fails on a page that renders blank or without its stylesheets.

  rendered_site.py HTML_DIR SHOTS_DIR PAGE...

The site is served over HTTP from a thread (file:// pages may not read their stylesheets' rules).
Each page must: load every stylesheet it links, with rules in it; be styled by them (the body's
font is not the browser's default serif); hold its text (a heading and some hundreds of
characters); and paint more than a blank screen (a screenshot, kept in SHOTS_DIR, outside the
repository, with some share of its pixels away from the background colour).
"""

import functools
import http.server
import io
import sys
import threading
from pathlib import Path

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHECK_STYLES = """
const sheets = [...document.querySelectorAll('link[rel="stylesheet"]')].map(link => {
  let rules = -1;
  try { rules = link.sheet ? link.sheet.cssRules.length : -1; } catch (e) { rules = -2; }
  return [link.getAttribute('href'), rules];
});
const h1 = document.querySelector('h1');
return {sheets: sheets, font: getComputedStyle(document.body).fontFamily,
        heading: h1 ? h1.innerText : '', text: document.body.innerText.length};
"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def painted_share(png):
    """The share of pixels whose colour differs from the most common one (the background)."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 24)
    background = max(colours)[0]
    return 1 - background / (image.width * image.height)


def check(driver, base, page, shots):
    driver.get(f"{base}/{page}")
    found = driver.execute_script(CHECK_STYLES)
    problems = []
    if not found["sheets"]:
        problems.append("links no stylesheet")
    problems += [f"stylesheet {href} did not load (rules: {rules})" for href, rules in found["sheets"] if rules <= 0]
    if "times" in found["font"].lower() or found["font"].strip('"') in ("serif", ""):
        problems.append(f"the body's font is the browser's default ({found['font']}): unstyled")
    if not found["heading"] or found["text"] < 300:
        problems.append(f"little or no text (heading {found['heading']!r}, {found['text']} characters)")
    png = driver.get_screenshot_as_png()
    shot = shots / (page.replace("/", "_") + ".png")
    shot.write_bytes(png)
    share = painted_share(png)
    if share < 0.02:
        problems.append(f"blank: {share:.1%} of the screenshot differs from the background ({shot})")
    print(f"{page}: {len(found['sheets'])} stylesheets, font {found['font'][:40]}, {found['text']} characters, "
          f"{share:.1%} painted; screenshot {shot}")
    return [f"{page}: {p}" for p in problems]


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    root, shots, pages = Path(argv[1]), Path(argv[2]), argv[3:]
    shots.mkdir(parents=True, exist_ok=True)
    server = serve(root)
    options = webdriver.ChromeOptions()
    service = None
    if Path("/usr/bin/chromium").exists() and Path("/usr/bin/chromedriver").exists():  # Debian's
        options.binary_location = "/usr/bin/chromium"
        service = Service("/usr/bin/chromedriver")
    # else Selenium Manager fetches Chrome for Testing and its driver (Ubuntu's chromium is a snap)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        problems = [p for page in pages for p in check(driver, base, page, shots)]
    finally:
        driver.quit()
        server.shutdown()
    for p in problems:
        print("FAILED", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
