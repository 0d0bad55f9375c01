"""The html report: one self-contained page, checked in a real headless Chromium.

The browser test needs Debian's `chromium` and `chromium-driver`. Outside CI
it is skipped when they are missing; in CI (CI=true) their absence fails it.
"""

import json
import os
import re
import shutil

import pytest
from click.testing import CliRunner

from hpu_port.cli import main

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
IN_CI = os.environ.get("CI", "").lower() == "true"

needs_chromium = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER) and not IN_CI,
    reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
)

TRAIN = '''import torch
import triton
import triton.language as tl

x = torch.zeros(2, device="cuda").double()
for step in range(10):
    loss = model(x).sum()
    loss.backward()
    print(loss.item())
'''
OPS = '''import torch
from torch.utils.cpp_extension import load

kernel = load(name="k", sources=["k.cu"])
y = torch.zeros(2, dtype=torch.float64)
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "src" / "models").mkdir(parents=True)
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    (tmp_path / "src" / "models" / "ops.py").write_text(OPS)
    (tmp_path / "src" / "broken.py").write_text("x = torch.cuda.current_device(\n")
    (tmp_path / "src" / "we<ird>.py").write_text("import torch\ny = torch.ones(2).double()\n")
    return tmp_path


def report(project, fmt, *extra):
    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", fmt, *extra, str(project / "src")])
    assert result.exit_code == 2, result.output  # broken.py; everything else is reported
    return result.stdout


def test_the_page_is_self_contained(project):
    page = report(project, "html")
    assert page.startswith("<!DOCTYPE html>")
    # No external resources: the only URL is the SVG namespace; a policy forbids requests.
    assert re.findall(r"https?://[^\s\"'<>]+", page) == ["http://www.w3.org/2000/svg"]
    assert "default-src 'none'" in page
    assert not re.search(r"<(link|script|img)[^>]+(src|href)=\"(?!data:)", page)
    assert "we&lt;ird&gt;.py" in page and "we<ird>" not in page  # text is escaped
    # Each rule's page is in the report: no link leads out of it.
    assert 'href="#rule-HPU611"' in page and 'id="rule-HPU611"' in page
    for anchor in set(re.findall(r'href="#(rule-HPU\d+)"', page)):
        assert f'id="{anchor}"' in page


def test_rule_links_follow_a_base_url(project):
    page = report(project, "html", "--rule-docs-url", "https://example.invalid/hpu-port/rules/")
    assert 'href="https://example.invalid/hpu-port/rules/HPU611.md"' in page


@pytest.fixture
def browser(tmp_path):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.fail("chromium and chromedriver must be installed in CI")
    os.environ.setdefault("SE_AVOID_STATS", "true")  # selenium: no usage reporting
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run",
                     f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver is named, so selenium never looks for (or downloads) one.
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _nested(data: dict, dotted: str):
    for key in dotted.split("."):
        data = data[key]
    return data


def _visible_rows(driver):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#findings tbody tr'))"
        ".filter(r => !r.hidden).map(r => Array.from(r.cells).map(c => c.textContent));"
    )


@needs_chromium
def test_the_page_in_chromium(project, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    data = json.loads(report(project, "json"))
    page = tmp_path / "report.html"
    page.write_text(report(project, "html"), encoding="utf-8")
    browser.get(page.as_uri())

    # Loads without a console message of any kind, and asks for nothing over the network.
    assert browser.get_log("browser") == []
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0

    # The numbers are the JSON report's.
    shown = {e.get_attribute("data-summary"): int(e.text) for e in browser.find_elements(By.CSS_SELECTOR, "[data-summary]")}
    assert len(shown) == 15  # files, files with findings, failed; four rows of blockers, advice and lines to review
    for key, value in shown.items():
        assert value == _nested(data["summary"], key), key
    rows = _visible_rows(browser)
    assert len(rows) == len(data["findings"]) and browser.find_element(By.ID, "shown").text == str(len(rows))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart rect")) >= 2
    directories = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#directories tbody td:first-child")]
    assert directories == [d["path"] for d in data["directories"]]
    link = browser.find_element(By.CSS_SELECTOR, "#findings a[href='#rule-HPU609']")
    link.click()
    assert browser.find_element(By.ID, "rule-HPU609").is_displayed()

    # The text filter.
    browser.find_element(By.ID, "filter-text").send_keys("HPU611")
    rows = _visible_rows(browser)
    assert len(rows) == sum(f["code"] == "HPU611" for f in data["findings"]) == 3
    assert all(row[2] == "HPU611" for row in rows)
    assert browser.find_element(By.ID, "shown").text == "3"
    browser.find_element(By.ID, "filter-text").clear()
    browser.execute_script("document.getElementById('filter-text').dispatchEvent(new Event('input'))")

    # The kind filter and "only what needs a person".
    Select(browser.find_element(By.ID, "filter-severity")).select_by_value("advice")
    rows = _visible_rows(browser)
    assert len(rows) == data["summary"]["findings"]["advice"] and all(row[4] == "advice" for row in rows)
    Select(browser.find_element(By.ID, "filter-severity")).select_by_value("blocker")
    browser.find_element(By.ID, "filter-manual").click()
    rows = _visible_rows(browser)
    expected = sum(f["severity"] == "blocker" and not f["fixable"] for f in data["findings"])
    assert len(rows) == expected and all(row[5] == "no" for row in rows)

    # Sorting by a column, then the other way.
    header = browser.find_element(By.XPATH, "//table[@id='findings']//th[text()='code']")
    header.click()
    codes = [row[2] for row in _visible_rows(browser)]
    assert codes == sorted(codes)
    header.click()
    assert [row[2] for row in _visible_rows(browser)] == sorted(codes, reverse=True)
    assert browser.get_log("browser") == []


@needs_chromium
def test_the_first_screen_is_the_plan(project, browser, tmp_path):
    """What a lead sees without scrolling: the mode, what the rewrite does and
    the largest work packages (checked on the rendered page, and kept as a
    screenshot beside it)."""
    from selenium.webdriver.common.by import By

    data = json.loads(report(project, "json"))
    page = tmp_path / "report.html"
    page.write_text(report(project, "html"), encoding="utf-8")
    browser.set_window_size(1280, 800)
    browser.get(page.as_uri())
    browser.save_screenshot(str(tmp_path / "first-screen.png"))
    first_screen = browser.execute_script(
        "var h = window.innerHeight, out = [];"
        "document.querySelectorAll('h1, h2, dt, dd, td, th').forEach(function (e) {"
        "  var r = e.getBoundingClientRect(); if (r.bottom > 0 && r.bottom <= h && e.innerText) out.push(e.innerText); });"
        "return out.join('\\n');"
    )
    assert "Plan" in first_screen and "Mode" in first_screen and "lazy" in first_screen
    assert re.search(r"\d+ files? changes?", first_screen) and "Left for a person" in first_screen
    shown = {e.get_attribute("data-plan"): int(e.text) for e in browser.find_elements(By.CSS_SELECTOR, "[data-plan]")}
    assert shown["manual_items"] == data["summary"]["need_a_person"]["blockers"]
    assert shown["fixed_items"] == data["summary"]["fixed_by_rewrite"]["blockers"]
    packages = browser.find_elements(By.CSS_SELECTOR, "#work-packages tbody tr")
    assert 1 <= len(packages) <= 5
    assert packages[0].find_element(By.TAG_NAME, "a").text in first_screen
    assert browser.get_log("browser") == []
