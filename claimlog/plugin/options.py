"""The options: the command line and the ini file, read once into `Settings`; the markers.

- **Options** are read once (`read_settings`, by the session at configure): where the log, the
  figures and the snapshots go, whether numbers are strict, whether snapshots are being
  updated. The reference kernels (`claimlog.platform`) and one torch intra-op thread
  (--torch-threads) are set in every process that computes, before torch is imported: the
  kernels and the thread count change training results. `--native-kernels` leaves the
  machine its own kernels. xdist workers and the sessions the sweep starts inherit the
  settings through the environment. Another experiment (a seed option: --sampler-seed) writes
  its log and figures into pytest's cache folder, never into captures/ or diagrams/.
- **Markers**: `log_lines` (the lines a claim owns), `runs` (the trained runs it reads),
  `evidence` (it reads the sweep's own tables). A suite in which a log line has an unknown
  name or two owners is refused before anything runs (`check_owners`).
- **What the command line selects**: a narrowed run (`narrowed`: -k, -m, a node id) verifies
  too few lines to replace a complete log, or to check the whole text; `-n auto` (set in
  pyproject.toml) runs it, or a suite whose trained runs pytest's cache already holds, in one
  process (the plugin's `pytest_xdist_auto_num_workers`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from claimlog.declaration import Declaration, seed_variant_name
from claimlog.log.lines import Log
from claimlog.places import Places
from claimlog.store import Store

# -- options and settings -------------------------------------------------------------------
UPDATE_COMMAND = "pytest claims/ --snapshot-update"
# The name the update's plugin object is registered under (`claimlog.plugin.update`): the core
# asks it for the record as it was before the update began, and refuses an update without it.
UPDATE = "claimlog.update.transaction"


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
    seeds: Mapping[str, int | None]  # each seed axis the workshop declares: --<axis>-seed K
    record: Path | None
    figures: bool = True  # False under --no-figures: what a figure plots is checked, not drawn
    alone: bool = False  # --train-alone: no runs trained together (`Declaration.together`)
    # Who chose each kernel variable ("user", "reference", "machine"), as the session set the
    # environment from these settings (`ClaimSession.configure`).
    kernels: Mapping[str, str] = field(default_factory=dict)


def is_controller(config: pytest.Config) -> bool:
    """The process that writes the session's files: the only one, or xdist's controller."""
    return not hasattr(config, "workerinput")


def add_options(parser: pytest.Parser, workshop: Declaration) -> None:
    """claimlog's options, grouped by what they decide (`pytest --help` lists each group,
    under the workshop's name), and the ini options a project sets once in
    `[tool.pytest.ini_options]`."""
    name = workshop.name
    writes = parser.getgroup("claimlog-writes", f"{name}: what a run writes, and where")
    writes.addoption(
        "--results-log",
        dest="claimlog_results_log",
        metavar="PATH",
        help="where this run writes the log assembled from its passing claims (default: "
        "the ini option claimlog_results_log, else obtained/results.log; under --snapshot-update, "
        "captures/results.log, the record)",
    )
    writes.addoption(
        "--diagrams",
        dest="claimlog_diagrams",
        metavar="DIR",
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
        "--record",
        dest="claimlog_record",
        metavar="PATH",
        help="write the session's record as JSON: every claim's outcome, every reading by "
        "name, every stored table (for the sweep, the benchmark and tools)",
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
        "--train-alone",
        dest="claimlog_train_alone",
        action="store_true",
        help="train every network on its own, never several of one shape at once (the "
        "numbers are the same: together is used only where a canary says so; the sweep "
        "checks each batch's first seed against it)",
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
            metavar="K",
            help=f"the {one} of seed K alone (default: the workshop's seed); the log and "
            "figures go to pytest's cache folder, never to the record",
        )
    for option, what in INI_OPTIONS.items():
        parser.addini(option, f"{name}: {what}", default="")


# Settings a project fixes once, in [tool.pytest.ini_options]; paths relative to the rootdir.
INI_OPTIONS = {
    "claimlog_results_log": "where a normal run writes its log (as --results-log PATH)",
    "claimlog_diagrams": "where a normal run draws its figures (as --diagrams DIR)",
    "claimlog_obtained": "the git-ignored folder of what a normal run computed, and of an "
    "update's journal and lock (default: obtained)",
}


def seeds_given(config: pytest.Config, workshop: Declaration) -> dict[str, int | None]:
    """The seed of each axis the workshop declares, as the options give it (None: its own)."""
    return {axis: config.getoption(f"claimlog_{axis}_seed") for axis in workshop.seed_axes()}


def path_setting(config: pytest.Config, option: str) -> Path | None:
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


def _outputs(
    config: pytest.Config,
    places: Places,
    update: bool,
    seeds: Mapping[str, int | None],
    name: str,
) -> tuple[Path, Path]:
    """(results.log, the figures' folder) of this session, where the options do not say.
    Only a --snapshot-update writes the committed captures/ and diagrams/ (`claimlog.transaction`
    makes it all or nothing); a normal run writes what it computed to the git-ignored
    obtained/ folder, whatever the platform and whatever passed, and says what differs;
    another experiment's (a seed option: --sampler-seed) go to pytest's cache folder."""
    results_log = _path(config.getoption("claimlog_results_log"))
    diagrams = _path(config.getoption("claimlog_diagrams"))
    variant = seed_variant_name(seeds)
    if variant is None and update:
        return results_log or places.results_log, diagrams or places.diagrams
    # Where a normal run writes, as the project fixed it (an update writes the record).
    results_log = results_log or path_setting(config, "claimlog_results_log")
    diagrams = diagrams or path_setting(config, "claimlog_diagrams")
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
        # Under -p no:cacheprovider, pytest's default place all the same.
        cache = pytest_cache_folder(config) or config.rootpath / ".pytest_cache" / "d"
        elsewhere = cache / f"{name}-{SEEDS}" / variant
        results_log = results_log or elsewhere / "results.log"
        diagrams = diagrams or elsewhere / "diagrams"
    return results_log, diagrams


def refuse_unwritable(s: Settings) -> None:
    """Every file the session will write must be writable, said before any claim runs (not
    in a traceback after they all did)."""
    folders = {
        "--results-log": s.results_log.parent,
        "--diagrams": s.diagrams,
        **({"--record": s.record.parent} if s.record else {}),
    }
    for option, folder in folders.items():
        refuse_unwritable_folder(option, folder, s.places)


def refuse_unwritable_folder(option: str, folder: Path, places: Places) -> None:
    """A usage error naming `option` unless the session can write into `folder` (a feature's
    file too: the claims report's)."""
    try:
        if folder.is_relative_to(places.obtained):
            places.make_obtained()
        made = [p for p in (folder, *folder.parents) if not p.exists()]
        folder.mkdir(parents=True, exist_ok=True)
        writable = os.access(folder, os.W_OK)
        if not folder.is_relative_to(places.obtained):
            # A folder of the record (captures/, diagrams/) is there only once an update
            # completed: tried, then taken away again.
            for empty in made:
                empty.rmdir()
    except OSError as error:
        raise pytest.UsageError(f"{option}: cannot write into {folder} ({error})") from None
    if not writable:
        raise pytest.UsageError(f"{option}: cannot write into {folder} (permission denied)")


def add_markers(config: pytest.Config, log: Log) -> None:
    for marker in (
        f"log_lines(*keys): the results.log lines this claim owns (see {log.home})",
        "evidence: the claim reads the sweep's own tables, so the sweep does not judge it per seed",
        "runs(*names): the trained runs this claim reads (the workshop's Declaration.training)",
    ):
        config.addinivalue_line("markers", marker)


def places_of(config: pytest.Config) -> Places:
    return Places(config.rootpath, str(config.getini("claimlog_obtained") or "obtained"))


def read_settings(config: pytest.Config, workshop: Declaration) -> Settings:
    """The options, read once into `Settings`; refused with a usage error naming the option
    where they cannot work together. Reading them changes nothing: the session sets the
    environment from them (`claimlog.plugin.session.set_environment`)."""
    threads = config.getoption("claimlog_torch_threads")
    if threads < 1:
        raise pytest.UsageError(f"--torch-threads must be at least 1, got {threads}")
    # One command updates both snapshot libraries; pytest-regressions' own flags would update
    # the numbers without the text that quotes them.
    for flag, dest in (("--force-regen", "force_regen"), ("--regen-all", "regen_all")):
        if getattr(config.option, dest, False):
            raise pytest.UsageError(
                f"{flag} would update the stored numbers but not the text that quotes them: "
                f"use `{UPDATE_COMMAND}`, which updates both"
            )
    update = bool(getattr(config.option, "update_snapshots", False))
    places = places_of(config)
    seeds = seeds_given(config, workshop)
    seeded = [f"--{axis}-seed" for axis, seed in seeds.items() if seed is not None]
    if update and seeded and (config.rootpath / ".git").exists():
        raise pytest.UsageError(
            f"--snapshot-update with {' and '.join(seeded)} would store another experiment's "
            "numbers as the workshop's: seed variants belong to the sweep, which runs them in "
            f"scratch copies ({workshop.sweep_command})"
        )
    results_log, diagrams = _outputs(config, places, update, seeds, workshop.name)
    return Settings(
        places=places,
        results_log=results_log,
        diagrams=diagrams,
        strict=bool(config.getoption("claimlog_strict_numbers")),
        update=update,
        recompute=bool(
            config.getoption("claimlog_recompute") or config.getoption("claimlog_strict_numbers")
        ),
        torch_threads=threads,
        native_kernels=bool(config.getoption("claimlog_native_kernels")),
        seeds=seeds,
        record=_path(config.getoption("claimlog_record")),
        figures=not config.getoption("claimlog_no_figures"),
        alone=bool(config.getoption("claimlog_train_alone")),
    )


def check_owners(items: list[pytest.Item], log: Log) -> None:
    """Refuse, before anything runs, a suite in which a claim owns a log line the log does
    not have, or two claims own one."""
    valid = set(log.claimed_keys())
    owner: dict[str, str] = {}
    for item in items:
        for key in owned_keys(item):
            if key not in valid:
                raise pytest.UsageError(
                    f"{item.nodeid} owns log line {key!r}, which results.log does not have; "
                    f"valid names are listed by {log.home}"
                )
            if key in owner:
                first, second = sorted([owner[key], item.nodeid])
                raise pytest.UsageError(f"log line {key!r} is owned by both {first} and {second}")
            owner[key] = item.nodeid


def owned_keys(item: pytest.Item) -> tuple[str, ...]:
    return tuple(key for mark in item.iter_markers("log_lines") for key in mark.args)


def sentence_of(item: pytest.Item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def is_citation(item: pytest.Item) -> bool:
    return not isinstance(item, pytest.Function)


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


def pytest_cache_folder(config: pytest.Config) -> Path | None:
    """Where pytest's Cache.mkdir(...) puts its folders, known before the cache plugin is
    configured (the entry point's pytest_load_initial_conftests, pytest_xdist_auto_num_workers
    and the session's pytest_configure run first); None under `-p no:cacheprovider`."""
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return None
    return config.rootpath / str(config.getini("cache_dir")) / "d"


def early_store(config: pytest.Config, name: str) -> Store | None:
    """pytest's cache folder `name`, before the cache plugin is configured: only where pytest
    has made its cache folder already (with its .gitignore). None elsewhere, and under
    `-p no:cacheprovider`: what it would keep is computed again."""
    folder = pytest_cache_folder(config)
    return Store(folder / name) if folder is not None and folder.parent.is_dir() else None
