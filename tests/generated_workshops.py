"""Workshops we did not write: a Hypothesis strategy for small workshops in ordinary PyTorch,
and the files that make each one, written through claimlog's public API as docs/engine.md
teaches.

A workshop here is one computation, `train`: a binary classifier on random points, trained
in one or two phases (each its own net: width, depth, optimiser, full batch or minibatches
with a partial last batch, dropout or none, for a number of steps), each evaluated at the end
on a test set whose size is its own. Each phase's final loss and test accuracy are a log
line, quoted by a claim of its own with a sentence on each ("its loss ends below 0.7, and it
classifies more than 50% of the test points"). The space covers the shapes that once hid a
platform: the kernels of a wide second phase, of an evaluation on another shape, of a last
partial batch, all called only after many steps of a narrow first phase.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from hypothesis import strategies as st

OPTIMISERS = ("sgd", "momentum", "adam")


@dataclass(frozen=True)
class Phase:
    """One net trained in the computation: `batch` 0 is the full batch."""

    width: int
    depth: int
    steps: int
    batch: int
    optimiser: str
    dropout: float


@dataclass(frozen=True)
class Sentence:
    """What each phase's claim says: its loss ends below `loss`, and its test accuracy is
    above `accuracy` percent."""

    loss: float
    accuracy: float


@dataclass(frozen=True)
class Workshop:
    inputs: int
    train: int
    test: int
    phases: tuple[Phase, ...]
    sentence: Sentence

    @property
    def package(self) -> str:
        """The workshop's package: named by what it is, so that workshops run one after
        another in one process never import each other's modules."""
        spelled = json.dumps(asdict(self), sort_keys=True).encode()
        return "generated_" + hashlib.sha256(spelled).hexdigest()[:10]

    def edited(self) -> Workshop:
        """The same workshop after an author's edit of its recipe: its last phase trains one
        step more."""
        last = self.phases[-1]
        return replace(self, phases=(*self.phases[:-1], replace(last, steps=last.steps + 1)))

    def describe(self) -> str:
        said = [
            f"{p.depth} x {p.width} wide, {p.steps} {p.optimiser} steps on "
            + (f"batches of {p.batch}" if p.batch else "the full batch")
            + (f", dropout {p.dropout}" if p.dropout else "")
            for p in self.phases
        ]
        return f"{self.inputs} inputs, {self.train} training and {self.test} test points: " + (
            "; then ".join(said)
        )


def phases() -> st.SearchStrategy[Phase]:
    return st.builds(
        Phase,
        width=st.integers(2, 64),
        depth=st.integers(1, 4),
        steps=st.integers(1, 150),
        batch=st.sampled_from([0, 0, 8, 16, 24, 40, 64]),
        optimiser=st.sampled_from(OPTIMISERS),
        dropout=st.sampled_from([0.0, 0.0, 0.1, 0.5]),
    )


def workshops() -> st.SearchStrategy[Workshop]:
    """Small workshops: widths 2 to 64, depths 1 to 4, one or two phases, full batches and
    minibatches (most training sizes leave a partial last batch), SGD, momentum and Adam,
    dropout or none, and an evaluation at the end on 16 to 1000 points."""
    return st.builds(
        Workshop,
        inputs=st.integers(2, 8),
        train=st.integers(32, 300),
        test=st.integers(16, 1000),
        phases=st.lists(phases(), min_size=1, max_size=2).map(tuple),
        sentence=st.builds(
            Sentence, loss=st.sampled_from([0.7, 2.0]), accuracy=st.sampled_from([0.0, 50.0])
        ),
    )


# -- the workshop's files, as docs/engine.md teaches them ------------------------------------
def _recipe(workshop: Workshop) -> str:
    phases = ",\n        ".join(
        f"Phase(width={p.width}, depth={p.depth}, steps={p.steps}, batch={p.batch}, "
        f"optimiser={p.optimiser!r}, dropout={p.dropout})"
        for p in workshop.phases
    )
    return (
        f"RECIPE = Recipe(\n    inputs={workshop.inputs},\n    train={workshop.train},\n"
        f"    test={workshop.test},\n    phases=(\n        {phases},\n    ),\n)"
    )


EXPERIMENT = '''
"""A generated workshop: {describe}."""

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Phase:
    width: int
    depth: int
    steps: int
    batch: int  # 0: the full batch
    optimiser: str
    dropout: float


@dataclass(frozen=True)
class Recipe:
    inputs: int
    train: int
    test: int
    phases: tuple[Phase, ...]


{recipe}


@dataclass(frozen=True)
class Result:
    loss: float
    accuracy: float


def _net(recipe: Recipe, phase: Phase) -> nn.Module:
    layers, width = [], recipe.inputs
    for _ in range(phase.depth):
        layers += [nn.Linear(width, phase.width), nn.Tanh()]
        if phase.dropout:
            layers.append(nn.Dropout(phase.dropout))
        width = phase.width
    return nn.Sequential(*layers, nn.Linear(width, 1))


def _optimiser(phase: Phase, parameters) -> torch.optim.Optimizer:
    if phase.optimiser == "adam":
        return torch.optim.Adam(parameters, lr=0.01)
    momentum = 0.9 if phase.optimiser == "momentum" else 0.0
    return torch.optim.SGD(parameters, lr=0.1, momentum=momentum)


def train(recipe: Recipe) -> tuple[Result, ...]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(recipe.train + recipe.test, recipe.inputs, generator=g)
    w = torch.randn(recipe.inputs, 1, generator=g)
    y = ((x @ w).squeeze(1) > 0).float()
    x_train, y_train = x[: recipe.train], y[: recipe.train]
    x_test, y_test = x[recipe.train :], y[recipe.train :]
    results = []
    for number, phase in enumerate(recipe.phases):
        torch.manual_seed(1 + number)
        net = _net(recipe, phase)
        opt = _optimiser(phase, net.parameters())
        loss_fn = nn.BCEWithLogitsLoss()
        size = phase.batch or recipe.train
        starts = range(0, recipe.train, size)
        for step in range(phase.steps):
            start = starts[step % len(starts)]
            opt.zero_grad()
            out = net(x_train[start : start + size]).squeeze(1)
            loss = loss_fn(out, y_train[start : start + size])
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            right = (net(x_test).squeeze(1) > 0).float() == y_test
        results.append(Result(loss.item(), right.float().mean().item() * 100))
    return tuple(results)
'''

LOG = """
from functools import cache

from claimlog import Kind, Line, Log, Quantity, Template

RESULT = Template(
    "phase {{number}}: final loss = {{loss}}, test accuracy = {{accuracy}}%",
    {{
        "number": Quantity("phase", Kind.COUNT),
        "loss": Quantity("final loss", Kind.LOSS, ".4f"),
        "accuracy": Quantity("test accuracy", Kind.PERCENT, ".1f"),
    }},
)


@cache
def log() -> Log:
    return Log(
        (
            Line.words("A generated workshop -- experiment log"),
            {lines}
        ),
        home="{package}.log.log()",
    )
"""

FIXTURES = """
import json
import os

import pytest

from claimlog import Computed

# Where the test that generated this workshop reads what each run computed, bit for bit.
READINGS = "GENERATED_WORKSHOP_READINGS"


@pytest.fixture(scope="session")
def results(recipe, computed: Computed):
    from {package}.experiment import train

    found = computed.get("train", lambda: train(recipe))
    if os.environ.get(READINGS):
        with open(os.environ[READINGS], "w") as out:
            json.dump([[r.loss.hex(), r.accuracy.hex()] for r in found], out)
    return found
"""

WORKSHOP = """
from pathlib import Path

from claimlog import Declaration

PACKAGE = Path(__file__).resolve().parent


def _log():
    from {package}.log import log

    return log()


def _recipe(seeds):
    from {package}.experiment import RECIPE

    return RECIPE


DECLARATION = Declaration(
    name="generated",
    log=_log,
    recipe=_recipe,
    plugins=("{package}.fixtures",),
    computing=(PACKAGE / "experiment.py",),
    quoting=(PACKAGE / "log.py",),
)
"""

CLAIM = '''

@pytest.mark.log_lines("phase{number}")
def test_phase_{number}(results, quoted):
    """Text: "phase {number} ends below a loss of {loss} and classifies more than {accuracy}%
    of the test points"."""
    found = results[{index}]
    line = log().line_named("phase{number}").fill(
        number={number}, loss=found.loss, accuracy=found.accuracy
    )
    quoted.lines(line, holds={{"final loss": below({loss}), "test accuracy": above({accuracy})}})
'''

PYPROJECT = """
[tool.pytest.ini_options]
testpaths = ["claims"]
pythonpath = ["."]
claimlog_declaration = "{package}.workshop:DECLARATION"
addopts = ["-p", "no:randomly", "-p", "no:xdist"]
"""


def files(workshop: Workshop, package: str | None = None) -> dict[str, str]:
    """The workshop's files, by path: its package (named `package`, by default its own), its
    claims, and what git ignores."""
    package = package or workshop.package
    lines = "\n            ".join(
        f'Line.by_claim(RESULT, "phase{n}"),' for n in range(1, len(workshop.phases) + 1)
    )
    claims = f"import pytest\n\nfrom claimlog import above, below\nfrom {package}.log import log\n"
    for index in range(len(workshop.phases)):
        claims += CLAIM.format(
            number=index + 1,
            index=index,
            loss=workshop.sentence.loss,
            accuracy=workshop.sentence.accuracy,
        )
    return {
        "pyproject.toml": PYPROJECT.format(package=package),
        ".gitignore": "__pycache__/\n",
        f"{package}/__init__.py": "",
        f"{package}/experiment.py": EXPERIMENT.format(
            describe=workshop.describe(), recipe=_recipe(workshop)
        ),
        f"{package}/log.py": LOG.format(lines=lines, package=package),
        f"{package}/fixtures.py": FIXTURES.format(package=package),
        f"{package}/workshop.py": WORKSHOP.format(package=package),
        "claims/test_generated.py": claims,
    }


def write(folder: Path, workshop: Workshop, package: str | None = None) -> Path:
    """Write `workshop` into `folder` (its files replaced, others left)."""
    for name, text in files(workshop, package).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return folder
