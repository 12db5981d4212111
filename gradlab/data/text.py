"""Texts that ship inside gradlab, for character-level language models: no download, no network.

Each text is a plain ``.txt`` file in the ``text/`` folder next to this module (see its README for
where each one comes from; all are in the public domain). ``load_text("sonnets")`` returns one as a
string; ``TEXT_NAMES`` lists them.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["load_text", "TEXT_NAMES"]

_FOLDER = resources.files(__package__).joinpath("text")
TEXT_NAMES = tuple(sorted(entry.name[:-4] for entry in _FOLDER.iterdir() if entry.name.endswith(".txt")))


def load_text(name: str = "sonnets") -> str:
    """The bundled text ``name`` as one string (ASCII, lines ending in ``\\n``).

    - ``"sonnets"``: Shakespeare's Sonnets I-LX (about 37 KB, 59 distinct characters), from Project
      Gutenberg's edition; each sonnet is its Roman numeral, a blank line and fourteen lines.

    A character model sees it as a sequence of symbols: ``sorted(set(text))`` is its vocabulary.
    """
    if name not in TEXT_NAMES:
        raise ValueError(f"load_text: unknown text {name!r}; choose one of {', '.join(map(repr, TEXT_NAMES))}")
    return _FOLDER.joinpath(f"{name}.txt").read_text(encoding="utf-8")
