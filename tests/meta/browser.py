"""A headless Chromium driven by Selenium, for the class report's web pages: its browser test
(tests/meta/test_web_report.py) and the screenshots of docs/tas.md (`python -m tests.meta.report_screenshots`).

Debian's `chromium` and `chromium-driver` (Playwright's own browser downloads cannot be reached here), installed with
apt-get where they are missing and this is root (CI starts from a clean machine); Selenium from the `dev` extra. The
browser starts with nothing of its own that reaches the network (no sync, component updates, background requests,
QUIC), a fresh profile each time, and, as root, without Chromium's own sandbox (which refuses to run as root). Its
console and its network log are kept (`console_errors`, `requests`), so that a test can say that a page logged no
error and fetched nothing but its own files.
"""

import contextlib
import json
import os
import shutil
import subprocess
import tempfile

PACKAGES = ("chromium", "chromium-driver")
FLAGS = ("--headless=new", "--disable-gpu", "--disable-quic", "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
         "--disable-default-apps", "--disable-domain-reliability", "--disable-client-side-phishing-detection",
         "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
         "--metrics-recording-only", "--password-store=basic", "--hide-scrollbars")


def binaries() -> tuple[str | None, str | None]:
    return shutil.which("chromium"), shutil.which("chromedriver")


def unavailable(install: bool = True) -> str | None:
    """Why the browser cannot be started here, or None; with `install`, Debian's packages are installed first where
    they are missing and this is root with apt-get."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if all(binaries()):
        return None
    if not install:
        return f"Debian's {' and '.join(PACKAGES)} are not installed"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"Debian's {' and '.join(PACKAGES)} are not installed, and only root can install them with apt-get"
    environment = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    wait = ["-o", "DPkg::Lock::Timeout=600"]  # another apt-get at work: wait for it rather than fail
    for command in (["apt-get", *wait, "update", "-qq"], ["apt-get", *wait, "install", "-y", "-qq", *PACKAGES]):
        done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode:
            return f"{' '.join(command)} failed ({done.returncode}): {(done.stderr or done.stdout)[-500:]}"
    return None if all(binaries()) else f"{' and '.join(PACKAGES)} installed, but chromium or chromedriver is not found"


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900):
    """A headless Chromium (Selenium's webdriver), with a fresh profile removed afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = binaries()
    profile = tempfile.mkdtemp(prefix="ra-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium's own sandbox refuses root
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager (not needed: the driver is named) stays offline
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        driver.get("about:blank")
        console_errors(driver), requests(driver)  # what the browser's own start page did
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver) -> list[str]:
    """What the pages loaded since the last call logged as errors (console errors, CSP violations, failed loads)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def requests(driver) -> list[str]:
    """The URLs the browser asked for since the last call (DevTools' Network.requestWillBeSent)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls
