"""The project's own tests: the library's contracts, and the plugin's behaviour via pytester."""

import importlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import matplotlib
import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from bnvg.log.layout import log as bnvg_log
from claimlog.machine import import_for_the_whole_process
from claimlog.platform import SET_BY_CLAIMLOG, VARIABLES
from claimlog.runner import ClaimsRun, claims_command, environment, run_claims, scratch_copy

LOG = bnvg_log()  # the workshop's log, as claimlog reads it

# pytester's in-process runs put sys.modules back as they found it. torch, an extension
# module, cannot be imported a second time in one process, nor torch._dynamo (which
# torch.optim imports as it first builds an optimizer): it registers operators with torch,
# and a second import fails whichever test comes next to build one (as tests ran shuffled,
# whenever an in-process run had imported it first). The libraries the claims' sessions
# import only when they need them (matplotlib to draw, pandas for pytest-regressions' files
# under --snapshot-update, nbclient to run a notebook) would be imported again by every run
# that does, matplotlib building its font cache from nothing in that run's HOME (the test's
# folder) each time: a second or two a run. So this session imports them all once, before
# any run (matplotlib under Agg, as the workshop's drawing module selects it: files only).
# What they import lives as long as this process, and every full garbage collection of every
# run would scan it again (hundreds of thousands of objects, seconds of each worker's time):
# so each is imported as the engine imports torch, frozen out of the collector's reach.
matplotlib.use("Agg")
for _library in ("torch._dynamo", "matplotlib.pyplot", "pandas", "nbclient"):
    import_for_the_whole_process(_library)

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"  # the workshop's own folder, beside the project (not in it)
REFERENCE_LOG = SHARED / "tools" / "reference-log"
SCRIPT = SHARED / "seed" / "experiment.py"
# The cold run that fills the shared cache: the whole suite, shuffled, on two workers.
COLD_PARALLEL = ("-n", "2", "-p", "randomly", "--randomly-seed=2")
# The cold run beside it: one process, shuffled another way, narrowed to the sections that
# compute at initialisation and the two networks of S6 and the eval bug (the parallel run
# trains all twelve; a one-process run of them all would train each a third time).
SERIAL_SELECTION = "s0_ or s1_ or s4_ or s6_ or s9_"
COLD_SERIAL = ("-n", "0", "-p", "randomly", "--randomly-seed=1", "-k", SERIAL_SELECTION)


def under_ci():
    """Whether this session runs under CI: the variable CI set, as CI services and .ci/run
    set it, to anything but "", "false" or "0"."""
    return os.environ.get("CI", "").strip().lower() not in ("", "false", "0")


def workshop_copy(source, into, **variables):
    """A scratch copy of a workshop's folder `source` in `into` (without what its runs left
    there), and the environment of a pytest started in it: `variables` added, and no outer
    session's options or xdist worker."""
    copy = into / source.name
    shutil.copytree(
        source, copy, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "obtained")
    )
    env = {**os.environ, **variables}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    return copy, env


def missing(reason):
    """What a test that guards one of the README's promises does when what it checks against
    is absent: locally it skips, saying why; under CI it fails, because a green CI has to
    mean that every promise was checked, not that some were quietly left out."""
    __tracebackhide__ = True
    if under_ci():
        pytest.fail(f"{reason} (under CI a missing check fails, never skips)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _kernel_variables_left_as_found():
    """Every test leaves the kernel variables, and claimlog's note of those it set itself, as
    it found them: an in-process session under a variable a test set rewrites the note, and
    the tests after it in the same process took the reference's kernels for a user's choice
    (a sweep's job on the native kernels kept them), failing by the order tests ran in.
    torch's thread count, which an in-process session under `--torch-threads 2` sets as it
    promises, is put back: a later test keys its runs by it (tests/test_runs.py), and found
    it changed halfway when the workshop's training set it back to the variable's."""
    names = (*VARIABLES, SET_BY_CLAIMLOG)
    before = {name: os.environ.get(name) for name in names}
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    yield
    if torch is not None and threads is not None:
        torch.set_num_threads(threads)
    after = {name: os.environ.get(name) for name in names}
    changed = {name: (before[name], after[name]) for name in names if before[name] != after[name]}
    assert not changed, f"the test changed the kernel variables (before, after): {changed}"


@pytest.fixture(scope="session")
def shared_folder(tmp_path_factory):
    """A folder every xdist worker of this test session sees, for what they share: the
    parent of the workers' own temporary folders (pytest-xdist's recipe for session-wide
    fixtures)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


def _saved_run(outputs):
    """A finished run read back from its folder (`_start_once`)."""
    return ClaimsRun(
        int((outputs / "returncode").read_text()),
        (outputs / "stdout").read_text(),
        (outputs / "stderr").read_text(),
        outputs,
    )


def _start_once(folder, command, *, cwd, env):
    """Starts `command` in `cwd`, in the background, unless a process of this test session
    started it already; a shell writes what it printed (stdout, stderr) and, last, its exit
    status (returncode) into `folder`, even after the xdist worker that started it has
    ended. `_finished` waits for it."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(folder / "started", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    # The exit status last, and by a rename: its file says the process is done.
    shell = (
        'out="$0"; "$@" >"$out/stdout" 2>"$out/stderr"; '
        'echo $? >"$out/returncode.tmp"; mv "$out/returncode.tmp" "$out/returncode"'
    )
    subprocess.Popen(
        ["sh", "-c", shell, str(folder), *map(str, command)],
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


def _finished(folder, what):
    """The run `_start_once` started into `folder`, waited for; it must have passed."""
    deadline = time.monotonic() + 900
    while not (folder / "returncode").exists():
        assert time.monotonic() < deadline, f"{what} did not end in 15 minutes"
        time.sleep(0.2)
    run = _saved_run(folder)
    assert run.returncode == 0, run.tail()
    return run


# The session's long runs, each a process of its own that no test's outcome changes: as long
# as they take, started when their first test comes (the cold serial run's comes last), they
# would run alone at the session's end while the other xdist worker idles. So each starts as
# the session's tests do, in the background, if the session has a test that reads it; its
# fixture waits for it. Each: its folder under `shared_folder`, the fixture that reads it, and
# how it starts (the command, its folder, its environment).
def _cold_parallel(shared):
    """The cold run of the whole suite on two workers (shuffled, seed 2), filling the
    shared cache (`shared_cache`)."""
    outputs = shared / "cold-parallel"
    command = claims_command(
        COLD_PARALLEL, outputs=outputs, python=sys.executable, cache_dir=shared / "cache"
    )
    return command, ROOT, environment()


def _cold_serial(shared):
    """The cold run in one process of the sections `SERIAL_SELECTION` names, shuffled
    another way (seed 1), with no cache and with OMP_NUM_THREADS=8 set as a user might."""
    outputs = shared / "cold-serial"
    command = claims_command(COLD_SERIAL, outputs=outputs, python=sys.executable, cache_dir=None)
    return command, ROOT, environment({"OMP_NUM_THREADS": "8"})


def _script(shared):
    """The workshop script as reference-log runs it (under the reference kernels, one
    thread, in a scratch folder, with this Python)."""
    return [REFERENCE_LOG], shared / "script", {**os.environ, "PYTHON": sys.executable}


LONG_RUNS = {
    "cold-parallel": ("cold_parallel_run", _cold_parallel),
    "cold-serial": ("cold_serial_run", _cold_serial),
    "script": ("workshop_script_log", _script),
}


def _start_the_long_run_once(shared, name):
    _, how = LONG_RUNS[name]
    command, cwd, env = how(shared)
    _start_once(shared / name, command, cwd=cwd, env=env)


# The script's log, kept in pytest's cache under everything it is computed from: a second
# session on this machine, with this Python, these packages and these kernel settings,
# compares the committed log with the log the script wrote the first time, instead of
# running the script again. Whatever changes (the script, reference-log, a package, a
# kernel variable, the CPU) is another key, and the script runs. --recompute (which .ci/run
# sets), --strict-numbers and `-p no:cacheprovider` always run it.
SCRIPT_LOGS = "bnvg-tests-script-logs"
# The environment variables that choose what the script's arithmetic dispatches to.
KERNEL_VARIABLES = ("ATEN_", "MKL_", "ONEDNN_", "DNNL_", "NPY_", "OMP_", "KMP_", "TORCH_")


def _script_inputs_key():
    """A digest of what the script's log is computed from (see `SCRIPT_LOGS`)."""
    from claimlog.machine import cpu, cpu_flags
    from claimlog.store import digest

    packages = sorted(
        f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()
    )
    variables = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(KERNEL_VARIABLES))
    return digest(
        REFERENCE_LOG.read_bytes(),
        SCRIPT.read_bytes(),
        sys.version,
        sys.executable,
        "\n".join(packages),
        "\n".join(variables),
        cpu(),
        cpu_flags(),
    )[:32]


@pytest.fixture(scope="session")
def _kept_script_log(request):
    """Where this environment's script log is kept in pytest's cache, or None: no cache
    (`-p no:cacheprovider`), no script, or a session told to compute everything again."""
    config = request.config
    cache = getattr(config, "cache", None)
    recompute = config.getoption("claimlog_recompute", False) or config.getoption(
        "claimlog_strict_numbers", False
    )
    if cache is None or recompute or not (REFERENCE_LOG.exists() and SCRIPT.exists()):
        return None
    return cache.mkdir(SCRIPT_LOGS) / f"{_script_inputs_key()}.log"


@pytest.fixture(scope="session", autouse=True)
def _the_long_runs_start_with_the_session(request, shared_folder, _kept_script_log):
    """Each long run this session's tests read starts as the session's tests do (see
    `LONG_RUNS`); the script only if it is there (its fixture says why not otherwise) and
    its log is not kept already (`SCRIPT_LOGS`)."""
    for name, (fixture, _) in LONG_RUNS.items():
        if name == "script":
            kept = _kept_script_log
            if not REFERENCE_LOG.exists() or (kept is not None and kept.is_file()):
                continue
        if any(fixture in item.fixturenames for item in request.session.items):
            _start_the_long_run_once(shared_folder, name)


# How long each test took when it last ran, in seconds, kept in pytest's cache by the
# session's controller: the order the next session deals its tests in.
DURATIONS = "bnvg-tests/durations"
# A test that took less is dealt in its place, whatever it took: the quick ones keep their
# order (pytest-randomly's shuffle, when it runs), and a machine's noise does not reorder them.
LONG_TEST = 1.0
_took: dict[str, float] = {}  # this session's, by test (`pytest_runtest_logreport`)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """On xdist's workers (whose collection the controller deals out), the slow tier first:
    those that wait for no long run, then those that do, then the rest. In collection order
    the slow tests came last, one module's all together (the sweep's, 90 s), and ran on one
    worker at the session's end while the other, out of tests, idled. First, and dealt one
    at a time (`pytest_configure`), each goes to whichever worker is free, and the hundreds
    of quick tests left for the end even out when the two finish.
    Within a tier, the tests that took a second or more when they last ran come first,
    longest first: a quick-tier test that runs a notebook (ten seconds) dealt last would
    otherwise keep one worker busy alone. Every worker reads the same durations, so all
    collect the same order, as xdist requires. No test depends on the order; a session in
    one process keeps it, since there it changes no time."""
    if not hasattr(config, "workerinput"):
        return
    cache = getattr(config, "cache", None)
    took = (cache.get(DURATIONS, {}) if cache is not None else {}) or {}

    def tier(item):
        slow = item.get_closest_marker("slow") is not None
        waits = any(fixture in item.fixturenames for fixture, _ in LONG_RUNS.values())
        seconds = took.get(item.nodeid, 0.0)
        return (not slow, waits, -seconds if seconds >= LONG_TEST else 0.0)

    items.sort(key=tier)


def pytest_runtest_logreport(report):
    """The controller keeps how long each test took (setup, call and teardown together), for
    the next session's order (`pytest_collection_modifyitems`)."""
    if report.passed or report.failed:
        _took[report.nodeid] = _took.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    """Into pytest's cache, on the controller (or the one process), merged with what other
    sessions kept: a narrowed session keeps the durations of the tests it did not run."""
    cache = getattr(session.config, "cache", None)
    if cache is None or hasattr(session.config, "workerinput") or not _took:
        return
    kept = cache.get(DURATIONS, {}) or {}
    kept.update({nodeid: round(seconds, 1) for nodeid, seconds in _took.items()})
    cache.set(DURATIONS, dict(sorted(kept.items())))


def pytest_configure(config):
    """xdist deals tests in chunks of consecutive ones, a quarter of a worker's share each at
    first: the whole slow tier (`pytest_collection_modifyitems`) would go to one worker. One
    at a time instead, to whichever worker is free (unless --maxschedchunk says otherwise):
    a few hundred more messages between processes, milliseconds.

    Hypothesis keeps the examples that failed in pytest's cache, where the project keeps
    every cache, and tries them first next time. Its budget is a profile: CI's (the
    default, `claimlog`) and the nox session's (`--hypothesis-profile=many`)."""
    if getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 1
    cache = getattr(config, "cache", None)  # none under -p no:cacheprovider: nothing kept
    kept = DirectoryBasedExampleDatabase(cache.mkdir("hypothesis")) if cache else None
    common = {
        "database": kept,
        "deadline": None,  # a generated workshop trains: seconds, as the machine allows
        "suppress_health_check": [HealthCheck.too_slow],
        "print_blob": True,  # a failure says how to reproduce it exactly (@reproduce_failure)
    }
    settings.register_profile("claimlog", max_examples=5, **common)
    settings.register_profile("many", max_examples=300, **common)
    settings.load_profile(config.getoption("hypothesis_profile", None) or "claimlog")


# -- both of MKL's paths, on this machine ------------------------------------------------
@pytest.fixture(scope="session")
def mkl_paths(tmp_path_factory):
    """{"zen": shim, "intel": shim}: LD_PRELOAD libraries that make MKL take each path."""
    if platform.machine().lower() not in ("x86_64", "amd64") or sys.platform != "linux":
        pytest.skip("MKL's two paths exist only in torch's x86-64 builds, shimmed on Linux")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        missing("building the MKL shims (emulation/mkl_path.c) needs a C compiler")
    folder = tmp_path_factory.mktemp("mkl-paths")
    shims = {}
    for name, zen in (("zen", 1), ("intel", 0)):
        shims[name] = folder / f"mkl-as-{name}.so"
        subprocess.run(
            [
                compiler,
                "-shared",
                "-fPIC",
                "-O2",
                f"-DMKL_AS_ZEN={zen}",
                "-o",
                shims[name],
                ROOT / "emulation" / "mkl_path.c",
            ],
            check=True,
        )
    return shims


@pytest.fixture(scope="session")
def cold_parallel_run(shared_folder):
    """The test session's one cold run of the whole suite on two workers (shuffled, seed 2):
    it trains each network and draws each figure into the shared cache (`shared_cache`),
    which every later whole run of this session that tests no cold behaviour reuses. It
    starts with the session (`LONG_RUNS`); this waits for it."""
    _start_the_long_run_once(shared_folder, "cold-parallel")
    return _finished(shared_folder / "cold-parallel", "the cold parallel run")


@pytest.fixture(scope="session")
def cold_serial_run(shared_folder):
    """The test session's cold run in one process, of the sections `SERIAL_SELECTION` names
    (the at-initialisation numbers and two networks, plain and batch norm), shuffled another
    way (seed 1), with OMP_NUM_THREADS=8 set as a user might: beside the parallel run, what
    the log must not depend on. It uses no cache, so it trains its networks itself. It
    starts with the session (`LONG_RUNS`); this waits for it."""
    _start_the_long_run_once(shared_folder, "cold-serial")
    return _finished(shared_folder / "cold-serial", "the cold serial run")


def _without_the_script():
    """Why the workshop script cannot be run here, naming what is absent (None if it can)."""
    if not SHARED.is_dir():
        return f"../shared is missing: no folder {SHARED} beside the project"
    if not REFERENCE_LOG.exists():
        return f"{REFERENCE_LOG.relative_to(ROOT.parent)} is missing from ../shared ({SHARED})"
    return None


@pytest.fixture(scope="session")
def workshop_script_log(shared_folder, _kept_script_log):
    """The log the workshop script wrote in this environment: kept from an earlier session
    (`SCRIPT_LOGS`), or run now and waited for. Without ../shared beside the project there
    is no script: a skip locally, a failure under CI (`missing`), since the README promises
    that captures/results.log is that log, byte for byte."""
    absent = _without_the_script()
    if absent is not None:
        missing(
            f"{absent}: without the workshop script, the README's promise that "
            "captures/results.log is its log, byte for byte, goes unchecked"
        )
    kept = _kept_script_log
    if kept is not None and kept.is_file():
        return kept.read_bytes()
    _start_the_long_run_once(shared_folder, "script")
    run = _finished(shared_folder / "script", "the workshop script")
    log = Path(run.stdout.strip()).read_bytes()  # reference-log prints the log's path
    if kept is not None:
        from claimlog.store import replacing

        with replacing(kept) as tmp:  # the bytes as the script wrote them, whole or not at all
            tmp.write_bytes(log)
    return log


@pytest.fixture(scope="session")
def shared_cache(cold_parallel_run, shared_folder):
    """The pytest cache folder the cold run filled: a run given it as its cache_dir trains
    nothing and draws nothing that run did."""
    return shared_folder / "cache"


@pytest.fixture(scope="session")
def warm_claims(shared_cache):
    """`pytest claims/ ARGS` reusing the cold run's networks and figures: for the tests of
    what a run does, not of how it trains."""

    def run(args, *, outputs, cwd=ROOT, env=None, timeout=900):
        return run_claims(
            args, cwd=cwd, outputs=outputs, env=env, timeout=timeout, cache_dir=shared_cache
        )

    return run


def _importable(module):
    """Whether `module` can be imported here."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


@pytest.fixture
def html_rows():
    """Reads a pytest-html report back: each test's claim cell and extras, by test id. The
    report is valid HTML whose table JavaScript draws from a JSON blob; this parses both.
    Without pytest-html (the README's `--html=report.html`, in the dev extra) a test that
    reads one skips locally and fails under CI (`missing`)."""
    if not _importable("pytest_html"):
        missing("pytest-html is not installed: pip install -e '.[dev]' installs it")

    def read(path):
        class Blob(HTMLParser):
            data = None

            def handle_starttag(self, tag, attrs):
                attrs = dict(attrs)
                if attrs.get("id") == "data-container":
                    Blob.data = json.loads(attrs["data-jsonblob"])

        Blob().feed(path.read_text())
        assert Blob.data is not None, "no data-container in the HTML report"
        rows = {}
        for test_id, results in Blob.data["tests"].items():
            row = rows.setdefault(test_id, {"sentence": "", "extras": []})
            for result in results:
                cells = "".join(result["resultsTableRow"])
                claim = cells.split('class="claimlog-claim">', 1)[-1].split("</td>", 1)[0]
                row["sentence"] = claim or row["sentence"]
                row["extras"] += result["extras"]
        return rows

    return read


@pytest.fixture(autouse=True)
def _no_outer_addopts(monkeypatch):
    """CI sets PYTEST_ADDOPTS=--recompute for its own sessions; the sessions these tests start
    say for themselves what they do."""
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


@pytest.fixture
def outside_xdist(monkeypatch):
    """No xdist worker's variables: on a worker, they would make a claims session this test
    starts believe it is a worker too (syrupy then leaves unused snapshots to a
    controller)."""
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST")]:
        monkeypatch.delenv(name)


@pytest.fixture
def claims_here(outside_xdist, pytester, tmp_path):
    """`pytest claims/ ARGS` in a scratch copy of the project (`claims_here.path`, which a
    test may change first), in this process (pytester's in-process run), with pytest's cache
    in the folder given (None: no cache); returns the finished run, read through its record
    (which must pass unless `passes=False`).
    For the tests of what a session does, not of what a process does (its imports, its
    kernels and threads, the code it runs): each subprocess would pay for Python's, pytest's
    and, when it trains, torch's start-up."""
    scratch_copy(ROOT, pytester.path)

    def run(out, *args, cache, passes=True):
        outputs = tmp_path / out
        caching = ["-p", "no:cacheprovider"] if cache is None else ["-o", f"cache_dir={cache}"]
        result = pytester.runpytest_inprocess(
            "claims/",
            # This process may have imported the project's own claim modules, of these names.
            "--import-mode=importlib",
            "-p",
            "no:randomly",
            *caching,
            f"--results-log={outputs / 'results.log'}",
            f"--diagrams={outputs / 'diagrams'}",
            f"--record={outputs / 'record.json'}",
            *args,
        )
        done = ClaimsRun(result.ret, result.stdout.str(), result.stderr.str(), outputs)
        assert done.returncode == 0 or not passes, done.tail()
        return done

    run.path = pytester.path
    return run


# The pytest configuration of a scratch project that runs this workshop's claims.
WORKSHOP_INI = "[pytest]\nclaimlog_declaration = bnvg.workshop:DECLARATION\n"


@pytest.fixture
def workshop_ini():
    """The pytest configuration of a scratch project that runs this workshop's claims."""
    return WORKSHOP_INI


S5 = "test_s5_geometric_decay"  # the claims that train nothing: the cheapest whole section


@pytest.fixture
def s5_project(pytester, outside_xdist):
    """A scratch project in pytester's folder holding the plugin, the S5 claims and all their
    snapshots, with the reference identity as committed."""
    pytester.makeini(WORKSHOP_INI)
    (pytester.path / "claims").mkdir()
    shutil.copy(ROOT / "claims" / f"{S5}.py", pytester.path / "claims" / f"{S5}.py")
    parts = (
        f"text/{S5}.ambr",
        f"numbers/claims/{S5}",
        "numbers/figures/geometric_decay.csv",
        "environment.json",
    )
    for part in parts:
        source, target = ROOT / "snapshots" / part, pytester.path / "snapshots" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    return pytester


@pytest.fixture
def run_with_text():
    """`pytest claims --workshop text ARGS` in a scratch project (`s5_project`), in this
    process, with no cache: how the tests of the workshop's text run a session."""

    def run(project, *args):
        return project.runpytest_inprocess(
            "claims",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--import-mode=importlib",
            "--workshop",
            "text",
            *args,
        )

    return run


@pytest.fixture
def kill_on_the_second_rename(monkeypatch):
    """Call it to arm: from then on, bnvg's atomic writes (`claimlog.store.replacing`, each one
    rename) put the first file in place and raise KeyboardInterrupt at the second, as a kill
    between two renames would. The test disarms it with `monkeypatch.undo()`."""
    replace = os.replace
    calls = []

    def killed(source, target):
        if calls:
            raise KeyboardInterrupt
        calls.append(target)
        replace(source, target)

    def arm():
        monkeypatch.setattr("claimlog.store.os.replace", killed)

    return arm


@pytest.fixture
def pytester(pytester):
    """pytest's pytester, with an ini file in its folder: pytest then takes that folder as the
    rootdir of the sessions it starts, never a project found above it (a TMPDIR inside this
    project would otherwise make them write into this project's snapshots)."""
    if not (pytester.path / "pytest.ini").exists():
        pytester.makeini("[pytest]\n")
    return pytester


class CommittedLog:
    """captures/results.log as committed, and whether a log this environment wrote is it.

    Where torch is the build that wrote the committed log, byte for byte. Under another build
    of the same release (the CUDA wheel that pip takes on Python 3.12 and 3.13), every line
    but the header's versions line, which names the torch that computed it."""

    def __init__(self, path):
        self.bytes = path.read_bytes()

    def check(self, produced):
        __tracebackhide__ = True
        from claimlog.runner import differing_lines, only_the_torch_build_differs

        if produced == self.bytes:
            return
        here, there = produced.decode(), self.bytes.decode()
        # The rule `python -m claimlog.runner --other-torch-build` applies, and this process's
        # torch is the build the line names.
        moved = differing_lines(here, there)
        versions = LOG.versions_line()
        assert only_the_torch_build_differs(here, there, versions), (
            f"the log differs from the committed one on lines {moved}"
        )
        assert versions is not None
        assert here.splitlines()[versions - 1].startswith(f"torch {torch.__version__} | ")


@pytest.fixture(scope="session")
def committed_log():
    from pathlib import Path

    return CommittedLog(Path(__file__).resolve().parent.parent / "captures" / "results.log")


@pytest.fixture
def own_evidence():
    """Writes a sweep table into a test project as evidence of *its* claims: stamped with
    their keys, as the sweep stamps the tables it merges (evidence of another key is not
    read)."""
    from bnvg.workshop import DECLARATION
    from claimlog.evidence.keys import claim_keys
    from claimlog.places import Places

    def write(project, table):
        places = Places(project)
        places.evidence.mkdir(parents=True, exist_ok=True)
        stamped = {**table, "keys": claim_keys(places, DECLARATION)}
        places.fragility_json.write_text(json.dumps(stamped))

    return write
