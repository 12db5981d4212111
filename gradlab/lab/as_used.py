"""What a tensor held when the forward used it, though it may have changed in place since.

Every tensor counts the in-place changes to its memory (``t.version``). A recording notes each
tensor's count as each operation ran, and each in-place write (``x.add_(1)`` first copies x's old
values, then writes ``old + 1`` into x). So a value is shown as the forward saw it: the tensor itself
while its count is unchanged, else a copy some write kept of it; where neither holds it any more
(``optimizer.step()`` changed a weight after the forward), its value now is shown, with words that say so.
A tensor's graph has no recording: there the versions each operation's saved tensors had (``SavedValue.version``)
tell, and a leaf no operation saved says that its history is not known.
"""

from __future__ import annotations

from .summary import summarize_later

CHANGED = {  # what changed, in words (then, now: its version then and now)
    "output": "changed in place after this operation computed it (version {then} → {now})",
    "used": "changed in place since the forward used it (version {then} → {now}: an optimizer step or another "
            "in-place write)",
    "saved": "changed in place since forward saved it (version {then} → {now}): backward will raise an error "
             "(a variable needed for gradient computation has been modified by an inplace operation)",
}
GONE = ", and no copy was kept: these are its values now, not the ones the forward {saw}"
SAW = {"output": "computed", "used": "used", "saved": "saved"}
NOT_KNOWN = ("changed in place since it was made (version {now}), and {why}, so whether that was before or after the "
             "forward used it is not known: these are its values now, perhaps not the ones the forward used")
WHY_NOT_KNOWN = {False: "no operation saved it (only they note a version)",
                 True: "backward freed what the operations saved, and the versions with it"}


def now_marked(summary: dict, t, then: int, what: str) -> dict:
    """``summary`` of t's values now, with the words that say so where t changed since version ``then``."""
    if t.version != then:
        summary["changed"] = CHANGED[what].format(then=then, now=t.version) + GONE.format(saw=SAW[what])
    return summary


def leaf_now(summary: dict, leaf, used: list, freed: bool) -> dict:
    """A leaf of a tensor's graph: marked where it changed since an operation saved it (``used``: their
    versions); where none did and it has changed at all, ``not_known`` says that no one can tell when
    (``freed``: backward freed what they saved). A note, not a warning: it may well be the forward's values."""
    if used:
        since = [version for version in used if version != leaf.version]
        return now_marked(summary, leaf, min(since), "used") if since else summary
    if leaf.version:  # versions only grow: at 0 it never changed
        summary["not_known"] = NOT_KNOWN.format(now=leaf.version, why=WHY_NOT_KNOWN[freed])
    return summary


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

    def summary(self, t, version, what: str, histogram: bool = True):
        """The summary of what ``t`` held at ``version``. Where it has changed since, ``changed`` says so in
        words: always for a saved tensor (backward will refuse it), else only where no copy holds the values
        (``what`` is "output", "used" or "saved": the keys of CHANGED). A small one comes as a ``LaterSummary``:
        the values copied now, summarised when first read (summary.py); a big one as a ``LaterTensorSummary``:
        no copy, summarised when first read, and said to have changed if it did by then."""
        held = self.holder(t, version)
        notes = {}
        if held is None:
            notes["changed"] = CHANGED[what].format(then=version, now=t.version) + GONE.format(saw=SAW[what])
        elif what == "saved" and held is not t:
            notes["changed"] = CHANGED[what].format(then=version, now=t.version) + "; shown: the values it saved"
        shown = held if held is not None else t

        def changed(then, now):  # a big one is summarised when first read: it may have changed by then
            return CHANGED[what].format(then=then, now=now) + GONE.format(saw=SAW[what])

        return summarize_later(shown, histogram, notes, changed)
