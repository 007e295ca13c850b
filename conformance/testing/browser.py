"""Headless Chromium (Debian's `chromium` package, installed by `make system-deps`) for
tests that look at what a person would see: a screenshot of a page, or its DOM after its
scripts ran. Each call starts a fresh browser with a fresh profile directory, no network
beyond the page's own file, no GPU, no sandbox (CI runs as root), and ends it."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CALL_TIMEOUT_S = 120
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars",
         "--force-device-scale-factor=1", "--disable-dev-shm-usage")


class BrowserMissing(RuntimeError):
    """No Chromium on PATH: `make system-deps` installs Debian's package."""


def chromium() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserMissing("no chromium on PATH (make system-deps installs Debian's chromium)")


def _run(page: Path, *extra: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="icefloe-chromium-") as profile:
        done = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
                              capture_output=True, timeout=CALL_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    return done


def screenshot(page: Path, out: Path, width: int = 1280, height: int = 2400) -> Path:
    """A PNG of the page as a window of width x height pixels shows it."""
    _run(page, f"--window-size={width},{height}", f"--screenshot={out}")
    if not out.exists():
        raise RuntimeError(f"chromium wrote no screenshot to {out}")
    return out


def dump_dom(page: Path, budget_ms: int = 3000) -> str:
    """The page's DOM (serialized) after its scripts ran for up to `budget_ms` of virtual time."""
    return _run(page, f"--virtual-time-budget={budget_ms}", "--dump-dom").stdout.decode("utf-8", errors="replace")
