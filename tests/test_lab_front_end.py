"""The split between kernel and front end (docs/lab.md, "Who draws"): Python draws, the front end shows and reports.

The first tests read widgets/*.js as text, so they run without anywidget; the last ones check that
docs/lab.md names every traitlet of every widget and every message the front end sends.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gradlab.lab.frontend import widgets_dir

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = {path.name: path.read_text(encoding="utf-8") for path in sorted(widgets_dir().glob("*.js"))}
COLOUR = re.compile(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?\b|\b(?:rgba?|hsla?)\(")
LOG_SCALE = re.compile(r"Math\.(?:log10|log2|log)\b|Math\.pow\(\s*10\b|\b10\s*\*\*")  # (the wheel's zoom may exp)


def test_the_front_end_holds_no_colour_and_no_log_scale():
    # a colour or a log axis in JavaScript is a second copy of colors.py: the live view and the picture would drift
    found = {name: COLOUR.findall(text) + LOG_SCALE.findall(text) for name, text in SCRIPTS.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_the_only_svg_the_front_end_builds_is_a_summarys_histogram():
    # every other picture is Python's SVG text, placed as it is (dom.js defines s(), histogram.js uses it)
    builders = {name for name, text in SCRIPTS.items() if re.search(r'\bs\(\s*"', text)}
    assert builders == {"histogram.js"}


def test_the_flow_chart_has_no_colour_of_its_own():
    picture = (ROOT / "gradlab" / "lab" / "flow_picture.py").read_text(encoding="utf-8")
    assert re.findall(r"#[0-9a-fA-F]{6}\b", picture) == []  # its layer colours and inks are colors.py's


def sent_messages() -> set:
    """Every message type the front end sends: model.send({ type: "x", ... }) and the stepper's send("x")."""
    return {name for text in SCRIPTS.values()
            for name in re.findall(r'\bsend\(\{\s*type: "(\w+)"', text) + re.findall(r'\bsend\("(\w+)"', text)}


def test_docs_name_every_message_the_front_end_sends():
    doc = (ROOT / "docs" / "lab.md").read_text(encoding="utf-8")
    sent = sent_messages()
    assert {"toggle", "check", "reveal", "step", "back", "end", "reset", "run_to", "open", "run"} <= sent
    assert sorted(name for name in sent if f"`{name}`" not in doc) == []


def test_docs_name_every_traitlet_of_every_widget():
    pytest.importorskip("anywidget", reason="the widgets need anywidget: pip install 'gradlab[lab]'")
    from gradlab.lab.backprop_stepper import BackpropStepper
    from gradlab.lab.device_timings import DeviceTimings
    from gradlab.lab.gradient_flow import FlowChart
    from gradlab.lab.graph_view import GraphWidget

    doc = (ROOT / "docs" / "lab.md").read_text(encoding="utf-8")
    missing = {cls.__name__: sorted(name for name in cls.class_own_traits(sync=True) if f"`{name}`" not in doc)
               for cls in (GraphWidget, BackpropStepper, FlowChart, DeviceTimings)}
    assert {name: names for name, names in missing.items() if names} == {}
