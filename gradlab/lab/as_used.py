"""What a tensor held when the forward used it, though it may have changed in place since.

Every tensor counts the in-place changes to its memory (``t.version``). A recording notes each
tensor's count as each operation ran, and each in-place write (``x.add_(1)`` first copies x's old
values, then writes ``old + 1`` into x). So a value is shown as the forward saw it: the tensor itself
while its count is unchanged, else a copy some write kept of it; where neither holds it any more
(``optimizer.step()`` changed a weight after the forward), its value now is shown, with words that say so.
"""

from __future__ import annotations

from .summary import summarize

CHANGED = {  # what changed, in words (then, now: its version then and now)
    "output": "changed in place after this operation computed it (version {then} → {now})",
    "used": "changed in place since the forward used it (version {then} → {now}: an optimizer step or another "
            "in-place write)",
    "saved": "changed in place since forward saved it (version {then} → {now}): backward will raise an error "
             "(a variable needed for gradient computation has been modified by an inplace operation)",
}
GONE = ", and no copy was kept: these are its values now, not the ones the forward {saw}"
SAW = {"output": "computed", "used": "used", "saved": "saved"}


class ValuesAsUsed:
    """Finds, for a tensor and the version it had, a tensor that still holds those values."""

    def __init__(self):
        self._copies: dict = {}  # (id(tensor), version) -> [(tensor, version)] that held the same values

    def wrote(self, write) -> None:
        """``write.target`` took ``write.source``'s values: each holds the other's, while neither changes."""
        target, source = (write.target, write.target_version), (write.source, write.source_version)
        self._copies.setdefault((id(target[0]), target[1]), []).append(source)
        self._copies.setdefault((id(source[0]), source[1]), []).append(target)

    def holder(self, t, version):
        """``t`` itself if unchanged since ``version``, else a tensor holding what t held then, else None."""
        if version is None or t.version == version:
            return t
        for other, other_version in self._copies.get((id(t), version), ()):
            if other.version == other_version:
                return other
        return None

    def summary(self, t, version, what: str, histogram: bool = True) -> dict:
        """The summary of what ``t`` held at ``version``. Where it has changed since, ``changed`` says so in
        words: always for a saved tensor (backward will refuse it), else only where no copy holds the values
        (``what`` is "output", "used" or "saved": the keys of CHANGED)."""
        held = self.holder(t, version)
        summary = summarize(held if held is not None else t, histogram=histogram)
        if held is None:
            summary["changed"] = CHANGED[what].format(then=version, now=t.version) + GONE.format(saw=SAW[what])
        elif what == "saved" and held is not t:
            summary["changed"] = CHANGED[what].format(then=version, now=t.version) + "; shown: the values it saved"
        return summary
