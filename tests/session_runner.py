"""One process that runs pytest sessions, one after another, each in a workshop's folder: a
machine for the generated workshops' tests (`tests/test_generated_workshops.py`).

MKL picks its path and ATen its kernels once, as torch starts: a process is one platform.
Starting one per session would cost torch's import each time (seconds, against a workshop
that trains in a fraction of one), so each platform gets a process of its own, started
with its variables (a shim preloaded, a capability), that imports torch once and then runs
every session asked of it. It reads one request per line on stdin, {"folder", "args",
"env"}, and answers on stdout, one line each: {"code": pytest's exit code, "output": what
the session printed}.

Between sessions it forgets each workshop's own modules (those in its folder) and puts
sys.path back, as pytester does for an in-process run: workshops and their claims modules
share names from one workshop to the next. torch, claimlog and pytest's plugins stay.
"""

import contextlib
import io
import json
import os
import sys
from pathlib import Path

from claimlog.platform import apply

apply()  # the reference kernels where the caller chose none, before torch is imported

import pytest  # noqa: E402

from claimlog.machine import import_for_the_whole_process  # noqa: E402

for _library in ("torch", "torch._dynamo", "pandas"):
    import_for_the_whole_process(_library)


def run(folder: Path, args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """pytest `args` in `folder`, with the variables `env` added for the session."""
    paths, modules, saved = list(sys.path), set(sys.modules), dict(os.environ)
    os.environ.update(env)
    os.chdir(folder)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            code = int(pytest.main(args))
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sys.path[:] = paths
        for name in set(sys.modules) - modules:
            where = getattr(sys.modules[name], "__file__", None) or ""
            if where.startswith(str(folder)):
                del sys.modules[name]
    return code, printed.getvalue()


def main() -> None:
    # Answers go to the stdout this process started with: a session captures file
    # descriptor 1 while its tests run.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    for request in sys.stdin:
        asked = json.loads(request)
        code, output = run(Path(asked["folder"]), asked["args"], asked.get("env", {}))
        answers.write(json.dumps({"code": code, "output": output}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
