"""A patch is shown against the script only when it is the patch its patcher meant.

Two checks, after the patcher has written the new source: the new script compiles (a
``continue`` that landed outside any loop, say, does not), and every line the diff changes lies
in what the patcher's edits declared they touch (the nodes they replace, the statements they
insert beside, the header of the block they insert into). A patch failing either is dropped and
the report says why, instead of a diff that breaks the script or changes more than its fix.
"""

from __future__ import annotations

import difflib

from diagnose.patches.source import Edit, NoPatch


def check_patch(path: str, old: str, new: str, edits: list[Edit]) -> None:
    """NoPatch saying what is wrong when ``new`` is not a safe patch of ``old``."""
    try:
        compile(new, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise NoPatch(
            f"the patched script would not compile ({exc.msg} at its line {exc.lineno}): "
            "apply the example by hand"
        ) from None
    declared: set[int] = set()
    for edit in edits:
        for span in edit.declared:
            declared.update(span)
    if not edits:
        return  # a patcher that writes text itself: only the compile check applies
    stray = _stray_lines(old, new, declared)
    if stray:
        lines = ", ".join(str(n) for n in stray[:6])
        raise NoPatch(
            f"the patch would change line(s) {lines}, outside the statements its fix edits"
        )


def _stray_lines(old: str, new: str, declared: set[int]) -> list[int]:
    """Lines of ``old`` (1-based) the diff changes, or inserts beside, outside ``declared``.

    The common head and tail are skipped first, so only the patched middle goes through
    difflib and the time stays bounded on long scripts.
    """
    a, b = old.splitlines(), new.splitlines()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(
        None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False
    )
    stray: list[int] = []
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        i1, i2 = i1 + head, i2 + head
        if tag == "equal":
            continue
        if tag == "insert":
            # between old lines i1 and i1 + 1 (1-based): one of them must be an anchor
            if not ({i1, i1 + 1} & declared):
                stray.append(i1 + 1)
            continue
        stray.extend(n for n in range(i1 + 1, i2 + 1) if n not in declared)
    return stray
