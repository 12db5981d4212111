"""Read the DOT text that the graphviz package writes back into boxes, edges and clusters, for the tests.

Only the shape graphviz itself writes (one statement a line, quoted strings that may hold line
breaks), so a test can say "this box, in this colour, feeds that one" without rendering anything.
"""

from __future__ import annotations

import re
from collections import Counter

QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s"]+)')


def _text(token: str) -> str:
    token = token.replace("\x00", "\n")
    return token[1:-1].replace('\\"', '"') if token.startswith('"') else token


def _attributes(text: str) -> dict:
    return {key: _text(value) for key, value in PAIR.findall(text)}


def parse(source: str) -> dict:
    """{"nodes": {id: attributes}, "edges": [(tail, head, attributes)], "clusters": {name: {"attrs", "members",
    "parent"}}, "graph": {...}, "node": {...}} (the last two: the graph's default attributes)."""
    flat = QUOTED.sub(lambda m: m.group(0).replace("\n", "\x00"), source)
    found = {"nodes": {}, "edges": [], "clusters": {}, "graph": {}, "node": {}}
    stack = []
    for line in (raw.strip() for raw in flat.splitlines()):
        opening = re.fullmatch(r"subgraph (\S+) \{", line)
        if opening:
            name = _text(opening[1])
            found["clusters"][name] = {"attrs": {}, "members": [], "parent": stack[-1] if stack else None}
            stack.append(name)
        elif line == "}":
            if stack:
                stack.pop()
        elif (edge := re.fullmatch(r"(\S+) -> (\S+)(?: \[(.*)\])?", line)):
            found["edges"].append((_text(edge[1]), _text(edge[2]), _attributes(edge[3] or "")))
        elif (node := re.fullmatch(r"(\S+) \[(.*)\]", line)):
            if node[1] in ("graph", "node", "edge"):
                found.setdefault(node[1], {}).update(_attributes(node[2]))
            else:
                found["nodes"][_text(node[1])] = _attributes(node[2])
                if stack:
                    found["clusters"][stack[-1]]["members"].append(_text(node[1]))
        elif stack and "=" in line:
            found["clusters"][stack[-1]]["attrs"].update(_attributes(line))
    return found


def boxes(dot) -> Counter:
    """(label, fill) of every box, counted: the picture without its ids."""
    return Counter((a.get("label", ""), a.get("fillcolor")) for a in parse(dot.source)["nodes"].values())


def labelled_edges(dot) -> Counter:
    """(tail's label, head's label, dir) of every edge, counted."""
    found = parse(dot.source)
    label = {node_id: a.get("label", node_id) for node_id, a in found["nodes"].items()}
    return Counter((label[t], label[h], a.get("dir")) for t, h, a in found["edges"])
