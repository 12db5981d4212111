"""The widgets' front end: ES modules in ``widgets/``, joined into one module per widget.

anywidget loads a widget's front end from one string of JavaScript, so a module cannot import
its neighbours. Each file in ``widgets/`` is still a plain ES module (``import { x } from
"./y.js"``); ``bundle`` inlines those imports, each file once, in dependency order. The same
bundle serves a standalone page (``save_html``) with a small stand-in for the kernel's model.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

_IMPORT = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./([\w\-]+\.js)";\s*$', re.M)
_EXPORT = re.compile(r"^export\s+(?=(async\s+)?function|const|let|class)", re.M)


def widgets_dir() -> Path:
    """``widgets/`` beside the package in a source checkout, or inside it in an installed wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / "widgets", here / "widgets"):
        if (candidate / "gradlab.css").is_file():
            return candidate
    raise FileNotFoundError(
        "gradlab.lab: the widgets' front end (widgets/*.js) is missing from this install; reinstall gradlab")


@lru_cache(maxsize=None)
def bundle(entry: str) -> str:
    """One ES module: ``entry`` with every local import inlined (its ``export default`` kept)."""
    folder = widgets_dir()
    done, parts = set(), []

    def include(name: str, is_entry: bool) -> None:
        if name in done:
            return
        done.add(name)
        source = (folder / name).read_text(encoding="utf-8")
        for dependency in _IMPORT.findall(source):
            include(dependency, False)
        body = _IMPORT.sub("", source)
        if not is_entry:
            body = _EXPORT.sub("", body)
        parts.append(f"// ---- widgets/{name}\n{body.strip()}\n")

    include(entry, True)
    return "\n".join(parts)


@lru_cache(maxsize=None)
def stylesheet() -> str:
    """gradlab.css (what every widget shares), then each widget's own stylesheet."""
    folder = widgets_dir()
    others = sorted(p for p in folder.glob("*.css") if p.name != "gradlab.css")
    return "\n".join(p.read_text(encoding="utf-8") for p in [folder / "gradlab.css", *others])


PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body {{ margin: 16px; font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; }}
{css}</style></head>
<body><div id="widget"></div>
<p class="gl-saved-note">Saved from gradlab: pan, zoom, hover and the inspector work here; opening modules,
"check this node" and stepping need the notebook's kernel.</p>
<script type="module">
{module}
const state = {state};
const listeners = {{}};
const model = {{
  get: (key) => state[key],
  set: (key, value) => {{ state[key] = value; (listeners["change:" + key] || []).forEach((f) => f()); }},
  save_changes: () => {{}},
  send: () => {{}},
  on: (event, f) => {{ (listeners[event] = listeners[event] || []).push(f); }},
  off: () => {{}},
}};
widget.render({{ model, el: document.getElementById("widget") }});
</script></body></html>
"""


def standalone_html(entry: str, state: dict, title: str) -> str:
    """A page that runs the widget's own front end on a copy of its state, with no kernel."""
    module = bundle(entry).replace("export default", "const widget =")
    data = json.dumps(state).replace("</", "<\\/")
    return PAGE.format(title=title, css=stylesheet(), module=module, state=data)
