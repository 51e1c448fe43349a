"""Find the error lines in what a user pastes: one message, a traceback, or a whole log.

Pasted text is messy: ANSI colours, tqdm bars redrawn with ``\\r`` (or with the next message
glued to the bar), ``[rank0]:`` prefixes from torchrun, markdown backticks around a message
copied from an issue, chained tracebacks, IPython tracebacks, torch's C++ frames after the
message, warnings and C++ log lines (``[E626 ... ProcessGroupNCCL.cpp:616] ...``) around it.
This module turns it into a short list of :class:`ErrorLine`, most important first, so the
matcher only runs patterns on the lines that can name the error (which also bounds the regex
work on a huge log).

What counts as the exception of a traceback: the first line after its frames that looks like
an exception line (``SomeError: message``, a bare ``KeyboardInterrupt``). Prose pasted after
the frames ("Thank you in advance.") is not one; when the exception line is missing or cut
off, the string literal of a ``raise SomeError("...")`` in the last frame stands in for the
message (role ``raised``). An exception's message continues on the following lines only
where they plausibly belong to it: indented lines that are not code or frames, and the lines
of the multi-line messages torch prints (the ``size mismatch for ...`` list of
``load_state_dict``, the notes after a CUDA error, a printed tensor); a log line, a progress
bar or a new traceback ends it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

from diagnose.safetext import strip_escapes

MAX_INPUT_CHARS = 2_000_000  # beyond this only the tail is read: errors come last
MAX_LINE_CHARS = 2_000  # a pattern never sees a longer line
MAX_MESSAGE_LINES = 12  # continuation lines kept after an exception line
MAX_LOG_LINES = 40  # warning/log lines kept (the last ones)

# Weights order the roles: the final exception names what stopped the run; the message its
# last frame raised (when the exception line is missing or cut off) and the exceptions chained
# before it often are the root cause; loose lines in a log count a little less.
ROLE_WEIGHTS = {
    "final": 1.0,
    "message": 1.0,
    "root cause": 0.99,
    "raised": 0.99,
    "chained": 0.98,
    "exception": 0.97,
    "warning": 0.96,
    "log": 0.95,
}

# torchrun's "[rank0]:", Ray's "(pid=123)", and mpirun/horovod's "--tag-output" "[1,0]<stdout>:"
LINE_PREFIX = re.compile(
    r"^(?:\[(?:rank|default)\d+\]:\s?|\((?:\w+ )?pid=\d+(?:, ip=[\d.]+)?\)\s"
    r"|\[\d+,\d+\]<(?:stdout|stderr)>:)"
)
_BAR = re.compile(r"\d+%\|.*\||\|\s*\d+/\d+\s*\[|\d+(?:\.\d+)?(?:it/s|s/it)\]")
# A whole tqdm bar: "Epoch 0:   6%|██   | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6]"
# or "Epoch 12: : 600it [11:53,  1.19s/it, loss=nan]": the counter, then [elapsed<left, rate...]
_TQDM_BAR = re.compile(
    r"(?:\d{1,3}%\|[^|\n]*\|\s*)?\d+(?:\.\d+)?[kMGTPEZY]?(?:it|B)?"
    r"(?:/\d+(?:\.\d+)?[kMGTPEZY]?(?:it|B)?)?"
    r" ?\[\d+:\d\d(?::\d\d)?(?:<[^,\[\]\n]*)?,(?=[^\[\]\n]*(?:it/s|s/it|B/s))[^\[\]\n]*\]"
)
_FENCE = re.compile(r"^\s*(?:```|~~~)[\w+.\-]*\s*$")
_TICK_BEFORE_EXCEPTION = re.compile(
    r"`(?=(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Interrupt):)"
)
# "...Good luck!/usr/lib/python3/torch/autograd/__init__.py:175: UserWarning: Error detected
# in ..." -- a warning printed to stderr in the middle of another line: the warning's
# "<file>.py:<line>: SomeWarning: " and the start of that file's path
_WARNING_MARK = re.compile(r"\.py:\d+: (?:[A-Z]\w*)?Warning: ")
_PATH_START = re.compile(r"[A-Za-z]:[/\\]|[/\\]")
# a shell prompt the header was printed after ("(env) D:\repo>Traceback ...") is not part of it
_TB_START = re.compile(
    r"^(?:[^\s>$#][^>$#]{0,200}[>$#] ?)?\s*(?:Original )?Traceback \(most recent call last\):\s*$"
)
# IPython / Jupyter: "RuntimeError                              Traceback (most recent call last)"
_IPYTHON_START = re.compile(
    r"^(?P<cls>[A-Za-z_][\w.]*)\s{2,}Traceback \(most recent call last\)\s*$"
)
# Lines of an IPython traceback before its exception line: frame headers ("<ipython-input-14-
# 82ec354902a5> in <module>()", "~/lib/torch/tensor.py in backward(self, gradient)", "Cell In[3],
# line 5", "File ~/x.py:114, in forward(self, input)", "[/path](link) in f()", "7 frames"),
# numbered source lines ("      6     epoch += 1", "----> 8     train_epoch()"), blank lines
_IPYTHON_FRAME = re.compile(
    r"\s|-*>|<ipython-input-|Cell In\[|File |\d+ frames?\s*$"
    r"|\S.* in (?:<[^>\n]*>|[\w.]+)(?:\(.*\))?\s*$"
)
_CHAIN_CAUSE = "The above exception was the direct cause of the following exception"
_CHAIN_CONTEXT = "During handling of the above exception, another exception occurred"
# A spawned child's bootstrap frame: its traceback is the child's own, not the parent's
_SPAWN_MAIN = re.compile(
    r"^\s*File \"[^\"]*multiprocessing[/\\]spawn\.py\", line \d+, in (?:spawn_main|_main)$"
)
# what a spawned child raises when the parent died while sending it its pickled process object
_FROM_PARENT_CUT = frozenset({"EOFError", "_pickle.UnpicklingError", "pickle.UnpicklingError"})
# the source line Python prints under a warning, "  warnings.warn(msg, UserWarning)"
_WARN_SOURCE = re.compile(r"(?:warnings\.)?warn(?:_explicit)?\(")
_CPP_FRAMES = re.compile(r"^(?:Exception raised from .*|frame #\d+: .*)$")
_TB_EXC = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*)(?::[ \t]*(?P<msg>.*))?$")
# An exception or warning line anywhere in a log: "RuntimeError: ...", "x.py:3: UserWarning: ..."
_LOOSE_EXC = re.compile(
    r"(?:^|(?<=[\s:|\]>]))"
    r"(?P<cls>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Warning|Interrupt)|Exception|Warning))"
    r":(?:[ \t]+(?P<msg>\S.*)|$)"
)
_LOG_WORDS = re.compile(
    r"\b(?:error|warning|warn|critical|fatal|overflow|nan|inf|non-?finite|skipp(?:ing|ed)"
    r"|exception|assert(?:ion)?|abort(?:ing|ed)?|timeout|timed out|timing out)\b",
    re.IGNORECASE,
)
# The header of a C++ log line (c10 / glog): "[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616]",
# "[E ProcessGroupNCCL.cpp:458]", "E0626 06:24:44.903881 12345 socket.cpp:42]"; E/F: an error
_CPP_LOG = re.compile(r"^\[?(?P<severity>[IWEF])(?:\d{3,4})?(?:\s+[\d:.]+)*\s+[\w.\-/]+:\d+\]\s*")
# A frame's source line: "raise RuntimeError("grad can be implicitly created only ...")"
_RAISE = re.compile(
    r"""^raise\s+(?P<cls>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)\(\s*"""
    r"""(?P<literal>[rRuU]?(?:"[^"\\\n]*(?:\\.[^"\\\n]*)*"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'))"""
    r"""\s*\)(?:\s+from\s+[\w.]+)?\s*(?:#.*)?$"""
)
_CARETS = re.compile(r"^[\s~^]+$")
# Lines after an exception that still belong to its message, whatever their indentation
_KNOWN_CONTINUATION = re.compile(
    r"(?:size mismatch for |Missing key\(s\) in state_dict|Unexpected key\(s\) in state_dict"
    r"|While copying the parameter named "
    r"|CUDA kernel errors might be asynchronously reported"
    r"|For debugging consider passing CUDA_LAUNCH_BLOCKING"
    r"|Compile with `TORCH_USE_CUDA_DSA`|Search for `cuda\w+' in "
    r"|tensor\(\[)"
)
# Notes torch prints after many different CUDA errors: they name none of them
_BOILERPLATE = re.compile(
    r"^[ \t]*(?:CUDA kernel errors might be asynchronously reported|For debugging consider passing"
    r" CUDA_LAUNCH_BLOCKING|Compile with `TORCH_USE_CUDA_DSA`|Search for `cuda\w+' in ).*(?:\n|$)",
    re.MULTILINE,
)
# An indented line that is source code (a frame's line), not a message
_CODE_LINE = re.compile(
    r"(?:return|raise|yield|await|assert|del|import|def|class|lambda)\b"
    r"|(?:if|elif|else|for|while|with|try|except|finally)\b.*:$"
    r"|from\s+[\w.]+\s+import\b"
    r"|[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?:\s*,\s*[A-Za-z_][\w.]*)*\s*(?:[-+*/%@|&^]|//|\*\*)?=(?!=)"
    r"|[A-Za-z_][\w.]*\("
)


@dataclass(frozen=True, slots=True)
class ErrorLine:
    """One error message found in the input.

    ``text`` is the line as printed (possibly several lines for a multi-line message),
    ``message`` the same without the leading ``ExcClass:`` (empty when only the class is
    known, as in an IPython traceback cut before its last line), ``exc_class`` the class as
    printed (``torch.OutOfMemoryError``) or None, ``role`` where it came from, ``wrap`` the
    line after it when a hard-wrapped paste may have broken it there (see :func:`_with_wrap`).
    """

    text: str
    message: str
    exc_class: str | None
    role: str
    wrap: str = ""  # the next line of the input, when it may be the rest of this one

    @property
    def weight(self) -> float:
        return ROLE_WEIGHTS[self.role]

    @property
    def first_line(self) -> str:
        return self.text.split("\n", 1)[0]


def clean_lines(text: str) -> list[str]:
    """Strip colours, progress bars, markdown and per-rank prefixes; return the visible lines."""
    if len(text) > MAX_INPUT_CHARS:
        text = text[-MAX_INPUT_CHARS:]
    text = strip_escapes(text).replace("\r\n", "\n")
    lines: list[str] = []
    for raw in text.split("\n"):
        if "\r" in raw:
            segments = [s for s in raw.split("\r") if s.strip()]
            # keep what is not a bar, and the bar's final state (its postfix may say loss=nan)
            kept = [s for s in segments[:-1] if not _BAR.search(s)]
            raw_parts = [*kept, segments[-1]] if segments else [""]
        else:
            raw_parts = [raw]
        for part in raw_parts:
            line = LINE_PREFIX.sub("", part.rstrip())
            # each helper's own cheap test first: most lines of a big log need none of them
            if "[" in line and ("it/s" in line or "s/it" in line or "B/s" in line):
                line = _after_progress_bar(line)
            if "`" in line or "~~~" in line:
                line = _unwrap_markdown(line)
            if "Warning: " in line:
                lines += _split_glued_warning(line)
            else:
                lines.append(line)
    return _dedented(lines)


def _dedented(lines: list[str]) -> list[str]:
    """The lines without the indentation they all share: a paste quoted or indented as a
    whole keeps its traceback's layout, which the reading below goes by."""
    common = min((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), default=0)
    return [line[common:] for line in lines] if common else lines


def _after_progress_bar(line: str) -> str:
    """The text printed right after a tqdm bar on the same line, else the line unchanged.

    tqdm leaves its bar without a newline, so the next message lands after it:
    ``Epoch 0: 6%|██ | 32040/500150 [6:28:43<94:39:17, 1.37it/s, loss=2.6][E ...] Watchdog...``.
    A bar with nothing after it is kept (its postfix may say ``loss=nan``).
    """
    if "[" not in line or not ("it/s" in line or "s/it" in line or "B/s" in line):
        return line
    ends = [bar.end() for bar in _TQDM_BAR.finditer(line, 0, MAX_LINE_CHARS)]  # bars come first
    if not ends:
        return line
    rest = line[ends[-1] :].strip()
    return rest if rest else line


def _split_glued_warning(line: str) -> list[str]:
    """An exception line with a warning glued to its end -> the two lines.

    Two streams written to one terminal: ``...Good luck!/usr/lib/python3/torch/autograd/
    __init__.py:175: UserWarning: Error detected in BmmBackward0. ...``.
    """
    mark = _WARNING_MARK.search(line) if "Warning: " in line else None
    if mark is None:
        return [line]
    token = max(line.rfind(" ", 0, mark.start()), line.rfind("\t", 0, mark.start())) + 1
    path = _PATH_START.search(line, token, mark.start())
    if path is None or not line[: path.start()].strip():
        return [line]
    if _LOOSE_EXC.search(line, 0, path.start()) is None:
        return [line]
    return [line[: path.start()], line[path.start() :]]


def _unwrap_markdown(line: str) -> str:
    """Drop the markdown a message was pasted in: code fences, a backtick before or after it.

    A backtick at the start of a line that has no partner on it (the line opens a code span
    over several lines), or one right before an exception class, is markdown; so is an
    unpaired one at the end. Paired backticks inside a message are left alone (torch prints
    some: ``when calling `cublasSgemm(...)```).
    """
    if "`" not in line and "~~~" not in line:
        return line
    if _FENCE.match(line):
        return ""
    body = line.lstrip()
    indent = line[: len(line) - len(body)]
    if body.startswith("```"):
        body = body[3:]
    if body.endswith("```"):
        body = body[:-3]
    ticks = body.count("`")
    if body.startswith("`") and (ticks % 2 == 1 or _TICK_BEFORE_EXCEPTION.match(body)):
        body = body[1:]
        ticks -= 1
    if body.endswith("`") and ticks % 2 == 1:
        body = body[:-1]
    return indent + body.rstrip()


def extract_error_lines(text: str) -> list[ErrorLine]:
    """Return the error lines of ``text``, most important first (see :data:`ROLE_WEIGHTS`)."""
    lines = clean_lines(text)
    found = _scan(lines)
    echoes = _echoes_beside_loose(found)
    result = _order_tracebacks(_echoes_first(found))
    result += _final_among_loose(found)[-MAX_LOG_LINES:]
    result += echoes + found.logs[-MAX_LOG_LINES:]
    return _when_nothing_else(_dedupe(_cause_under_raised(result, lines)), lines)


@dataclass(slots=True)
class _Found:
    """What one pass over the lines found, before it is ordered."""

    # (exception line or None, link to the previous traceback, message raised in the last frame)
    tracebacks: list[tuple[ErrorLine | None, str | None, ErrorLine | None]] = field(
        default_factory=list
    )
    # indexes into tracebacks of spawned children that only failed to read from their parent
    echoes: set[int] = field(default_factory=set)
    loose: list[ErrorLine] = field(default_factory=list)  # exception and warning lines
    logs: list[ErrorLine] = field(default_factory=list)


def _scan(lines: list[str]) -> _Found:
    found = _Found()
    pending_link: str | None = None
    i, n = 0, len(lines)
    while i < n:
        stripped = lines[i].strip()
        if not stripped:
            i += 1
            continue
        traceback = _traceback_at(lines, i)
        if traceback is not None:
            start = i
            exc, raised, i = traceback
            if exc is not None or raised is not None:
                if _is_parent_echo(lines[start:i], exc):
                    found.echoes.add(len(found.tracebacks))
                found.tracebacks.append((exc, pending_link, raised))
            pending_link = None
        elif stripped.startswith(_CHAIN_CAUSE):
            pending_link = "cause"
            i += 1
        elif stripped.startswith(_CHAIN_CONTEXT):
            pending_link = "context"
            i += 1
        else:
            i = _read_loose(lines, i, stripped, found)
    return found


def _is_parent_echo(block: list[str], exc: ErrorLine | None) -> bool:
    """A spawned child that died reading what its parent never finished sending.

    On spawn (Windows, macOS, Python 3.14+) a parent that cannot pickle a worker's arguments
    raises, and the half-started child prints ``EOFError: Ran out of input`` after it: the
    child's traceback echoes the parent's error and is never the cause while that one is there.
    """
    if exc is None or exc.exc_class not in _FROM_PARENT_CUT:
        return False
    return any(_SPAWN_MAIN.match(line) for line in block)


def _echoes_first(found: _Found) -> list[tuple[ErrorLine | None, str | None, ErrorLine | None]]:
    """The tracebacks in order, with children's echoes of a parent's failure moved first.

    Moved before the others, an echo is never taken as the final exception when the paste
    also holds the traceback it echoes; a paste of the echo alone keeps it as the final.
    """
    if not found.echoes or len(found.echoes) == len(found.tracebacks):
        return found.tracebacks
    echoes = [tb for k, tb in enumerate(found.tracebacks) if k in found.echoes]
    others = [tb for k, tb in enumerate(found.tracebacks) if k not in found.echoes]
    if others and others[0][1] is not None:
        others[0] = (others[0][0], None, others[0][2])
    return echoes + others


def _echoes_beside_loose(found: _Found) -> list[ErrorLine]:
    """Take out the echoes when they are the only tracebacks and the parent's error is loose.

    A parent's traceback pasted without its header (or under a tool's own header) leaves its
    exception a loose line; the children's echoes then must not be the final exception.
    """
    if not found.echoes or len(found.echoes) != len(found.tracebacks):
        return []
    if not any(line.role == "exception" for line in found.loose):
        return []
    echoes = [replace(exc, role="exception") for exc, _link, _raised in found.tracebacks if exc]
    found.tracebacks, found.echoes = [], set()
    return echoes


def _cause_under_raised(result: list[ErrorLine], lines: list[str]) -> list[ErrorLine]:
    """The exception printed under a final ``... raised:`` is the final one; the wrapper is chained.

    torch.compile wraps what its backend raised (``BackendCompilerFailed: backend='inductor'
    raised:``) and prints the backend's own exception on the next line: that one says what
    went wrong, and the wrapper only where.
    """
    head = result[0] if result else None
    if head is None or head.role != "final" or not head.message.endswith(" raised:"):
        return result
    last_line = head.text.splitlines()[-1].strip()
    at = next((k for k, line in enumerate(lines) if line.strip() == last_line), None)
    if at is None:
        return result
    nxt = next((k for k in range(at + 1, len(lines)) if lines[k].strip()), None)
    cause = _loose_line(lines[nxt].strip()) if nxt is not None else None
    if cause is None or cause.role != "exception":
        return result
    more, _after = _continuation(lines, nxt + 1)
    cause = replace(_extended(cause, more), role="final")
    rest = [e for e in result[1:] if e.message != cause.message]
    return [cause, replace(head, role="chained"), *rest]


def _traceback_at(
    lines: list[str], i: int
) -> tuple[ErrorLine | None, ErrorLine | None, int] | None:
    """The traceback that starts at line ``i`` (exception, raised message, next index), if any."""
    line = lines[i]
    if _TB_START.match(line):
        return _read_traceback(lines, i + 1)
    ipython = _IPYTHON_START.match(line)
    if ipython is not None:
        exc, after = _read_ipython_traceback(lines, i + 1, ipython.group("cls"))
        return exc, None, after
    return None


def _read_loose(lines: list[str], i: int, stripped: str, found: _Found) -> int:
    """Record the exception, warning or log line at ``i`` (if it is one); the next index."""
    if _CPP_FRAMES.match(stripped):
        return i + 1
    line = _loose_line(stripped)
    if line is None:
        return i + 1
    if line.role == "log" and lines[i][:1].isspace() and _WARN_SOURCE.match(stripped):
        return i + 1  # the source line Python prints under a warning: code, not a message
    if line.role == "log":
        found.logs.append(_with_wrap(line, lines, i + 1))
        return i + 1
    more, after = _continuation(lines, i + 1)
    found.loose.append(_with_wrap(_extended(line, more), lines, after))
    return after


def _final_among_loose(found: _Found) -> list[ErrorLine]:
    """The loose lines; without a traceback, the last bare ``ExcClass: message`` is the final."""
    exceptions = [e for e in found.loose if e.role == "exception"]
    if not exceptions or any(exc is not None for exc, _link, _raised in found.tracebacks):
        return found.loose
    last = exceptions[-1]
    return [replace(e, role="final") if e is last else e for e in found.loose]


def _when_nothing_else(result: list[ErrorLine], lines: list[str]) -> list[ErrorLine]:
    """A lone log line is the message itself; text with no error line is one message whole."""
    visible = [line for line in lines if line.strip()]
    if len(visible) == 1 and len(result) == 1 and result[0].role == "log":
        return [replace(result[0], exc_class=None, role="message")]
    if not result:
        whole = "\n".join(visible)[: MAX_LINE_CHARS * 2].strip()
        if whole:
            return [ErrorLine(whole, whole, None, "message")]
    return result


def _with_wrap(line: ErrorLine, lines: list[str], after: int) -> ErrorLine:
    """``line`` with the line that follows it, in case the paste broke one line in two.

    Issue text is often hard-wrapped: ``... WorkNCCL(SeqNum=4, OpTy`` / ``pe=BROADCAST, ...``,
    ``Watchdog caught collective operation timeout:`` / ``WorkNCCL(OpType=...) ran for ...``.
    The next line is kept when it could be the rest of this one: it starts at the margin and
    begins nothing of its own (a traceback, a chain note, a C++ frame or log line, an exception
    or warning line). Patterns are then also tried on the two read as one line (see
    ``matcher._search_texts``); nothing else uses it.
    """
    if after >= len(lines):
        return line
    following = lines[after]
    stripped = following.strip()
    if (
        not stripped
        or following[0].isspace()
        or _TB_START.match(following)
        or _IPYTHON_START.match(following)
        or stripped.startswith((_CHAIN_CAUSE, _CHAIN_CONTEXT))
        or _CPP_FRAMES.match(stripped)
        or _LOOSE_EXC.search(stripped)
        or _CPP_LOG.match(stripped)
    ):
        return line
    return replace(line, wrap=stripped[:MAX_LINE_CHARS])


def without_boilerplate(message: str) -> str:
    """``message`` without the notes torch appends to every CUDA error (for comparing texts)."""
    if "CUDA" not in message and "cuda" not in message:
        return message
    return _BOILERPLATE.sub("", message).strip()


def split_class(line: str) -> tuple[str | None, str]:
    """``"torch.OutOfMemoryError: CUDA out of memory"`` -> (``torch.OutOfMemoryError``, message)."""
    m = _LOOSE_EXC.match(line.strip())
    if m is None:
        return None, line.strip()
    return m.group("cls"), (m.group("msg") or "").strip()


def _read_traceback(lines: list[str], i: int) -> tuple[ErrorLine | None, ErrorLine | None, int]:
    """Read frames up to the exception line and its message.

    Returns the exception (None when the line after the frames is not an exception line),
    the message a ``raise`` in the last frame spells out (or None), and the next index.
    """
    n = len(lines)
    code: str | None = None  # the last frame's source line
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line[0].isspace() or line.startswith(("File ", "^", "~")):
            body = line.strip()
            if body.startswith("File "):
                code = None
            elif not _CARETS.match(body):
                code = body
            i += 1
            continue
        break
    raised = _raised_message(code)
    if i >= n:
        return None, raised, i
    head = lines[i][:MAX_LINE_CHARS]
    m = _TB_EXC.match(head)
    if m is None or not (m.group("msg") is not None or "." in head or head[:1].isupper()):
        return None, raised, i  # prose, or a paste cut before the exception line
    exc, i = _exception_at(lines, i, m)
    return exc, raised, i


def _read_ipython_traceback(lines: list[str], i: int, cls: str) -> tuple[ErrorLine, int]:
    """Read an IPython traceback whose header named ``cls``; its last line is ``cls: message``.

    IPython frames are unindented and separated by blank lines, so the traceback ends at the
    first line that is not part of a frame: the exception line when it starts with the
    header's class. When the input stops before it (or something else follows the frames),
    only the class is known: the error line then has an empty message.
    """
    short = cls.rsplit(".", 1)[-1]
    n = len(lines)
    while i < n:
        line = lines[i]
        if line[:1].isalpha() or line[:1] == "_":
            m = _TB_EXC.match(line[:MAX_LINE_CHARS])
            if m is not None and m.group("cls").rsplit(".", 1)[-1] == short:
                return _exception_at(lines, i, m)
        if line and not _IPYTHON_FRAME.match(line):
            break  # not a frame: the traceback was cut before its last line
        i += 1
    return ErrorLine(cls, "", cls, "final"), i


def _exception_at(lines: list[str], i: int, m: re.Match[str]) -> tuple[ErrorLine, int]:
    """The exception line at ``i`` (matched by ``_TB_EXC``) with its message's continuation."""
    head = lines[i][:MAX_LINE_CHARS]
    cls = (
        m.group("cls")
        if (m.group("msg") is not None or "." in head or head[:1].isupper())
        else None
    )
    first = (m.group("msg") or "") if cls else head
    more, i = _continuation(lines, i + 1)
    message = "\n".join([first, *more]).strip()
    text = f"{cls}: {message}" if cls and message else (cls or message)
    return _with_wrap(ErrorLine(text, message, cls, "final"), lines, i), i


def _raised_message(code: str | None) -> ErrorLine | None:
    """``raise SomeError("literal")`` -> the error line it raises (None for anything else)."""
    if not code or not code.startswith("raise"):
        return None
    m = _RAISE.match(code)
    if m is None:
        return None
    try:
        message = ast.literal_eval(m.group("literal"))
    except (ValueError, SyntaxError):
        return None
    if not isinstance(message, str) or not message.strip():
        return None
    message = message.strip()
    cls = m.group("cls")
    return ErrorLine(f"{cls}: {message}", message, cls, "raised")


def _continuation(lines: list[str], i: int) -> tuple[list[str], int]:
    """The lines from ``i`` on that continue an exception's message, and the next index."""
    more: list[str] = []
    n = len(lines)
    while i < n and len(more) < MAX_MESSAGE_LINES and _continues(lines[i]):
        more.append(lines[i][:MAX_LINE_CHARS])
        i += 1
    return more, i


def _continues(line: str) -> bool:
    """Whether ``line``, right after an exception's message, still belongs to that message."""
    stripped = line.strip()
    if not stripped:
        return False
    if _KNOWN_CONTINUATION.match(stripped):
        return True
    if not line[0].isspace():  # an unindented line is a new thing: a log line, a bar, prose
        return False
    return not (
        stripped.startswith(("File ", _CHAIN_CAUSE, _CHAIN_CONTEXT))
        or _TB_START.match(stripped)
        or _CARETS.match(stripped)
        or _CODE_LINE.match(stripped)
        or _LOOSE_EXC.match(stripped)
    )


def _extended(line: ErrorLine, more: list[str]) -> ErrorLine:
    if not more:
        return line
    tail = "\n" + "\n".join(more)
    return ErrorLine(line.text + tail, (line.message + tail).strip(), line.exc_class, line.role)


def _loose_line(line: str) -> ErrorLine | None:
    line = line[:MAX_LINE_CHARS]
    m = _LOOSE_EXC.search(line)
    if m is not None and m.group("msg"):
        cls = m.group("cls")
        role = "warning" if cls.endswith("Warning") else "exception"
        return ErrorLine(line, m.group("msg").strip(), cls, role)
    header = _CPP_LOG.match(line) if line[:1] in "[EF" else None
    if header is not None and header.group("severity") in "EF":
        return ErrorLine(line, line[header.end() :].strip() or line, None, "log")
    if _LOG_WORDS.search(line):
        return ErrorLine(line, line, None, "log")
    return None


def _order_tracebacks(
    tracebacks: list[tuple[ErrorLine | None, str | None, ErrorLine | None]],
) -> list[ErrorLine]:
    """The last traceback's exception first, then the exceptions chained before it.

    The message a ``raise`` in the final traceback's last frame spells out comes right after
    the final exception when it says more (the exception line is missing or cut off).
    """
    if not tracebacks:
        return []
    ordered: list[ErrorLine] = []
    last = len(tracebacks) - 1
    last_chain_start = last
    while last_chain_start > 0 and tracebacks[last_chain_start][1] is not None:
        last_chain_start -= 1
    for idx in range(last, -1, -1):
        exc, _link, raised = tracebacks[idx]
        if idx == last:
            role = "final"
        elif idx == last_chain_start:
            role = "root cause"
        elif idx > last_chain_start:
            role = "chained"
        else:
            role = "exception"
        if exc is not None:
            ordered.append(replace(exc, role=role))
        if idx == last and raised is not None and (exc is None or exc.message != raised.message):
            ordered.append(raised)
    # the root cause of the final chain comes right after the final exception and its raise
    head = [e for e in ordered if e.role in ("final", "raised")]
    root = [e for e in ordered if e.role == "root cause"]
    rest = [e for e in ordered if e.role not in ("final", "raised", "root cause")]
    return head + root + rest


def _dedupe(lines: list[ErrorLine]) -> list[ErrorLine]:
    """The same message printed twice (traceback and log) counts once, at its best role."""
    seen: set[str] = set()
    out: list[ErrorLine] = []
    for line in sorted(lines, key=lambda e: -e.weight):
        key = line.message.strip() or line.text
        if key in seen:
            continue
        seen.add(key)
        out.append(line)
    return out
