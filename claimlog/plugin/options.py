"""What this session is: its options and markers, which claims run where, and the platform.

- **Options** are read once into `Settings` (kept in `config.stash`): where the log, the
  figures and the snapshots go, whether numbers are strict, whether snapshots are being
  updated. The reference kernels (`claimlog.platform`) and one torch intra-op thread
  (--torch-threads) are set in every process that computes, before torch is imported: the
  kernels and the thread count change training results. `--native-kernels` leaves the
  machine its own kernels. xdist workers and the sessions the sweep starts inherit the
  settings through the environment. Another experiment (a seed option: --sampler-seed) writes
  its log and figures into pytest's cache folder, never into captures/ or diagrams/.
- **Markers**: `log_lines` (the lines a claim owns), `runs` (the trained runs it reads),
  `evidence` (it reads the sweep's own tables). A suite in which a log line
  has an unknown name or two owners is refused before anything runs; citations run last,
  because they read the log the claims before them verified.
- **The channel**: a claim's evidence rides on its report as `report.claimlog`, a list of named
  payloads (the names below) that xdist ships to the controller (`claimlog.plugin.session`)
  with the report's own fields; each phase's report carries what that phase added, once.
  `user_properties`, which JUnit XML and other reports print, holds only what a reader
  wants: the claim's sentence and the log lines it verified.
- **Where it runs**: `-n auto` (set in pyproject.toml) spreads a full suite over every core,
  but runs a narrowed selection, or a suite whose trained runs pytest's cache already holds,
  in one process.
- **The platform** this process computes on, and where it stands with the evidence: its
  identity compared with the reference identity (`snapshots/environment.json`), then looked
  up among the committed fragments at this session's seeds; of the fragments and the sweep's
  table only the evidence of claims whose key is still this checkout's is read
  (`claimlog.evidence.fragments`): the rest is stale. The rules that follow live in
  `claimlog.evidence.verdicts`. Without a readable reference identity no run could stand as the
  reference, so a missing or damaged `snapshots/environment.json` stops the session before
  any claim runs (but an update, which writes it).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from claimlog import platform
from claimlog.declaration import declared
from claimlog.evidence.fragility import EMPTY, Fragility
from claimlog.evidence.fragility import load as load_fragility
from claimlog.evidence.fragments import FragmentStore, claim_keys, seed_variant_name
from claimlog.evidence.verdicts import HELD, NEW, REFERENCE, Standing
from claimlog.kernels import NotDeterministic, differing, family, fingerprint, record
from claimlog.log.lines import LogLine, claimed_keys, line_number, log
from claimlog.places import Places
from claimlog.platform import TORCH_FACTS_FOLDER, Platform, torch_facts
from claimlog.store import Event, Store, TrainedRuns
from claimlog.text.citations import Uncited
from claimlog.text.documents import text_files
from claimlog.transaction import Busy, Update

# -- options and settings -------------------------------------------------------------------
UPDATE_COMMAND = "pytest claims/ --snapshot-update"


@dataclass(frozen=True)
class Settings:
    places: Places
    results_log: Path
    diagrams: Path
    strict: bool  # --strict-numbers: any difference from a snapshot fails
    update: bool  # --snapshot-update: record what is computed here, text and numbers
    recompute: bool  # --recompute or --strict-numbers: train every run again
    torch_threads: int
    native_kernels: bool  # --native-kernels: the machine's own kernels, not the reference
    kernels: Mapping[str, str]  # who chose each kernel variable: "user", "reference", "machine"
    seeds: Mapping[str, int | None]  # each seed axis the workshop declares: --<axis>-seed K
    keys: Mapping[str, str]  # each claim's key in this checkout (`claimlog.evidence.fragments`)
    workshop_text: Path | None  # --workshop DIR: the text whose citations are checked
    claims_report: Path | None
    record: Path | None
    figures: bool = True  # False under --no-figures: what a figure plots is checked, not drawn


SETTINGS = pytest.StashKey[Settings]()
# With --workshop: the numbers of the text that cite no line, by document, as collected
# (citations run in the controller's process).
UNCITED = pytest.StashKey[dict[str, list[Uncited]]]()
FRAGILITY = pytest.StashKey[Fragility]()
FRESH_FRAGILITY = pytest.StashKey[Fragility]()  # its fresh part


def settings(config: pytest.Config) -> Settings:
    return config.stash[SETTINGS]


def committed_fragility(config: pytest.Config) -> Fragility:
    """The sweep's committed table as it is, of whichever experiment it measured."""
    if FRAGILITY not in config.stash:
        config.stash[FRAGILITY] = load_fragility(settings(config).places.fragility_json)
    return config.stash[FRAGILITY]


def stale_claims(config: pytest.Config) -> list[str]:
    """The claims whose evidence in the committed table is of another key than this
    checkout's: their code, or what they compute, changed since the sweep."""
    return committed_fragility(config).stale_claims(settings(config).keys)


def fragility(config: pytest.Config) -> Fragility:
    """The sweep's table, without the stale claims' readings: evidence of another computation
    is no evidence for this one, and those readings are judged without it (found once per
    process: every claim asks)."""
    if FRESH_FRAGILITY not in config.stash:
        table = committed_fragility(config).fresh(settings(config).keys)
        config.stash[FRESH_FRAGILITY] = table
    return config.stash[FRESH_FRAGILITY]


def is_controller(config: pytest.Config) -> bool:
    """The process that writes the session's files: the only one, or xdist's controller."""
    return not hasattr(config, "workerinput")


def pytest_addoption(parser: pytest.Parser) -> None:
    """claimlog's options, grouped by what they decide (`pytest --help` lists each group,
    under the workshop's name), and the ini options a project sets once in
    `[tool.pytest.ini_options]`."""
    workshop = declared()
    name = workshop.name
    writes = parser.getgroup("claimlog-writes", f"{name}: what a run writes, and where")
    writes.addoption(
        "--results-log",
        dest="claimlog_results_log",
        metavar="PATH",
        default=None,
        help="where this run writes the log assembled from its passing claims (default: "
        "the ini option claimlog_results_log, else obtained/results.log; under --snapshot-update, "
        "captures/results.log, the record)",
    )
    writes.addoption(
        "--diagrams",
        dest="claimlog_diagrams",
        metavar="DIR",
        default=None,
        help="where the claims draw the workshop's figures (default: the ini option "
        "claimlog_diagrams, else obtained/diagrams/; under --snapshot-update, diagrams/, the "
        "record)",
    )
    writes.addoption(
        "--no-figures",
        dest="claimlog_no_figures",
        action="store_true",
        help="check what each figure plots but draw no PNG (what the sweep's jobs run: their "
        "evidence reads numbers and outcomes, never a picture)",
    )
    writes.addoption(
        "--claims-report",
        dest="claimlog_claims_report",
        metavar="PATH",
        default=None,
        help="write a Markdown report of every claim: its sentence, its readings here and in "
        "the snapshot, what the platforms print and how general it is over seeds; with "
        "--workshop, what the text cites and the numbers that cite no line",
    )
    writes.addoption(
        "--record",
        dest="claimlog_record",
        metavar="PATH",
        default=None,
        help="write the session's record as JSON: every claim's outcome, every reading by "
        "name, every stored table (for the sweep, the benchmark and tools)",
    )
    text = parser.getgroup("claimlog-text", f"{name}: the workshop's text")
    text.addoption(
        "--workshop",
        dest="claimlog_workshop",
        metavar="DIR",
        default=None,
        help="also check every citation of the log in the workshop's text under DIR (default: "
        "the ini option claimlog_workshop): Markdown and MyST (.md), Quarto (.qmd) and Jupyter "
        "notebooks (.ipynb), one test per citation, run in one process after the claims; "
        "with --snapshot-update, rewrite each quote whose number moved",
    )
    compared = parser.getgroup("claimlog-compared", f"{name}: how the numbers are compared")
    compared.addoption(
        "--strict-numbers",
        dest="claimlog_strict_numbers",
        action="store_true",
        help="fail on any number that differs from its snapshot at full precision, fragile "
        "or not (for the reference machine)",
    )
    compared.addoption(
        "--recompute",
        dest="claimlog_recompute",
        action="store_true",
        help="train every network again instead of reusing the runs kept in pytest's cache "
        "(--strict-numbers implies it)",
    )
    computes = parser.getgroup("claimlog-computes", f"{name}: where the numbers are computed")
    computes.addoption(
        "--torch-threads",
        dest="claimlog_torch_threads",
        type=int,
        default=1,
        metavar="N",
        help="torch intra-op threads in every process that computes (default 1; the "
        "reference numbers need 1: another count is another platform, for the sweep)",
    )
    computes.addoption(
        "--native-kernels",
        dest="claimlog_native_kernels",
        action="store_true",
        help="compute with the kernels this machine picks (its widest ATen vectors, MKL's own "
        "code path for this CPU) instead of the reference kernels, as the workshop script "
        "does when run as it is; what moves is then drift, unless the evidence holds this "
        "platform",
    )
    if workshop.seeds:
        seeds = parser.getgroup(
            "claimlog-seeds",
            f"{name}: other seeds (another experiment than the workshop's; the sweep's)",
        )
    for axis, (one, _, _) in workshop.seeds.items():
        seeds.addoption(
            f"--{axis}-seed",
            dest=f"claimlog_{axis}_seed",
            type=int,
            default=None,
            metavar="K",
            help=f"the {one} of seed K alone (default: the workshop's seed); the log and "
            "figures go to pytest's cache folder, never to the record",
        )
    for option, what in INI_OPTIONS.items():
        parser.addini(option, f"{name}: {what}", default="")


# Settings a project fixes once, in [tool.pytest.ini_options]; paths relative to the rootdir.
INI_OPTIONS = {
    "claimlog_workshop": "the workshop's text, checked on every run (as --workshop DIR)",
    "claimlog_results_log": "where a normal run writes its log (as --results-log PATH)",
    "claimlog_diagrams": "where a normal run draws its figures (as --diagrams DIR)",
    "claimlog_obtained": "the git-ignored folder of what a normal run computed, and of an "
    "update's journal and lock (default: obtained)",
}


def seeds_given(config: pytest.Config) -> dict[str, int | None]:
    """The seed of each axis the workshop declares, as the options give it (None: its own)."""
    return {axis: config.getoption(f"claimlog_{axis}_seed") for axis in declared().seed_axes()}


def _workshop(config: pytest.Config) -> Path | None:
    """The workshop's text this session checks: --workshop DIR; or the ini option's folder,
    in a session that runs every claim (`pytest tests/` and `-k eval_bug` leave it alone: a
    narrowed run verifies too few lines for the whole text)."""
    given = config.getoption("claimlog_workshop")
    folder = _setting(config, "claimlog_workshop")
    if folder is None or (not given and (narrowed(config) or not runs_claims(config))):
        return None
    if not folder.is_dir():
        where = "--workshop" if given else "the ini option claimlog_workshop:"
        raise pytest.UsageError(f"{where} {folder}: no such folder")
    return folder


def _setting(config: pytest.Config, option: str) -> Path | None:
    """A path option: from the command line, else from the ini file (relative to the
    rootdir), else None."""
    given = config.getoption(option)
    if given:
        return Path(given)
    ini = str(config.getini(option) or "")
    return config.rootpath / ini if ini else None


def _path(option: str | None) -> Path | None:
    return Path(option) if option else None


SEEDS = "seeds"  # `<name>-seeds` under pytest's cache folder: another experiment's log, figures


def _outputs(config: pytest.Config, places: Places, update: bool) -> tuple[Path, Path]:
    """(results.log, the figures' folder) of this session, where the options do not say.
    Only a --snapshot-update writes the committed captures/ and diagrams/ (`claimlog.transaction`
    makes it all or nothing); a normal run writes what it computed to the git-ignored
    obtained/ folder, whatever the platform and whatever passed, and says what differs;
    another experiment's (a seed option: --sampler-seed) go to pytest's cache folder."""
    results_log = _path(config.getoption("claimlog_results_log"))
    diagrams = _path(config.getoption("claimlog_diagrams"))
    variant = seed_variant_name(seeds_given(config))
    if variant is None and update:
        return results_log or places.results_log, diagrams or places.diagrams
    # Where a normal run writes, as the project fixed it (an update writes the record).
    results_log = results_log or _setting(config, "claimlog_results_log")
    diagrams = diagrams or _setting(config, "claimlog_diagrams")
    if variant is None:
        return results_log or places.obtained_results_log, diagrams or places.obtained_diagrams
    committed = {places.results_log.resolve(), places.diagrams.resolve()}
    for option, given in (("--results-log", results_log), ("--diagrams", diagrams)):
        if given is not None and given.resolve() in committed:
            raise pytest.UsageError(
                f"{option} {given}: a session with other seeds is another experiment, and "
                "never writes the workshop's committed log or figures; give another path"
            )
    if results_log is None or diagrams is None:
        try:
            cache = config.getini("cache_dir")
        except ValueError:  # -p no:cacheprovider: pytest's default place all the same
            cache = ".pytest_cache"
        elsewhere = config.rootpath / cache / "d" / f"{declared().name}-{SEEDS}" / variant
        results_log = results_log or elsewhere / "results.log"
        diagrams = diagrams or elsewhere / "diagrams"
    return results_log, diagrams


UPDATE = pytest.StashKey[Update]()  # the update's transaction, on the controller
RECOVERED = pytest.StashKey[str]()  # what this session found and put back, said in its header


def _locked(places: Places) -> Update:
    """The checkout's update transaction, its lock taken (refused while an update runs)."""
    transaction = Update(places)
    try:
        transaction.acquire()
    except Busy as busy:
        raise pytest.UsageError(str(busy)) from None
    return transaction


def _recover(config: pytest.Config, places: Places) -> None:
    """Put back what an interrupted update left half written, and say so in the header."""
    transaction = _locked(places)
    try:
        recovered = transaction.recover()
    finally:
        transaction.release()
    if recovered:
        config.stash[RECOVERED] = recovered


def _begin_update(config: pytest.Config, places: Places, workshop: Path | None) -> None:
    """An update holds the lock for its whole session, and keeps the copy of the record (and
    of the workshop's text it may rewrite) that undoes it if it never completes
    (`claimlog.plugin.session` commits it, or rolls it back)."""
    transaction = _locked(places)
    transaction.begin(text_files(workshop) if workshop is not None else ())
    config.stash[UPDATE] = transaction


def end_update(config: pytest.Config, completed: bool) -> str | None:
    """Commit the session's update (`completed`) or roll it back; say what happened to an
    update that did not complete. Nothing to do outside an update, or a second time."""
    transaction = config.stash.get(UPDATE, None)
    if transaction is None:
        return None
    del config.stash[UPDATE]
    try:
        if completed:
            transaction.commit()
            return None
        transaction.rollback()
        return (
            "the update did not complete: nothing of it was kept, the record (captures/, "
            "diagrams/, snapshots/) is as committed"
        )
    finally:
        transaction.release()


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Before the first test: where this run stands (the platform it computes on, and what
    its numbers are compared with), whether the evidence is fresh, whether the run is
    narrowed; and what the session found before it began (an update interrupted, undone)."""
    recovered = config.stash.get(RECOVERED, None)
    lines = [recovered] if recovered else []
    if SETTINGS in config.stash and runs_claims(config):
        lines.append(header_line(config))
    return lines


def header_line(config: pytest.Config) -> str:
    """ "bnvg: the reference platform (...); the evidence is fresh; a full run (...)"."""
    workshop = declared()
    s = settings(config)
    seeds = seed_variant_name(s.seeds)
    found = standing(config)
    here = process_platform(config)
    if s.update:
        where = f"an update on {here.describe()}: the snapshots will hold its numbers"
    elif found.kind == REFERENCE:
        where = (
            f"the reference platform ({here.describe()}): every number compared with the "
            "snapshots, bit for bit"
        )
    elif found.kind == HELD:
        where = (
            f"a platform the evidence holds ({here.id}): every number compared with its own "
            "fragment, bit for bit"
        )
    else:
        where = (
            f"a platform new to the evidence ({here.describe()}; {apart(config)}): the claims' "
            "sentences decide, and a number that moved is drift while the evidence says the "
            "code is the record's"
        )
    if seeds is not None:
        where += f"; at {seeds}, another experiment than the workshop's"
    stale = stale_claims(config)
    if stale:
        n = len(committed_fragility(config).stale_readings(settings(config).keys))
        evidence = (
            f"the evidence of {len(stale)} claim{'s' if len(stale) != 1 else ''} ({n} "
            f"readings) is stale: {workshop.sweep_command} computes only them"
        )
    elif committed_fragility(config) is EMPTY:
        evidence = f"no evidence yet ({workshop.sweep_command})"
    else:
        evidence = "the evidence is fresh"
    run = (
        "a narrowed run (its log never replaces a complete one)"
        if narrowed(config)
        else "a full run"
    )
    return f"{workshop.name}: {where}; {evidence}; {run}"


def _refuse_unwritable(s: Settings) -> None:
    """Every file the session will write must be writable, said before any claim runs (not
    in a traceback after they all did)."""
    folders = {
        "--results-log": s.results_log.parent,
        "--diagrams": s.diagrams,
        **({"--claims-report": s.claims_report.parent} if s.claims_report else {}),
        **({"--record": s.record.parent} if s.record else {}),
    }
    for option, folder in folders.items():
        try:
            if folder.is_relative_to(s.places.obtained):
                s.places.make_obtained()
            folder.mkdir(parents=True, exist_ok=True)
            writable = os.access(folder, os.W_OK)
        except OSError as error:
            raise pytest.UsageError(f"{option}: cannot write into {folder} ({error})") from None
        if not writable:
            raise pytest.UsageError(f"{option}: cannot write into {folder} (permission denied)")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"log_lines(*keys): the results.log lines this claim owns (see {log().home})",
    )
    config.addinivalue_line(
        "markers",
        "evidence: the claim reads the sweep's own tables, so the sweep does not judge it per seed",
    )
    config.addinivalue_line(
        "markers",
        "runs(*names): the trained runs this claim reads (the workshop's Declaration.training)",
    )
    config.stash[EVENTS] = []
    threads = config.getoption("claimlog_torch_threads")
    if threads < 1:
        raise pytest.UsageError(f"--torch-threads must be at least 1, got {threads}")
    workshop = _workshop(config)
    if workshop is not None and str(workshop) not in config.args:
        config.args.append(str(workshop))  # so its documents are collected
    # One command updates both snapshot libraries; pytest-regressions' own flags would update
    # the numbers without the text that quotes them.
    for flag, dest in (("--force-regen", "force_regen"), ("--regen-all", "regen_all")):
        if getattr(config.option, dest, False):
            raise pytest.UsageError(
                f"{flag} would update the stored numbers but not the text that quotes them: "
                f"use `{UPDATE_COMMAND}`, which updates both"
            )
    # Before anything imports torch: ATen, MKL and oneDNN read their variables as they start.
    native = bool(config.getoption("claimlog_native_kernels"))
    before = {name: os.environ.get(name) for name in platform.VARIABLES}
    origins = platform.apply(native=native)
    changed = [name for name, value in before.items() if os.environ.get(name) != value]
    if "torch" in sys.modules and changed:
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"torch was imported before claimlog could set {', '.join(changed)}: set them in "
                "the environment yourself, or the numbers may be this machine's own"
            ),
            stacklevel=2,
        )
    update = bool(getattr(config.option, "update_snapshots", False))
    config.option.regen_all = update
    root = config.rootpath
    places = Places(root, str(config.getini("claimlog_obtained") or "obtained"))
    seeded = [f"--{axis}-seed" for axis, seed in seeds_given(config).items() if seed is not None]
    if update and seeded and (root / ".git").exists():
        raise pytest.UsageError(
            f"--snapshot-update with {' and '.join(seeded)} would store another experiment's "
            "numbers as the workshop's: seed variants belong to the sweep, which runs them in "
            f"scratch copies ({declared().sweep_command})"
        )
    if is_controller(config) and not config.option.help:
        # Before anything reads the record: an update killed part way is undone first.
        _recover(config, places)
    results_log, diagrams = _outputs(config, places, update)
    config.stash[SETTINGS] = Settings(
        places=places,
        results_log=results_log,
        diagrams=diagrams,
        strict=bool(config.getoption("claimlog_strict_numbers")),
        update=update,
        recompute=bool(
            config.getoption("claimlog_recompute") or config.getoption("claimlog_strict_numbers")
        ),
        torch_threads=threads,
        native_kernels=native,
        kernels=origins,
        seeds=seeds_given(config),
        keys=_evidence_keys(config, places),
        workshop_text=workshop,
        claims_report=_path(config.getoption("claimlog_claims_report")),
        record=_path(config.getoption("claimlog_record")),
        figures=not config.getoption("claimlog_no_figures"),
    )
    if is_controller(config):
        _refuse_unwritable(config.stash[SETTINGS])
        if not config.option.help:  # `pytest --help` configures too, and must still answer
            _refuse_unknown_reference(config.stash[SETTINGS])
            if update:
                _begin_update(config, places, workshop)
    # One intra-op thread in every process that computes: the thread count changes the
    # training-end numbers. torch is told it when it is imported (`platform.import_torch`),
    # so a session that computes nothing never imports it.
    platform.use_threads(threads)


# -- which claims run, and where ------------------------------------------------------------
def is_citation(item: pytest.Item) -> bool:
    return not isinstance(item, pytest.Function)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=is_citation)
    valid = set(claimed_keys())
    owner: dict[str, str] = {}
    for item in items:
        for key in owned_keys(item):
            if key not in valid:
                raise pytest.UsageError(
                    f"{item.nodeid} owns log line {key!r}, which results.log does not have; "
                    f"valid names are listed by {log().home}"
                )
            if key in owner:
                first, second = sorted([owner[key], item.nodeid])
                raise pytest.UsageError(f"log line {key!r} is owned by both {first} and {second}")
            owner[key] = item.nodeid


def pytest_runtest_setup(item: pytest.Item) -> None:
    keys = owned_keys(item)
    if keys:
        channel(item).append((OWNS, keys))
    if not is_citation(item):
        sentence = sentence_of(item)
        channel(item).append((SENTENCE, sentence))
        item.user_properties.append(("sentence", sentence))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Each report carries, as `report.claimlog`, what the claim put on its channel since the
    previous phase's report: every payload crosses to the controller once."""
    report = yield
    sent = item.stash.get(SENT, 0)
    payloads = channel(item)
    report.claimlog = payloads[sent:]  # type: ignore[attr-defined]
    item.stash[SENT] = len(payloads)
    return report


def narrowed(config: pytest.Config) -> bool:
    """Whether the command line selects some claims rather than all: -k, -m, --deselect, a
    test file or a node id (a folder such as `claims/` selects all of it)."""
    return bool(
        config.option.keyword
        or config.option.markexpr
        or getattr(config.option, "deselect", None)
        or getattr(config.option, "lf", False)
        or any("::" in arg or Path(arg).is_file() for arg in config.args)
    )


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` runs a full suite on every core, but a narrowed selection of claims in this
    one process: `-k`, `-m`, a test file or a node id needs a few claims, and starting
    workers (each importing torch) would cost more than it saves. A selection of the
    project's own tests (`pytest tests/ -m "not slow"`) still uses every core.
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    # Citations read the whole log, so --workshop runs in one process too; and when pytest's
    # cache holds every trained run, the claims leave nothing worth a second process (other
    # tests beside them, such as the project's own, still use every core).
    if _workshop(config) is not None:
        return 0
    if narrowed(config) and runs_claims(config):
        return 0
    if only_claims(config) and every_run_kept(config):
        return 0
    return None


RUNS_CACHE = "runs"  # a workshop's trained runs, in pytest's cache: "<name>-runs"


def every_run_kept(config: pytest.Config) -> bool:
    """Whether pytest's cache holds every run the workshop trains (`Declaration.training`)
    for this code, recipe and platform, as far as can be told without importing torch (the
    session itself checks each whole entry). A workshop that trains nothing: no."""
    workshop = declared()
    if workshop.training is None or workshop.recipe is None:
        return False
    if config.getoption("claimlog_recompute") or config.getoption("claimlog_strict_numbers"):
        return False
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return False
    kept = Store(_pytest_cache(config) / TORCH_FACTS_FOLDER)
    facts = platform.kept_torch_facts(kept)
    if facts is None:
        return False  # no session on this platform asked torch yet: none trained here either
    threads = config.getoption("claimlog_torch_threads")
    kernels = platform.reference_kernels(Places(config.rootpath).environment)
    bits = platform.kept_kernel_bits(kernels, threads, kept)
    if bits is None:
        return False  # nor the workshop's kernels: nothing was trained on this platform yet
    where = Platform.here(threads, facts, fingerprint(bits)).cache_fields()
    training = workshop.training()
    runs = TrainedRuns(
        training,
        workshop.recipe(seeds_given(config)),
        where=lambda: where,
        store=_kept_before_the_cache_plugin(config, RUNS_CACHE),
    )
    return runs.kept_names() == set(training.names())


def _pytest_cache(config: pytest.Config) -> Path:
    """Where pytest's Cache.mkdir(...) puts its folders, known before the cache plugin is
    configured (pytest_xdist_auto_num_workers and this plugin's pytest_configure run first)."""
    return config.rootpath / str(config.getini("cache_dir")) / "d"


def cache_folder(what: str) -> str:
    """The name of the workshop's folder of `what` in pytest's cache: "bnvg-runs"."""
    return f"{declared().name}-{what}"


def kept_in_pytest_cache(config: pytest.Config, what: str) -> Store | None:
    """The workshop's store of `what` in pytest's cache (`cache_folder`), made by pytest's
    cache plugin; None under `-p no:cacheprovider`."""
    cache = getattr(config, "cache", None)
    return Store(cache.mkdir(cache_folder(what))) if cache is not None else None


def _kept_before_the_cache_plugin(config: pytest.Config, what: str) -> Store | None:
    """`kept_in_pytest_cache`, before the cache plugin is configured: only where pytest has
    made its cache folder already (with its .gitignore)."""
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return None
    folder = _pytest_cache(config)
    if not folder.parent.is_dir():
        return None
    return Store(folder / cache_folder(what))


CLAIM_KEYS_CACHE = "claim-keys"  # each claim's evidence key, in pytest's cache


def _evidence_keys(config: pytest.Config, places: Places) -> dict[str, str]:
    """Each claim's evidence key, found in pytest's cache where an earlier session (or
    process of this one) kept them: slicing the code costs half a second a process."""
    try:
        return claim_keys(places, kept=_kept_before_the_cache_plugin(config, CLAIM_KEYS_CACHE))
    except OSError:  # a cache this process cannot write: slice, as without one
        return claim_keys(places)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Keep the claims' keys for the next session, now that pytest's cache plugin has made
    its folder (the first session of a checkout sliced them before it existed)."""
    config = session.config
    if SETTINGS not in config.stash:
        return
    try:
        store = kept_in_pytest_cache(config, CLAIM_KEYS_CACHE)
        if store is not None:
            claim_keys(settings(config).places, kept=store)  # sliced in this process already
    except OSError:
        pass  # an unwritable cache: the next session slices again


def only_claims(config: pytest.Config) -> bool:
    """Whether every path on the command line lies in the claims folder (bare `pytest` runs
    the testpaths, which are the claims)."""
    claims = (config.rootpath / "claims").resolve()
    paths = [Path(arg.split("::")[0]) for arg in config.args]
    return all((config.invocation_params.dir / p).resolve().is_relative_to(claims) for p in paths)


def runs_claims(config: pytest.Config) -> bool:
    """Whether the command line runs any claim: the claims folder, a file or a node id in it,
    or a folder holding it (bare `pytest` runs the testpaths, which are the claims)."""
    claims = (config.rootpath / "claims").resolve()
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == claims or claims in path.parents or path in claims.parents:
            return True
    return False


# -- the platform, and where it stands with the evidence ------------------------------------
FACTS = pytest.StashKey[dict[str, str]]()
PLATFORM = pytest.StashKey[Platform]()
STANDING = pytest.StashKey[Standing]()


def platform_store(config: pytest.Config) -> Store | None:
    """Where pytest's cache keeps what this machine's platform is (torch's facts, the bits of
    the workshop's kernels): None under `-p no:cacheprovider`."""
    pytest_cache = getattr(config, "cache", None)
    return Store(pytest_cache.mkdir(TORCH_FACTS_FOLDER)) if pytest_cache is not None else None


def process_facts(config: pytest.Config) -> dict[str, str]:
    """torch's facts of this process's platform, found once per process."""
    if FACTS not in config.stash:
        config.stash[FACTS] = torch_facts(platform_store(config))
    return config.stash[FACTS]


KERNEL_BITS = pytest.StashKey[dict[str, str]]()


def process_kernel_bits(config: pytest.Config) -> dict[str, str]:
    """What the workshop's kernels, as the reference identity names them, give in this
    process (`claimlog.platform.kernel_bits`): found once per process, kept in pytest's cache
    across sessions; empty where the record names no kernels."""
    if KERNEL_BITS not in config.stash:
        s = settings(config)
        kernels = platform.reference_kernels(s.places.environment)
        store = platform_store(config)
        config.stash[KERNEL_BITS] = platform.kernel_bits(kernels, s.torch_threads, store)
    return config.stash[KERNEL_BITS]


def process_platform(config: pytest.Config) -> Platform:
    """The platform this process computes on, its fingerprint included."""
    if PLATFORM not in config.stash:
        threads = settings(config).torch_threads
        bits = fingerprint(process_kernel_bits(config))
        config.stash[PLATFORM] = Platform.here(threads, process_facts(config), bits)
    return config.stash[PLATFORM]


# The workshop's kernels this process saw its computations call, under an update that records
# the reference (`records_kernels`); an xdist worker ships its own to the controller.
RECORDED_KERNELS = pytest.StashKey[dict[str, tuple[str, ...]]]()  # by computation
# Its computations refused as not deterministic: the update then records nothing at all.
REFUSED = pytest.StashKey[list[str]]()


def records_kernels(config: pytest.Config) -> bool:
    """Whether this session may record the reference, and so its kernels: a full update at
    the workshop's own seeds (a narrowed one, a sweep's job among them, never writes the
    reference identity)."""
    s = settings(config)
    return s.update and not narrowed(config) and seed_variant_name(s.seeds) is None


def note_kernels(config: pytest.Config, name: str, compute: Callable[[], object]) -> None:
    """Under an update that records the reference: the kernels of the computation `name`,
    started twice (`claimlog.kernels.record`); a computation that gives other bits the
    second time fails the claim in one line, before anything is recorded."""
    __tracebackhide__ = True
    recorded = config.stash.setdefault(RECORDED_KERNELS, {})
    if name in recorded or not records_kernels(config):
        return
    platform.import_torch()
    try:
        found = record(name, compute)
    except NotDeterministic as refused:
        config.stash.setdefault(REFUSED, []).append(str(refused))
        pytest.fail(str(refused), pytrace=False)
    recorded[name] = tuple(found)


def recorded_kernels(config: pytest.Config) -> set[str]:
    """Every kernel this process (and, on the controller, every worker) recorded."""
    return {k for kernels in config.stash.get(RECORDED_KERNELS, {}).values() for k in kernels}


def apart(config: pytest.Config) -> str:
    """What sets this platform apart from the reference, for people: the names that differ
    ("torch 2.14.1+cpu, not 2.13.0+cpu"), then the workshop's kernels whose bits differ
    ("2 of its 74 kernels give other bits here than on the reference: aten.addmm.default on
    float32 [300, 32], float32 [32, 32], ...")."""
    s = settings(config)
    reference = reference_identity(s)
    if reference is None:
        return "no reference is recorded"
    here = process_platform(config)
    ours, theirs = here.identity(), reference.identity()
    said = [
        f"{name} {ours.get(name, 'not named')}, not {theirs.get(name, 'not named')}"
        for name in dict.fromkeys([*theirs, *ours])
        if name != "fingerprint" and ours.get(name) != theirs.get(name)
    ]
    kernels = platform.reference_kernels(s.places.environment)
    bits = process_kernel_bits(config)
    moved = differing(bits, kernels)
    if moved:
        shown = "; ".join(moved[:2]) + (f"; and {len(moved) - 2} more" if len(moved) > 2 else "")
        give = "gives" if len(moved) == 1 else "give"
        named = sorted({family(k) or "" for k in kernels if bits.get(k) != kernels[k]} - {""})
        what = f" ({' and '.join(named)} among them)" if named else ""
        said.append(
            f"{len(moved)} of its {len(kernels)} kernels {give} other bits here than on the "
            f"reference{what}: {shown}"
        )
    return ", ".join(said) or "the same names and bits as the reference"


# What `Platform.identity()` always writes: a file that lacks one of them names no platform,
# however well-formed its JSON (Platform.from_json would fill the gaps with "?").
IDENTITY_KEYS = ("machine", "torch", "numpy", "numpy simd", "aten", "mkl", "onednn", "threads")


class UnreadableReference(Exception):
    """`snapshots/environment.json` is missing or damaged; the message names the file and
    says which."""


def read_reference(places: Places) -> Platform:
    """The reference, as `snapshots/environment.json` records its identity, or
    UnreadableReference saying what is wrong with the file."""
    path = places.environment
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UnreadableReference(f"{path} is missing") from None
    except (OSError, ValueError) as error:  # unreadable, not UTF-8, or not JSON
        raise UnreadableReference(f"{path} is damaged ({error})") from None
    if not isinstance(data, dict):
        raise UnreadableReference(f"{path} is damaged (it holds no JSON object)")
    lacking = [key for key in IDENTITY_KEYS if key not in data]
    if lacking:
        raise UnreadableReference(f"{path} is damaged (it lacks {', '.join(lacking)})")
    try:
        return Platform.from_json(data)
    except ValueError as error:  # a thread count that is not a number
        raise UnreadableReference(f"{path} is damaged ({error})") from None


def reference_identity(s: Settings) -> Platform | None:
    """The reference, as `snapshots/environment.json` records its identity (None if it
    cannot be read: only a session that updates the snapshots runs without it)."""
    try:
        return read_reference(s.places)
    except UnreadableReference:
        return None


def holds_snapshots(places: Places) -> bool:
    """Whether the project has recorded any snapshot, a claim's text or numbers: only then
    does the reference identity describe anything."""
    folders = (places.text_snapshots, places.numbers)
    return any(path.is_file() for folder in folders for path in folder.rglob("*"))


def _refuse_unknown_reference(s: Settings) -> None:
    """Without the reference identity no platform stands as the reference: this one would
    be compared with a fragment of the evidence, or judged as new (drift allowed), never
    with the snapshots bit for bit, and the run would pass having checked less than it
    says. So a missing or damaged `snapshots/environment.json` stops the session before any
    claim runs. `--snapshot-update` writes the file, and a project that has recorded no
    snapshot yet has nothing for it to describe (each claim fails for want of its own)."""
    if s.update:
        return
    if not s.places.environment.exists() and not holds_snapshots(s.places):
        return
    try:
        read_reference(s.places)
    except UnreadableReference as problem:
        raise pytest.UsageError(
            f"{problem}: it names the reference platform, whose numbers the snapshots hold, "
            "and without it no number is compared with them bit for bit. Restore it from git, "
            f"or write it with `{UPDATE_COMMAND}` (which makes this machine's numbers the "
            "reference)"
        ) from None


def find(here: Platform, s: Settings) -> Standing:
    """The standing of the platform `here` for a session with settings `s`."""
    recorded = reference_identity(s)
    reference = recorded.id if recorded else ""
    variant = seed_variant_name(s.seeds)
    if variant is None and here.id == reference:
        return Standing(REFERENCE, here.id, reference, s.strict)
    fragment = FragmentStore(s.places.fragments, s.keys).at_seeds(here.id, variant)
    if fragment is None:
        return Standing(NEW, here.id, reference, s.strict)
    return Standing(
        HELD,
        here.id,
        reference,
        s.strict,
        readings={name: r.as_float() for name, r in fragment.readings.items()},
        tables=fragment.tables,
    )


def standing(config: pytest.Config) -> Standing:
    """This process's standing (found once per process)."""
    if STANDING not in config.stash:
        config.stash[STANDING] = find(process_platform(config), settings(config))
    return config.stash[STANDING]


# -- the channel: what a claim's report carries to the controller ---------------------------
CHANNEL = pytest.StashKey[list[tuple[str, Any]]]()
SENT = pytest.StashKey[int]()  # how many of the item's payloads earlier reports carried


def channel(item: pytest.Item) -> list[tuple[str, Any]]:
    """The payloads a claim (or a citation) sends to the controller with its reports."""
    if CHANNEL not in item.stash:
        item.stash[CHANNEL] = []
    return item.stash[CHANNEL]


def payloads(report: pytest.TestReport) -> list[tuple[str, Any]]:
    """What one report carries on the channel (nothing for a report of another plugin's
    test, or one made without claimlog's hook)."""
    return list(getattr(report, "claimlog", None) or ())


def send_line(item: pytest.Item, line: LogLine) -> None:
    """One verified log line: to the controller on the channel, and, as the text it prints,
    to whoever reads the test reports (JUnit XML's properties, `log line 40`)."""
    channel(item).append((LINE, line.to_json()))
    item.user_properties.append((f"log line {line_number(line.key)}", line.text.strip()))


# payload names
OWNS = "claimlog owns"  # the log line keys a claim owns (set at setup)
SENTENCE = "claimlog sentence"  # what the claim verifies: its docstring's first paragraph
LINE = "claimlog line"  # one verified log line (LogLine as JSON)
BOUNDED = "claimlog bounded"  # readings of lines another claim owns, bounded by this one
READINGS = "claimlog readings"  # readings computed, verified or not (for the record)
STORED = "claimlog stored"  # the stored values of a claim's readings, by name
TABLE = "claimlog table"  # a stored table this claim checked (Table as JSON)
NUMBERS_FILE = "claimlog numbers file"  # a numbers snapshot file the claim read or wrote
DRIFT = "claimlog drift"  # one drifted number, described for people
TITLE = "claimlog title"  # what a figure's title states, and which parts hold only sometimes
MOVED = "claimlog moved"  # readings printed otherwise than their snapshot (Moved as JSON)
NOTE = "claimlog note"  # how a cited lesson holds over other seeds (a citation's, never a failure)
CITED = "claimlog cited"  # the log lines a citation names
CITATION = "claimlog citation"  # set by a citation of the workshop's text, not a claim
REWRITE = "claimlog rewrite"  # under an update: a quote of the text rewritten (Rewrite as JSON)
# Under an update: a quote not rewritten, and why: on purpose, or no longer true (Left as JSON).
LEFT = "claimlog left"


def owned_keys(item: pytest.Item) -> tuple[str, ...]:
    return tuple(key for mark in item.iter_markers("log_lines") for key in mark.args)


def sentence_of(item: pytest.Item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


# -- what each process did with the results kept in pytest's cache --------------------------
# One list of `Event`s (a run, a computed result or a figure: computed, reused or found
# damaged); an xdist worker ships its list to the controller (`claimlog.plugin.session`).
EVENTS = pytest.StashKey[list[Event]]()
SESSION_ID = pytest.StashKey[str]()


def session_id(config: pytest.Config) -> str:
    """This session's name, shared by its xdist workers: what a `Memo` writes into the
    entries it keeps, so that --recompute computes each result once per session."""
    if SESSION_ID not in config.stash:
        worker = getattr(config, "workerinput", None)
        config.stash[SESSION_ID] = str(worker["testrunuid"]) if worker else uuid.uuid4().hex
    return config.stash[SESSION_ID]
