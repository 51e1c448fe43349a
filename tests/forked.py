"""Run ``python ARGS`` as a fresh process that starts with torch already imported.

Most of the suite's time went into processes that each imported torch (~3 s) and, at their
first ``torch.optim`` optimizer, ``torch._dynamo`` (~2.5 s), before running a few training
steps. A *zygote* (one per test worker) imports both once and then forks a child per run: the
child is a new process with its own pid, working directory, environment, argv and standard
streams (files, never a terminal), which runs the script or ``-m`` module exactly as
``python`` would (``runpy``, ``__main__``, ``sys.path[0]``, exit status from ``SystemExit``,
atexit handlers, non-daemon threads joined) and exits. Nothing of diagnose is imported before
the fork, so each run imports and sets up diagnose itself, as a user's process does.

Fork after ``import torch`` is what torch's own DataLoader workers do on Linux. A run whose
environment changes what torch or Python reads at start-up (``OMP_*``, ``TORCH_*``,
``PYTHONHASHSEED``, ...; ``PYTHONPATH`` is set up per run) or
that needs signals delivered as to ``python`` itself gets a plain subprocess instead.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_SERVER = r"""
import io, json, os, runpy, sys, time, traceback
import torch, torch._dynamo  # what every run would import first
control_in = os.fdopen(os.dup(0), "r")
control_out = os.fdopen(os.dup(1), "w")
zygote_pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
base_path = [p for p in sys.path[1:] if p not in zygote_pythonpath]


def child(req):
    os.setpgid(0, 0)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        opened = os.open(req[name], flags)
        os.dup2(opened, fd)
        os.close(opened)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=unbuffered
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
        line_buffering=True,
    )
    args = req["args"]
    extra = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    code = 0
    try:
        if args[0] == "-m":
            sys.argv = [args[1], *args[2:]]
            sys.path[:] = [os.getcwd(), *extra, *base_path]
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args)
            sys.path[:] = [os.path.dirname(os.path.abspath(args[0])), *extra, *base_path]
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        import threading, atexit
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(code & 0xFF)


for line in control_in:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            control_in.close()
            control_out.close()
            child(req)
        finally:
            os._exit(70)
    deadline = time.monotonic() + req["timeout"]
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, 9)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            break
        time.sleep(0.005)
    try:
        os.killpg(pid, 9)  # what the run left behind (DataLoader workers, children)
    except (ProcessLookupError, PermissionError):
        pass
    code = -9 if timed_out else os.waitstatus_to_exitcode(status)
    control_out.write(json.dumps({"returncode": code, "timed_out": timed_out}) + "\n")
    control_out.flush()
"""

# Read by torch or Python at start-up: a run that changes them needs a process of its own.
_START_UP = ("PYTHON", "TORCH", "OMP_", "MKL_", "KMP_", "CUDA", "LD_", "GOMP", "MALLOC")


# Read by Python at start-up too, but set up again by each forked run.
_PER_RUN = {"PYTHONUNBUFFERED", "PYTHONPATH"}


class _Zygote:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._env: dict[str, str] = {}

    def _start(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._env = dict(os.environ)
            self._process = subprocess.Popen(
                [sys.executable, "-c", _SERVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env=self._env,
            )
        return self._process

    def can_run(self, env: Mapping[str, str]) -> bool:
        base = self._env or os.environ
        keys = set(env) | set(base)
        return not any(
            key.startswith(_START_UP) and key not in _PER_RUN and env.get(key) != base.get(key)
            for key in keys
        )

    def run(self, request: dict) -> dict:
        with self._lock:
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            reply = process.stdout.readline()
            if not reply:
                raise RuntimeError("the zygote process ended")
            return json.loads(reply)

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()


_ZYGOTE = _Zygote()
atexit.register(_ZYGOTE.close)


def run_python(
    args: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str] | None = None,
    stdin: str = "",
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([sys.executable, *args], capture_output=True, text=True, ...)``, in a
    process forked from the zygote when the environment allows it."""
    env = dict(os.environ if env is None else env)
    if os.environ.get("DIAGNOSE_TESTS_NO_FORK") or not _ZYGOTE.can_run(env):
        return subprocess.run(
            [sys.executable, *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    with tempfile.TemporaryDirectory(prefix="diagnose-forked-") as tmp:
        files = {name: Path(tmp) / name for name in ("stdin", "stdout", "stderr")}
        files["stdin"].write_text(stdin, encoding="utf-8")
        files["stdout"].touch()
        files["stderr"].touch()
        reply = _ZYGOTE.run(
            {
                "args": list(args),
                "cwd": str(Path(cwd).resolve()),
                "env": env,
                "timeout": timeout,
                **{name: str(path) for name, path in files.items()},
            }
        )
        out = files["stdout"].read_text(encoding="utf-8", errors="replace")
        err = files["stderr"].read_text(encoding="utf-8", errors="replace")
    if reply["timed_out"]:
        raise subprocess.TimeoutExpired([sys.executable, *args], timeout, out, err)
    return subprocess.CompletedProcess([sys.executable, *args], reply["returncode"], out, err)
