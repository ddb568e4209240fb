"""What a workshop declares to the engine, and how the engine finds it.

A workshop is a folder with claims (`claims/test_*.py`), a log they write and a text that
cites it. It tells the engine what is its own in one `Declaration`, named in its pytest
configuration:

    [tool.pytest.ini_options]
    claimlog_declaration = "bnvg.workshop:DECLARATION"

The engine knows nothing else of it: every pytest session run there reads the declaration
from that line (`load`) into its session (`claimlog.plugin.session.ClaimSession`, on pytest's
config), and the sweep from the same line (`declared_in`); nothing keeps it in a global, and
whatever needs it is handed it. A folder that names none gets no claimlog at all (the plugin
stays inert, as syrupy does until a test asks for a snapshot).

`claimlog init DIR` (`init`) writes a new workshop that passes at once, from the files of
`claimlog/scaffold/`: a recipe and a fit in ordinary PyTorch, its log, its declaration, two
claims, a page of text that cites the log and its pytest configuration; then records it with
one `pytest --snapshot-update`, which also rewrites the page's quotes to the numbers this
machine computed.
"""

from __future__ import annotations

import importlib
import keyword
import subprocess
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from claimlog.evidence.tables import Table
    from claimlog.log.lines import Log

INI_NAME = "claimlog_declaration"

# One part of a claim's key: the code of a definition (file, qualified name), or a text.
KeyPart = tuple[Path, str] | str


class Training(Protocol):
    """The networks a workshop trains, each a named run (`Declaration.training`).

    The engine trains each run a session's claims read (`@pytest.mark.runs(name)`) at most
    once, hands it to every claim that asks (the `runs` fixture), and keeps it in pytest's
    cache under a key of what its numbers depend on (`inputs`) and the platform; under
    pytest-xdist the workers train the missing runs between them, longest first (`cost`).
    A run's description is read without importing torch: a session that finds every run
    kept runs in one process, and never imports torch to read a history. A claim's evidence
    key includes this class's code, and all it reaches (the training, the data), for every
    claim that reads runs.
    """

    def names(self) -> Sequence[str]:
        """Every run, by name."""
        ...

    def inputs(self, name: str, recipe: Any) -> Mapping[str, str]:
        """What the run's numbers depend on beside the platform (its code, its settings, the
        recipe), as strings, told without torch: the run is trained again when any of it
        changes."""
        ...

    def cost(self, name: str, recipe: Any) -> float:
        """A rough training time alone, in seconds: the order runs train in, and, until
        the sweep has measured one, its first estimate of a seed's time."""
        ...

    def train(self, name: str, recipe: Any, key: str) -> Any:
        """The run, trained now. `key` is its key in the cache ("" without one): a run that
        carries it as `run.key` is known by it when a figure is drawn from it, so the figure
        is drawn again only when the run changed."""
        ...

    def encode(self, run: Any) -> bytes:
        """What the cache keeps of a run beyond its description (its weights)."""
        ...

    def describe(self, run: Any) -> Mapping[str, Any]:
        """The run's description, JSON (its history): read without torch."""
        ...

    def decode(self, name: str, content: bytes, description: Mapping[str, Any], key: str) -> Any:
        """The run back from what `encode` and `describe` made of it, bit for bit."""
        ...

    def table(self, name: str, run: Any) -> Table:
        """The run's numbers as a table (`Table.of_run`), checked against its snapshot before
        a claim first reads the run."""
        ...


class Together(Protocol):
    """How a workshop trains several of its runs at once (`Declaration.together`), each bit
    for bit as its `Training` trains it alone: runs of one shape (bnvg's: one depth and
    width, the same recipe but for its seeds) stacked into one computation, which costs far
    less than one after another where a step costs dispatch, not arithmetic.

    Neither a run's cache key nor a claim's evidence key includes this code: no number
    depends on it. The engine asks `same_bits` first, on the platform at hand, and trains one
    at a time, saying so, where together gives other bits.
    """

    def shape(self, name: str, recipe: Any) -> str | None:
        """What the run must share with others to train with them: runs of the same shape
        may train together; None, alone."""
        ...

    def train(
        self,
        runs: Sequence[tuple[str, Any]],
        keys: Sequence[str],
        progress: Callable[[float], None] | None = None,
    ) -> Sequence[Any]:
        """Each of `runs` (a name and its recipe; all of one shape) trained now, at once,
        as `Training.train` would give it under its key; or, in its place, the error of a
        run that fails on its own (the engine leaves it to fail alone, where it is read).
        `progress`, when given, is told now and then the fraction of the training done
        (0 to 1): the sweep's estimate of its time left is measured on it."""
        ...

    def same_bits(self, runs: Sequence[tuple[str, Any]]) -> bool:
        """Whether `runs` trained together give, here, the bits each gives alone (a short
        training both ways: the canary the engine asks before a group trains together)."""
        ...


@dataclass(frozen=True)
class Declaration:
    """A workshop, as the engine sees it.

    - `name`: how the engine names it: its folders in pytest's cache ("bnvg-figures");
    - `log`: its log, line by line (`claimlog.log.lines.Log`), built when first asked;
    - `plugins`: its pytest plugin modules: the fixtures its claims read (its data, its
      facts), registered by the engine before the claims are collected;
    - `figures`: the module whose function `name` draws the figure `name.png`;
    - `computing`: the folders and files its computations live in: every computed result is
      kept under a key of them (the `computed` fixture);
    - `quoting`: the code that turns a result into the numbers its lines print (bnvg's
      `fill.py`): no result depends on it, a claim's readings do. A claim's key is the code it
      reaches in `computing` and `quoting` (`claimlog.slicing.code_keys_at`), so an edit
      elsewhere (the layout, the engine) leaves every claim's evidence fresh;
    - `key_parts`: what a fixture depends on beyond its own code, by fixture name (the code
      that trains a run and every run's spec, for `runs`);
    - `seeds`: the seed axes the sweep varies, by name, each with three wordings: one seed
      of it, the axis, and a count of them ("minibatch order", "minibatch orders", "minibatch
      orders"; "starting weights", "starting weights", "sets of starting weights"); a
      session takes one with `--<name>-seed K`, and the recipe is built with it (`recipe`);
    - `recipe`: the recipe a session runs, given its seeds ({axis: K or None}), whose repr
      keys every result it computes (the engine's `computed` fixture);
    - `training`: the networks it trains (a `Training`), given when first asked; a session
      that finds them all in pytest's cache runs in one process;
    - `together`: how it trains several runs at once (a `Together`), if it can: the session
      trains its runs of one shape together, and the sweep a batch of seeds;
    - `sweep_command`: the command its messages give for a sweep;
    - `published`: how the reports name its published log ("the published log (torch
      2.12.1)": the release that wrote it).
    """

    name: str
    log: Callable[[], Log]
    plugins: tuple[str, ...] = ()
    figures: str | None = None
    computing: tuple[Path, ...] = ()
    quoting: tuple[Path, ...] = ()
    key_parts: Mapping[str, Callable[[], Sequence[KeyPart]]] = field(default_factory=dict)
    seeds: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)
    recipe: Callable[[Mapping[str, int | None]], Any] | None = None
    training: Callable[[], Training] | None = None
    together: Callable[[], Together] | None = None
    sweep_command: str = "python -m claimlog.sweep"  # what messages tell an author to run
    published: str = "the published log"  # how the reports name it (which torch wrote it)

    def seed_axes(self) -> tuple[str, ...]:
        return tuple(self.seeds)


def load(spec: str, where: str = "the pytest configuration") -> Declaration:
    """The declaration that `spec` ("package.module:NAME") names, imported."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{INI_NAME} = {spec!r} in {where}: write it as 'package.module:NAME'")
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"{INI_NAME} = {spec!r} in {where}: {error}") from None
    if not isinstance(value, Declaration):
        raise ValueError(
            f"{INI_NAME} = {spec!r} in {where} is a {type(value).__name__}, not a Declaration"
        )
    return value


def package_in(folder: Path) -> str | None:
    """The top-level package of the workshop that `folder`'s pyproject.toml declares, where
    it lies in `folder` itself ("demo" for `demo.workshop:DECLARATION` beside a `demo/`), or
    None: a workshop imported from the project (pytest's `pythonpath`, as `claimlog init`
    writes it) rather than installed, which the sweep ships with the claims."""
    try:
        options = tomllib.loads((folder / "pyproject.toml").read_text())["tool"]["pytest"]
        spec = options["ini_options"][INI_NAME]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None
    # Imported from the project only where pytest puts the project on the path; an installed
    # workshop (bnvg) is imported from the environment, which each job checks is the checkout.
    if not {".", "./"} & set(options["ini_options"].get("pythonpath", [])):
        return None
    top = str(spec).partition(":")[0].split(".")[0]
    return top if top and (folder / top / "__init__.py").is_file() else None


def declared_in(folder: Path) -> Declaration:
    """The workshop that the pyproject.toml of `folder` declares (for the sweep, which reads
    the configuration pytest reads, without starting pytest)."""
    path = folder / "pyproject.toml"
    try:
        options = tomllib.loads(path.read_text())["tool"]["pytest"]["ini_options"]
        spec = options[INI_NAME]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path} declares no workshop ({INI_NAME}): {error}") from None
    return load(spec, str(path))


# -- a new workshop -------------------------------------------------------------------------
SCAFFOLD = Path(__file__).resolve().parent / "scaffold"
PLACEHOLDER = "__WORKSHOP__"  # the workshop's name, in the scaffold's paths and texts


def init(folder: Path) -> str:
    """Write a new workshop into `folder` (which must not exist, or be empty), named after
    it, and record it on this machine. Returns what was done, for people; ValueError naming
    what is wrong with `folder`, RuntimeError with the update's output if it failed."""
    name = folder.name.replace("-", "_").lower()
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(
            f"{folder}: a workshop is named after its folder, and {folder.name!r} makes no "
            "Python package name: use letters, digits, '_' or '-', not starting with a digit"
        )
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder} exists and is not an empty folder: give a new one")
    for template in sorted(SCAFFOLD.rglob("*.tmpl")):
        relative = str(template.relative_to(SCAFFOLD).with_suffix(""))
        target = folder / relative.replace(PLACEHOLDER, name).replace("gitignore", ".gitignore")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(template.read_text().replace(PLACEHOLDER, name))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--snapshot-update", "-q", "-p", "no:randomly"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        said = done.stdout[-3000:] + done.stderr[-2000:]
        raise RuntimeError(f"recording {folder} failed:\n{said}")
    return (
        f"wrote the workshop {name!r} into {folder} and recorded its numbers on this machine.\n"
        f"Next: cd {folder} && pytest   (then git init, and commit it: the record is yours)"
    )


def seed_variant_name(seeds: Mapping[str, int | None]) -> str | None:
    """The name of the seed variant a session with these seeds ({axis: K or None}) is: None
    for the workshop's own seeds, "sampler-seed-5" for one; a session with two set is no
    variant of the sweep ("sampler-seed-5+init-seed-2")."""
    given = [f"{axis}-seed-{seed}" for axis, seed in seeds.items() if seed is not None]
    return "+".join(given) or None
