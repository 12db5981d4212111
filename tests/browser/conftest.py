"""Real-browser tests: the labs in JupyterLab 4 and Notebook 7, driven by Playwright in headless Chromium.

A widget is done when a browser shows it, so these fixtures start a real Jupyter server (isolated, on
loopback, with no Graphviz `dot` on its PATH), open a notebook, run every cell the way a person would,
and check that each widget rendered and no cell failed. The recipe is /work/shared/browser-testing.md.

Fixtures: `jupyter_server(kind)` (kind "lab" or "notebook", one server per kind per session),
`server` (parametrized over both kinds), `browser`, `page`, and the helpers `open_and_run`, `run_cell`
and `screenshot`, which are also plain functions here.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
ARTIFACTS = REPO / "test-artifacts" / "browser"
# GRADLAB_CHROMIUM names another browser binary (or a missing one, as .ci/run does to prove the tests skip).
CHROMIUM = os.environ.get("GRADLAB_CHROMIUM") or (
    "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else (shutil.which("chromium") or "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]
KINDS = ("lab", "notebook")
REQUIRE = os.environ.get("GRADLAB_REQUIRE_BROWSER") == "1"   # CI sets it: missing pieces fail, not skip

# What each kind of test needs, and how a learner or a fresh machine gets it.
PYTHON_NEEDS = {
    "playwright": 'pip install -e ".[dev]"  (Python playwright; never `playwright install`)',
    "jupyterlab": 'pip install -e ".[dev]"',
    "notebook": 'pip install -e ".[dev]"  (Notebook 7)',
    "ipywidgets": 'pip install -e ".[dev]"',
    "anywidget": 'pip install -e ".[dev]"',
}
SERVER_START_S = 60
KERNEL_READY_MS = 60_000
RUN_ALL_MS = 300_000
WIDGETS_SETTLE_MS = 20_000


def pytest_collection_modifyitems(config, items):
    """Every test under tests/browser is a browser test and a slow one, marked or not."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)


def missing_or_skip(what: list[str]) -> None:
    """Skip (or fail, under GRADLAB_REQUIRE_BROWSER=1) naming each missing piece and its install line."""
    if not what:
        return
    message = "browser tests need: " + "; ".join(what)
    if REQUIRE:
        pytest.fail(message + " (GRADLAB_REQUIRE_BROWSER=1 is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(message)


def require(*modules: str, chromium: bool = False) -> None:
    missing = [f"{name}: {PYTHON_NEEDS.get(name, 'pip install ' + name)}"
               for name in modules if importlib.util.find_spec(name) is None]
    if chromium and not os.access(CHROMIUM, os.X_OK):
        missing.append(f"{CHROMIUM}: apt-get install chromium  (Debian's Chromium)")
    missing_or_skip(missing)


# --- the server ---------------------------------------------------------------------------------------

@dataclasses.dataclass
class JupyterServer:
    """A running `jupyter lab` or `jupyter notebook`: where it listens, its token, and the folder it serves."""

    kind: str
    port: int
    token: str
    root_dir: Path
    process: subprocess.Popen
    log: Path
    env: dict
    start_s: float

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def notebook_url(self, name: str) -> str:
        if self.kind == "lab":
            return f"{self.url}/lab/tree/{name}?reset&token={self.token}"
        return f"{self.url}/notebooks/{name}?token={self.token}"

    def api(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
        return json.loads(text) if text else None

    def kill_sessions(self) -> None:
        """A fresh kernel for every test: shut down whatever the last one left running."""
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")

    def write_notebook(self, name: str, cells: list[str]) -> Path:
        """Write a notebook of code cells (no outputs) into the served folder; returns its path.

        Plain JSON in nbformat 4.5: importing nbformat and its schema validation costs seconds.
        """
        notebook = {
            "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                         "language_info": {"name": "python"}},
            "cells": [{"cell_type": "code", "id": f"cell-{index}", "metadata": {}, "execution_count": None,
                       "outputs": [], "source": source} for index, source in enumerate(cells)],
        }
        path = self.root_dir / name
        path.write_text(json.dumps(notebook, indent=1) + "\n")
        return path

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()            # the server shuts its kernels down on SIGTERM
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def path_without_dot(path: str, shadow_root: Path) -> str:
    """PATH with the venv's bin first and no `dot` anywhere: the lab must render without Graphviz.

    A folder that holds `dot` (say /usr/bin on a machine with graphviz) is replaced by a folder of links
    to everything else in it, so the rest of that folder stays reachable.
    """
    folders = [str(Path(sys.executable).parent)] + [p for p in path.split(os.pathsep) if p]
    result = []
    for index, folder in enumerate(dict.fromkeys(folders)):
        if os.path.exists(os.path.join(folder, "dot")):
            shadow = shadow_root / f"path-{index}"
            shadow.mkdir(parents=True, exist_ok=True)
            for entry in os.scandir(folder):
                if entry.name != "dot":
                    (shadow / entry.name).symlink_to(entry.path)
            folder = str(shadow)
        result.append(folder)
    return os.pathsep.join(result)


def lab_settings() -> None:
    """JupyterLab's settings for a test, merged into any overrides.json already there: no news or update
    pop-up, and every cell kept in the page (the default windowed list drops cells scrolled out of view,
    so a widget further down could be missing from the page when a test counts or clicks it)."""
    overrides = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    settings = json.loads(overrides.read_text()) if overrides.exists() else {}
    wanted = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
              "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}
    if all(settings.get(plugin, {}).get(key) == value for plugin, values in wanted.items()
           for key, value in values.items()):
        return
    for plugin, values in wanted.items():
        settings.setdefault(plugin, {}).update(values)
    overrides.parent.mkdir(parents=True, exist_ok=True)
    overrides.write_text(json.dumps(settings, indent=2) + "\n")


def start_server(kind: str, base: Path) -> JupyterServer:
    root = base / "labs"
    shutil.copytree(LABS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    home = base / "home"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JUPYTER", "IPYTHON", "JPY_"))}
    env.update(
        HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
        PATH=path_without_dot(os.environ.get("PATH", ""), base / "bin"), PYTHONUNBUFFERED="1",
        # the kernels import this checkout's gradlab, not whichever one the venv was installed from
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    assert shutil.which("dot", path=env["PATH"]) is None, "the server's PATH must not reach Graphviz's dot"
    for key in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    lab_settings()

    port, token = free_port(), secrets.token_hex(16)
    app = "LabApp" if kind == "lab" else "JupyterNotebookApp"
    command = [sys.executable, "-m", "jupyter", kind, "--no-browser", "--allow-root",
               "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
               f"--{app}.expose_app_in_browser=True"]
    log = base / f"jupyter-{kind}.log"
    started = time.perf_counter()
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    server = JupyterServer(kind, port, token, root, process, log, env, 0.0)
    deadline = started + SERVER_START_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter {kind} exited with {process.returncode}:\n{server.log_tail()}")
        try:
            server.api("GET", "/api/status")
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.perf_counter() > deadline:
                server.stop()
                raise RuntimeError(f"jupyter {kind} not ready after {SERVER_START_S} s:\n{server.log_tail()}")
            time.sleep(0.1)
    server.start_s = time.perf_counter() - started
    print(f"\njupyter {kind} ready in {server.start_s:.1f} s on port {port}")
    return server


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory):
    """`jupyter_server(kind)` -> a running JupyterServer, started once per kind per session."""
    servers: dict[str, JupyterServer] = {}

    def get(kind: str) -> JupyterServer:
        assert kind in KINDS, f"kind is one of {KINDS}, not {kind!r}"
        require("jupyterlab", *(["notebook"] if kind == "notebook" else []))
        if kind not in servers:
            servers[kind] = start_server(kind, tmp_path_factory.mktemp(f"jupyter-{kind}"))
        return servers[kind]

    yield get
    for server in servers.values():
        server.stop()


@pytest.fixture(params=KINDS)
def server(request, jupyter_server) -> JupyterServer:
    """The test runs once in JupyterLab and once in Notebook 7."""
    return jupyter_server(request.param)


# --- the browser --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def browser():
    require("playwright", chromium=True)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    yield page
    context.close()


# --- driving a notebook ---------------------------------------------------------------------------------

# The notebook panel on screen, in both apps (Notebook 7's shell also has `currentWidget`).
PANEL_JS = "window.jupyterapp && window.jupyterapp.shell.currentWidget"

KERNEL_READY_JS = f"""(path) => {{
    const panel = {PANEL_JS};
    if (!panel || !panel.context || panel.context.path !== path || !panel.sessionContext) return false;
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}}"""

# Runs a notebook command and records, in window.__gradlab, whether the kernel went busy and when the
# command's promise settled (it settles once every cell it ran has replied).
START_COMMAND_JS = f"""([command, args]) => {{
    const panel = {PANEL_JS};
    const state = window.__gradlab = {{sawBusy: false, done: false, error: null}};
    const onStatus = (_, status) => {{ if (status === 'busy') state.sawBusy = true; }};
    panel.sessionContext.statusChanged.connect(onStatus);
    window.jupyterapp.commands.execute(command, args || {{}})
        .then(() => {{ state.done = true; }}, (e) => {{ state.error = String(e); state.done = true; }})
        .finally(() => panel.sessionContext.statusChanged.disconnect(onStatus));
}}"""

COMMAND_FINISHED_JS = f"""() => {{
    const state = window.__gradlab;
    const panel = {PANEL_JS};
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    return state.done && state.sawBusy && kernel && kernel.status === 'idle';
}}"""

# Error outputs in the model, including cells scrolled out of the DOM.
MODEL_ERRORS_JS = f"""() => {{
    const panel = {PANEL_JS};
    const errors = [];
    const cells = panel.content.model.cells;
    for (let i = 0; i < cells.length; i++) {{
        const cell = cells.get(i);
        if (cell.type !== 'code') continue;
        for (const output of cell.outputs.toJSON()) {{
            if (output.output_type === 'error')
                errors.push(`cell ${{i}}: ${{output.ename}}: ${{output.evalue}}\\n` + (output.traceback || []).join('\\n'));
        }}
    }}
    return errors;
}}"""


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def wait_for_kernel(page, path: str, timeout_ms: int = KERNEL_READY_MS) -> None:
    """Wait until the notebook's kernel is connected and idle (the toolbar says idle up to 1.5 s early)."""
    page.wait_for_function(KERNEL_READY_JS, arg=path, timeout=timeout_ms, polling=100)


def run_command(page, command: str, args: dict | None = None, timeout_ms: int = RUN_ALL_MS) -> None:
    """Run a notebook command and wait for the kernel to go busy and come back idle."""
    page.evaluate(START_COMMAND_JS, [command, args])
    page.wait_for_function(COMMAND_FINISHED_JS, timeout=timeout_ms, polling=100)
    error = page.evaluate("() => window.__gradlab.error")
    assert error is None, f"{command} failed in the page: {error}"


def assert_no_errors(page) -> None:
    """No cell shows a Python traceback, in the DOM or in the notebook's model."""
    errors = page.evaluate(MODEL_ERRORS_JS)
    if not errors:   # a traceback printed to stderr (a thread, a callback) is not an error output
        stderr = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        errors = [text for text in stderr.all_inner_texts() if "Traceback (most recent call last)" in text]
    assert not errors, "a cell failed:\n\n" + "\n\n".join(_strip_ansi(e) for e in errors)


def wait_for_widgets(page, timeout_ms: int = WIDGETS_SETTLE_MS) -> None:
    """Every widget output rendered: no 'Loading widget' left, none 'Error displaying widget'."""
    loading = page.get_by_text("Loading widget")
    deadline = time.monotonic() + timeout_ms / 1000
    while loading.count() and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert loading.count() == 0, f"{loading.count()} widget(s) still say 'Loading widget' after {timeout_ms} ms"
    broken = page.get_by_text("Error displaying widget")
    assert broken.count() == 0, "a widget failed to display: " + " | ".join(broken.all_inner_texts())


def open_notebook(page, server: JupyterServer, name: str) -> None:
    """Open NAME (relative to the served folder) on a fresh kernel and wait until that kernel is usable."""
    server.kill_sessions()
    page.goto(server.notebook_url(name))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=KERNEL_READY_MS)
    wait_for_kernel(page, name)


def open_and_run(page, server: JupyterServer, name: str, timeout_ms: int = RUN_ALL_MS) -> float:
    """Open a notebook, run all its cells like a person would, and check it all worked.

    Returns the seconds from opening the page to the last widget drawn. Fails on any traceback and on
    any widget left 'Loading widget'.
    """
    started = time.perf_counter()
    open_notebook(page, server, name)
    run_command(page, "notebook:run-all-cells", timeout_ms=timeout_ms)
    wait_for_widgets(page)
    assert_no_errors(page)
    seconds = time.perf_counter() - started
    print(f"{server.kind}: {name} opened and ran in {seconds:.1f} s")
    return seconds


RUN_CELL_JS = f"""(source) => {{
    const panel = {PANEL_JS};
    const notebook = panel.content;
    notebook.activeCellIndex = notebook.widgets.length - 1;
    return window.jupyterapp.commands.execute('notebook:insert-cell-below').then(() => {{
        notebook.activeCell.model.sharedModel.setSource(source);
        window.__gradlabCell = notebook.activeCell;
    }});
}}"""

CELL_TEXT_JS = """() => {
    const parts = [];
    for (const output of window.__gradlabCell.model.outputs.toJSON()) {
        if (output.output_type === 'stream') parts.push([].concat(output.text).join(''));
        else if (output.data && output.data['text/plain']) parts.push([].concat(output.data['text/plain']).join(''));
        else if (output.output_type === 'error') parts.push(output.ename + ': ' + output.evalue);
    }
    return parts.join('');
}"""


def run_cell(page, source: str, timeout_ms: int = 60_000) -> str:
    """Append a code cell to the open notebook, run it, and return its text output (stdout and repr)."""
    page.evaluate(RUN_CELL_JS, source)
    run_command(page, "notebook:run-cell", timeout_ms=timeout_ms)
    return page.evaluate(CELL_TEXT_JS)


def screenshot(locator, name: str) -> Path:
    """Save a PNG of a locator under test-artifacts/browser/ (look at it: that is the test a person does)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=str(path))
    return path


@pytest.fixture(name="open_and_run")
def open_and_run_fixture():
    return open_and_run


@pytest.fixture(name="run_cell")
def run_cell_fixture():
    return run_cell


@pytest.fixture(name="screenshot")
def screenshot_fixture():
    return screenshot
