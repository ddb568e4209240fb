"""The plugin's command-line options, and the settings they make for one session.

Everything the other parts of the plugin need to know about the command line is read here
once, into `Settings` (kept in `config.stash`): where the log, the figures and the snapshots
go, whether numbers are strict, whether snapshots are being updated.

It also sets the reference kernels (`bnvg.experiment.platform`) and one torch intra-op thread
(--torch-threads) in every process that computes, before torch is imported: the kernels and
the thread count change training results, and the log must not depend on the machine.
`--native-kernels` leaves the machine its own kernels. xdist workers and the sessions the
sweep starts inherit the settings through the environment.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from bnvg.evidence.fingerprint import experiment_fingerprint
from bnvg.evidence.fragility import EMPTY, Fragility
from bnvg.evidence.fragility import load as load_fragility
from bnvg.evidence.fragments import seed_variant_name
from bnvg.experiment import platform
from bnvg.places import Places

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
    sampler_seed: int | None
    init_seed: int | None
    experiment: str  # the fingerprint of this checkout's experiment (`bnvg.evidence.fingerprint`)
    workshop_text: Path | None  # --workshop DIR: the Markdown whose citations are checked
    claims_report: Path | None
    record: Path | None


SETTINGS = pytest.StashKey[Settings]()
FRAGILITY = pytest.StashKey[Fragility]()


def settings(config: pytest.Config) -> Settings:
    return config.stash[SETTINGS]


def committed_fragility(config: pytest.Config) -> Fragility:
    """The sweep's committed table as it is, of whichever experiment it measured."""
    if FRAGILITY not in config.stash:
        config.stash[FRAGILITY] = load_fragility(settings(config).places.fragility_json)
    return config.stash[FRAGILITY]


def evidence_is_stale(config: pytest.Config) -> bool:
    """Whether the committed table measured another experiment than this checkout's."""
    table = committed_fragility(config)
    return table is not EMPTY and table.experiment != settings(config).experiment


def fragility(config: pytest.Config) -> Fragility:
    """The sweep's table, if it measured this experiment; else none: evidence of another
    experiment is no evidence for this one, and every reading is judged without it."""
    return EMPTY if evidence_is_stale(config) else committed_fragility(config)


def is_controller(config: pytest.Config) -> bool:
    """The process that writes the session's files: the only one, or xdist's controller."""
    return not hasattr(config, "workerinput")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bnvg", "bnvg: the executable workshop")
    group.addoption(
        "--results-log",
        dest="bnvg_results_log",
        metavar="PATH",
        default=None,
        help="where to write the log assembled from the passing claims "
        "(default: captures/results.log under the rootdir)",
    )
    group.addoption(
        "--diagrams",
        dest="bnvg_diagrams",
        metavar="DIR",
        default=None,
        help="where the claims draw the workshop's figures (default: diagrams/ under the rootdir)",
    )
    group.addoption(
        "--workshop",
        dest="bnvg_workshop",
        metavar="DIR",
        default=None,
        help="also check every citation of the log in the Markdown files under DIR "
        "(one test per citation; runs in one process, after the claims)",
    )
    group.addoption(
        "--claims-report",
        dest="bnvg_claims_report",
        metavar="PATH",
        default=None,
        help="write a Markdown report of every claim: its sentence, its readings here and in "
        "the snapshot, robust or fragile, and its status",
    )
    group.addoption(
        "--record",
        dest="bnvg_record",
        metavar="PATH",
        default=None,
        help="write the session's record as JSON: every claim's outcome, every reading by "
        "name, every stored table (for the sweep, the benchmark and tools)",
    )
    group.addoption(
        "--strict-numbers",
        dest="bnvg_strict_numbers",
        action="store_true",
        help="fail on any number that differs from its snapshot at full precision, fragile "
        "or not (for the reference machine)",
    )
    group.addoption(
        "--recompute",
        dest="bnvg_recompute",
        action="store_true",
        help="train every network again instead of reusing the runs kept in pytest's cache "
        "(--strict-numbers implies it)",
    )
    group.addoption(
        "--torch-threads",
        dest="bnvg_torch_threads",
        type=int,
        default=1,
        metavar="N",
        help="torch intra-op threads in every process that computes (default 1; "
        "the reference numbers need 1: only the sweep sets another)",
    )
    group.addoption(
        "--native-kernels",
        dest="bnvg_native_kernels",
        action="store_true",
        help="compute with the kernels this machine picks (its widest ATen vectors, MKL's own "
        "code path for this CPU) instead of the reference kernels, as the workshop script "
        "does when run as it is; what moves is then drift, unless the evidence holds this "
        "platform",
    )
    group.addoption(
        "--sampler-seed",
        dest="bnvg_sampler_seed",
        type=int,
        default=None,
        metavar="K",
        help="seed of the minibatch sampler alone (default: the workshop's seed; for the sweep)",
    )
    group.addoption(
        "--init-seed",
        dest="bnvg_init_seed",
        type=int,
        default=None,
        metavar="K",
        help="seed of the starting weights alone (default: the workshop's seed; for the sweep)",
    )


def _path(option: str | None) -> Path | None:
    return Path(option) if option else None


SEEDS_FOLDER = "bnvg-seeds"  # under pytest's cache folder: another experiment's log and figures


def _outputs(config: pytest.Config, places: Places) -> tuple[Path, Path]:
    """(results.log, the figures' folder) of this session. The workshop's go to the
    committed captures/ and diagrams/; another experiment's (--sampler-seed, --init-seed)
    never do: they go to pytest's cache folder, or where the options say."""
    results_log = _path(config.getoption("bnvg_results_log"))
    diagrams = _path(config.getoption("bnvg_diagrams"))
    variant = seed_variant_name(
        config.getoption("bnvg_sampler_seed"), config.getoption("bnvg_init_seed")
    )
    if variant is None:
        return results_log or places.results_log, diagrams or places.diagrams
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
        elsewhere = config.rootpath / cache / "d" / SEEDS_FOLDER / variant
        results_log = results_log or elsewhere / "results.log"
        diagrams = diagrams or elsewhere / "diagrams"
    return results_log, diagrams


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
        "log_lines(*keys): the results.log lines this claim owns "
        "(see bnvg.log.layout.claimed_keys())",
    )
    threads = config.getoption("bnvg_torch_threads")
    if threads < 1:
        raise pytest.UsageError(f"--torch-threads must be at least 1, got {threads}")
    workshop = _path(config.getoption("bnvg_workshop"))
    if workshop is not None:
        if not workshop.is_dir():
            raise pytest.UsageError(f"--workshop {workshop}: no such folder")
        if str(workshop) not in config.args:
            config.args.append(str(workshop))  # so its Markdown files are collected
    # One command updates both snapshot libraries; pytest-regressions' own flags would update
    # the numbers without the text that quotes them.
    for flag, dest in (("--force-regen", "force_regen"), ("--regen-all", "regen_all")):
        if getattr(config.option, dest, False):
            raise pytest.UsageError(
                f"{flag} would update the stored numbers but not the text that quotes them: "
                f"use `{UPDATE_COMMAND}`, which updates both"
            )
    # Before anything imports torch: ATen, MKL and oneDNN read their variables as they start.
    native = bool(config.getoption("bnvg_native_kernels"))
    before = {name: os.environ.get(name) for name in platform.VARIABLES}
    origins = platform.apply(native=native)
    changed = [name for name, value in before.items() if os.environ.get(name) != value]
    if "torch" in sys.modules and changed:
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"torch was imported before bnvg could set {', '.join(changed)}: set them in "
                "the environment yourself, or the numbers may be this machine's own"
            ),
            stacklevel=2,
        )
    update = bool(getattr(config.option, "update_snapshots", False))
    config.option.regen_all = update
    root = config.rootpath
    places = Places(root)
    seeded = [
        f"--{name}-seed"
        for name in ("sampler", "init")
        if config.getoption(f"bnvg_{name}_seed") is not None
    ]
    if update and seeded and (root / ".git").exists():
        raise pytest.UsageError(
            f"--snapshot-update with {' and '.join(seeded)} would store another experiment's "
            "numbers as the workshop's: seed variants belong to the sweep, which runs them in "
            "scratch copies (python -m bnvg.sweep)"
        )
    results_log, diagrams = _outputs(config, places)
    config.stash[SETTINGS] = Settings(
        places=places,
        results_log=results_log,
        diagrams=diagrams,
        strict=bool(config.getoption("bnvg_strict_numbers")),
        update=update,
        recompute=bool(
            config.getoption("bnvg_recompute") or config.getoption("bnvg_strict_numbers")
        ),
        torch_threads=threads,
        native_kernels=native,
        kernels=origins,
        sampler_seed=config.getoption("bnvg_sampler_seed"),
        init_seed=config.getoption("bnvg_init_seed"),
        experiment=experiment_fingerprint(places),
        workshop_text=workshop,
        claims_report=_path(config.getoption("bnvg_claims_report")),
        record=_path(config.getoption("bnvg_record")),
    )
    if is_controller(config):
        _refuse_unwritable(config.stash[SETTINGS])
    # One intra-op thread in every process that computes: the thread count changes the
    # training-end numbers. torch reads it when it is imported (`bnvg.experiment.runtime`),
    # so a session that computes nothing never imports it.
    platform.use_threads(threads)
