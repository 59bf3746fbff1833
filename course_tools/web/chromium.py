"""Drive headless Chromium over the DevTools protocol: open a page, run JavaScript in it, record every request
it makes (the web page's tests, and the timings of the closing note).

``--dump-dom`` (what :func:`course_tools.edition.browser_check` uses) cannot wait for a page that loads a
WebAssembly runtime and then translates; the DevTools protocol can: ``Runtime.evaluate`` with ``awaitPromise``
waits for the page's own promise, and ``Network.requestWillBeSent`` reports each request the page makes — the
page's network log. Chromium is started with the project's flags (:data:`~course_tools.edition.
CHROMIUM_FLAGS`: no host name resolves) and a fresh profile, and stopped when the ``with`` block ends.

    with Chromium() as browser:
        browser.open(Path("OUT/index.html"))
        print(browser.evaluate("tcPage.translate('Ein Hund läuft.')"))
        print(browser.requests)  # every URL the page asked for
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from ..edition.browser import CHROMIUM_FLAGS, find_chromium

__all__ = ["Chromium", "JavaScriptError"]


class JavaScriptError(RuntimeError):
    """The page threw (or its promise was rejected) while :meth:`Chromium.evaluate` ran an expression."""


class Chromium:
    """One headless Chromium with a fresh profile and one page, reached over the DevTools protocol."""

    def __init__(
        self,
        chromium: str | None = None,
        window: tuple[int, int] = (1200, 1400),
        timeout: float = 120,
        flags: tuple[str, ...] = (),
    ) -> None:
        """``flags``: more command-line switches, after the project's (WebGPU's, for one benchmark)."""
        self.binary = chromium or find_chromium()
        self.flags = tuple(flags)
        if self.binary is None:
            raise FileNotFoundError("headless Chromium is not installed; on Debian/Ubuntu: apt-get install chromium")
        self.window, self.timeout = window, timeout
        self.requests: list[str] = []  # every URL the page requested, in order (Network.requestWillBeSent)
        self.console: list[str] = []  # console messages and uncaught exceptions
        self._id = 0

    def __enter__(self) -> Chromium:
        import websocket  # websocket-client, in the [web] extra

        self._profile = tempfile.TemporaryDirectory(prefix="tc-chromium-", ignore_cleanup_errors=True)
        self._process = subprocess.Popen(
            [
                self.binary,
                *CHROMIUM_FLAGS,
                *self.flags,
                f"--user-data-dir={self._profile.name}",
                f"--window-size={self.window[0]},{self.window[1]}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: the renderer and helper processes end with it
        )
        try:
            port = self._port()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
                target = next(t for t in json.load(reply) if t["type"] == "page")
            self._socket = websocket.create_connection(
                target["webSocketDebuggerUrl"], timeout=self.timeout, suppress_origin=True
            )
            for domain in ("Page", "Runtime", "Network"):
                self.send(f"{domain}.enable")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _port(self) -> int:
        deadline, said = time.monotonic() + 30, []
        for line in self._process.stderr:  # "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…"
            match = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if match:
                return int(match.group(1))
            said.append(line.strip())
            if time.monotonic() > deadline:
                break
        raise RuntimeError(f"headless Chromium did not open its DevTools port; it said: {' | '.join(said[-5:])}")

    def __exit__(self, *exc) -> None:
        socket = getattr(self, "_socket", None)
        if socket is not None:
            socket.close()
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._process.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the helper processes go a moment later; then the profile can go
            try:
                os.killpg(self._process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        self._process.stderr.close()
        self._profile.cleanup()

    def send(self, method: str, **params) -> dict:
        """Send one DevTools command and return its result, recording the events that arrive meanwhile."""
        self._id += 1
        self._socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error'].get('message')}")
                return message["result"]
            self._event(message)

    def _event(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.console.append("exception: " + details.get("exception", {}).get("description", details["text"]))
        elif method == "Page.loadEventFired":
            self._loaded = True

    def open(self, page: str | Path) -> None:
        """Navigate to ``page`` (a file path or a URL) and wait for its load event."""
        url = Path(page).resolve().as_uri() if not re.match(r"^[a-z]+:", str(page)) else str(page)
        self._loaded = False
        self.send("Page.navigate", url=url)
        deadline = time.monotonic() + self.timeout
        while not self._loaded:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading within {self.timeout:.0f} s")
            self._event(json.loads(self._socket.recv()))

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (a promise is awaited); JSON-like values only."""
        result = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise JavaScriptError(details.get("exception", {}).get("description", details["text"]))
        return result["result"].get("value")

    def type(self, text: str) -> None:
        """Type ``text`` where the focus is, as a keyboard would (``Input.insertText``)."""
        self.send("Input.insertText", text=text)

    def press(self, key: str = "Enter") -> None:
        """Press and release one key (``Enter``)."""
        codes = {"Enter": (13, "\r")}
        code, text = codes[key]
        self.send("Input.dispatchKeyEvent", type="keyDown", key=key, code=key, windowsVirtualKeyCode=code, text=text)
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=key, windowsVirtualKeyCode=code)

    def screenshot(self, path: str | Path) -> Path:
        """A PNG of the page as it is now (the whole page, not only the window)."""
        import base64

        metrics = self.send("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": metrics["width"], "height": metrics["height"], "scale": 1}
        data = self.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path
