"""Open a page in headless Chromium and report what a reader's browser would see.

Talks the DevTools protocol over ``--remote-debugging-pipe`` (fd 3: commands to the
browser, fd 4: replies and events; NUL-separated JSON), so no extra Python package is
needed. Collected: console calls of level error/warning, uncaught exceptions, log
entries of level error (failed loads, blocked requests), every request the page made
that was not a data: or file: URL (a self-contained page makes none), the state of
every <img> after load, the DOM, and a screenshot.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import not_in_unit_tier

CHROMIUM = "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--hide-scrollbars", "--remote-debugging-pipe")


@dataclass
class PageCheck:
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    network: list[str] = field(default_factory=list)  # URLs other than data:/file:
    images: list[dict] = field(default_factory=list)  # src prefix, complete, naturalWidth
    marker: dict = field(default_factory=dict)  # the page's own #image-check attributes
    dom: str = ""

    @property
    def problems(self) -> list[str]:
        return self.console_errors + self.exceptions + self.log_errors + [
            f"request to {u}" for u in self.network]


class _Pipe:
    def __init__(self, write_fd: int, read_fd: int, proc: subprocess.Popen):
        self.write_fd, self.read_fd, self.proc = write_fd, read_fd, proc
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout_s: float = 30.0) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout_s: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout_s
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read_message(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event


def _high(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def open_page(path: Path, screenshot: Path | None = None, width: int = 1280,
              height: int = 2400, timeout_s: float = 60.0,
              screenshot_from: str | None = None, media: str = "screen") -> PageCheck:
    """Load ``path``; ``screenshot``: a width x height PNG from the top of the page, or
    from the top of the element ``screenshot_from`` (a CSS selector)."""
    not_in_unit_tier("opens a headless Chromium", "native")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is not installed: run scripts/setup.sh (apt: chromium)")
    # Pipe ends at fd >= 10, so bash's "3<&X 4>&Y" cannot overwrite one with the other.
    to_browser_r, to_browser_w, from_browser_r, from_browser_w = (
        _high(fd) for fds in (os.pipe(), os.pipe()) for fd in fds)

    with tempfile.TemporaryDirectory(prefix="linklab-chromium-") as profile:
        args = [*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                "about:blank"]
        proc = subprocess.Popen(
            ["/bin/bash", "-c", f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}',
             CHROMIUM, *args],
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        pipe = _Pipe(to_browser_w, from_browser_r, proc)
        try:
            return _check(pipe, path, screenshot, width, height, timeout_s,
                          screenshot_from, media)
        finally:
            try:
                pipe.call("Browser.close", timeout_s=5)
            except Exception:  # noqa: BLE001 - the browser may be gone already
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            os.close(to_browser_w)
            os.close(from_browser_r)


def _check(pipe: _Pipe, path: Path, screenshot: Path | None, width: int, height: int,
           timeout_s: float, screenshot_from: str | None, media: str) -> PageCheck:
    target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = pipe.call("Target.attachToTarget", {"targetId": target,
                                                  "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        pipe.call(f"{domain}.enable", session=session)
    pipe.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                     "deviceScaleFactor": 1,
                                                     "mobile": False}, session=session)
    pipe.call("Emulation.setEmulatedMedia", {"media": media}, session=session)
    pipe.call("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
    pipe.wait_event("Page.loadEventFired", timeout_s)
    time.sleep(0.3)  # let the page's load handler and any late console call land
    result = PageCheck()
    state = pipe.call("Runtime.evaluate", {"expression": """JSON.stringify({
        images: Array.from(document.images).map(i => ({src: i.src.slice(0, 30),
            complete: i.complete, naturalWidth: i.naturalWidth})),
        marker: Object.fromEntries(Array.from((document.getElementById('image-check')
            || {attributes: []}).attributes).map(a => [a.name, a.value])),
        dom: document.documentElement.outerHTML})""", "returnByValue": True},
        session=session)
    data = json.loads(state["result"]["value"])
    result.images, result.marker, result.dom = data["images"], data["marker"], data["dom"]
    if screenshot is not None:
        params: dict = {"format": "png"}
        if screenshot_from:
            top = pipe.call("Runtime.evaluate", {
                "expression": f"document.querySelector({json.dumps(screenshot_from)})"
                              ".getBoundingClientRect().top + window.scrollY",
                "returnByValue": True}, session=session)["result"]["value"]
            params.update(clip={"x": 0, "y": max(0, top - 10), "width": width,
                                "height": height, "scale": 1}, captureBeyondViewport=True)
        shot = pipe.call("Page.captureScreenshot", params, session=session)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
    for event in pipe.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning",
                                                                           "assert"):
            text = " ".join(str(a.get("value", a.get("description", "")))
                            for a in params.get("args", []))
            result.console_errors.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            result.exceptions.append(
                f"exception: {details.get('exception', {}).get('description') or details}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            result.log_errors.append(f"log: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(("data:", "file:", "about:")):
                result.network.append(url)
    return result
