"""The workshop's constants, and the options that make one network differ from another.

Every number the workshop quotes comes from one recipe. `Workshop` holds that recipe, each
constant with the reason it has the value it has; `NetSpec` names one network variant, and
`RunSpec` one training run of it (the network, the learning rate, and whether it was probed
before training). All are frozen: a variant is made with
`dataclasses.replace(base, norm="batch")`, never by mutating a shared object, so no claim can
change what another claim reads.

Bad values fail loudly here, before any computation starts: the workshop script silently
turned an unknown norm into "none" and an unknown activation into ReLU, and a typo must never
train the wrong network.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args

Norm = Literal["none", "batch", "layer"]
Activation = Literal["sigmoid", "relu"]
Init = Literal["default", "xavier"]

NORMS: tuple[str, ...] = get_args(Norm)
ACTIVATIONS: tuple[str, ...] = get_args(Activation)
INITS: tuple[str, ...] = get_args(Init)


def _require_choice(field: str, value: object, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(
            f"unknown {field} {value!r}: valid values are " + ", ".join(repr(v) for v in valid)
        )


def _require_at_least(field: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{field} must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class Workshop:
    """The one recipe behind every number of the workshop (the script's module constants)."""

    seed: int = 0  # one seed for data, weights and minibatches: the whole log is one run
    depth: int = 4  # hidden layers: deep enough that sigmoid gradients visibly vanish
    width: int = 4  # neurons per hidden layer: tiny, so every weight fits in a table
    n_samples: int = 1000  # two-moons points, 500 per class
    noise: float = 0.10  # Gaussian jitter: the moons overlap a little, 100% is still possible
    n_train: int = 800  # the last 200 shuffled points are the never-trained-on test set
    batch: int = 64  # minibatch size for SGD (and for batch norm's statistics)
    steps: int = 4000  # enough for batch norm to converge; the plain net still learns nothing
    lr: float = 0.5  # a sensible default SGD step; S7 cranks it to 5 and 50
    eval_every: int = 50  # history cadence: full-set loss and test accuracy every 50 steps
    # The minibatch order alone, for sweeps that ask which results are luck of the draw;
    # None: the workshop's seed, as in the script.
    sampler_seed: int | None = None
    # The starting weights alone, likewise (every variant still starts from the same weights
    # within one init seed, so plain and batch norm stay comparable); None: the workshop's.
    init_seed: int | None = None

    def __post_init__(self) -> None:
        _require_at_least("depth", self.depth, 1)
        _require_at_least("width", self.width, 1)
        _require_at_least("steps", self.steps, 1)
        _require_at_least("batch", self.batch, 1)
        _require_at_least("eval_every", self.eval_every, 1)
        _require_at_least("n_samples", self.n_samples, 2)
        if self.n_samples % 2:
            raise ValueError(
                f"n_samples must be even (two moons of equal size), got {self.n_samples}"
            )
        if not 0 < self.n_train < self.n_samples:
            raise ValueError(
                f"n_train must be between 1 and n_samples - 1 = {self.n_samples - 1}, "
                f"got {self.n_train!r}"
            )
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not self.noise >= 0:
            raise ValueError(f"noise must be >= 0, got {self.noise!r}")

    @property
    def minibatch_seed(self) -> int:
        return self.seed if self.sampler_seed is None else self.sampler_seed

    @property
    def weight_seed(self) -> int:
        return self.seed if self.init_seed is None else self.init_seed

    def with_seeds(self, sampler: int | None = None, init: int | None = None) -> Workshop:
        """This recipe with another minibatch order and/or other starting weights."""
        return dataclasses.replace(self, sampler_seed=sampler, init_seed=init)

    @property
    def recorded_steps(self) -> tuple[int, ...]:
        """The steps a training history records (`bnvg.experiment.train`): step 1, then every
        `eval_every`. What the log's "first >=90%: never" counts is these points, and no
        others: the steps between are never evaluated."""
        return tuple(s for s in range(1, self.steps + 1) if s == 1 or s % self.eval_every == 0)

    @property
    def n_test(self) -> int:
        return self.n_samples - self.n_train


WORKSHOP = Workshop()


@dataclass(frozen=True)
class NetSpec:
    """One network variant: which options differ from the plain sigmoid net.

    Every variant of the workshop is built from the same class and the same seed, so two
    specs that differ only in `norm` start from identical Linear weights.
    """

    norm: Norm = "none"  # "batch" (Ioffe & Szegedy 2015) or "layer" (Ba et al. 2016)
    act: Activation = "sigmoid"  # "relu": slope exactly 1 where active, no shrinkage
    residual: bool = False  # add each hidden layer's input to its output (He et al. 2016)
    depth: int = WORKSHOP.depth  # hidden layers
    width: int = WORKSHOP.width  # neurons per hidden layer
    init: Init = "default"  # "xavier": re-draw Linear weights with Glorot's uniform scale

    def __post_init__(self) -> None:
        _require_choice("norm", self.norm, NORMS)
        _require_choice("activation", self.act, ACTIVATIONS)
        _require_choice("init", self.init, INITS)
        _require_at_least("depth", self.depth, 1)
        _require_at_least("width", self.width, 1)

    def replace(self, **changes: object) -> NetSpec:
        """A copy with some options changed (validated like a new spec)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def __str__(self) -> str:
        parts = [f"depth={self.depth}", f"norm={self.norm}", f"act={self.act}"]
        if self.width != WORKSHOP.width:
            parts.insert(1, f"width={self.width}")
        if self.residual:
            parts.append("residual")
        if self.init != "default":
            parts.append(f"init={self.init}")
        return ", ".join(parts)


PLAIN = NetSpec()  # the workshop's plain sigmoid net: every other variant differs from it


@dataclass(frozen=True)
class RunSpec:
    """One training run: which network, which learning rate, and how it was prepared.

    What decides a run beside the recipe: the network, the learning rate and whether the
    at-init gradient ratio was measured on the very network before it trained (that one
    train-mode pass nudges batch norm's running statistics, and so the early history). It
    lives here, below every module that trains or holds a run (`bnvg.experiment.train`,
    `bnvg.experiment.results`, `bnvg.experiment.runs`), so they all import it one way.
    """

    net: NetSpec = PLAIN
    lr: float = WORKSHOP.lr
    probed: bool = False  # True: init_grad_ratio ran on this network before training

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")

    def __str__(self) -> str:
        return f"{self.net}, lr={self.lr}" + (", probed" if self.probed else "")


# -- the settings of the demonstrations ---------------------------------------------------------
# Numbers the workshop chose rather than measured. The log prints them, so they are named here
# once and read by the experiment and by the log's layout alike.

TARGET_PERCENT = 90  # "first >= 90%": the workshop's bar for "the net learned the task"
TARGET_ACCURACY = TARGET_PERCENT / 100  # the same bar as a fraction of the test set
DEEP_DEPTH = 8  # S7's deeper net: four more sigmoid layers than the S6 nets
CRANK_LRS = (5.0, 50.0)  # S7: the plain net's learning rate cranked 10x and 100x
DEEP_LRS = (0.5, 5.0, 50.0)  # S7 at depth 8: the workshop's rate, then cranked 10x and 100x
SATURATION_Z = 4.0  # S2: |z| = 4 is deep in the sigmoid's flat zone (slope ~0.018)
CHECK_LOGIT, CHECK_LABEL = 2.0, 0.0  # S2: the logit and label of the autograd check of p - y
CHANCE_PERCENT = 50.0  # two balanced classes: a coin flip scores 50%
DECAY_FACTORS = (0.9, 0.5, 0.25, 0.1)  # S5: gentle, halving, the sigmoid's best, the measured ~0.1
DECAY_DEPTHS = (4, 10)  # S5: the workshop's depth, and a deeper net's
EVAL_BUG_BATCH = 2  # S9: the smallest batch batch norm can normalise (it needs a variance)


def recipe(workshop: Workshop = WORKSHOP) -> dict[str, object]:
    """The recipe as data: every constant above, by name. Evidence records which recipe it
    measured (`claimlog.evidence.fragments`), so a changed constant makes it another
    experiment's."""
    return {
        **dataclasses.asdict(workshop),
        "TARGET_PERCENT": TARGET_PERCENT,
        "DEEP_DEPTH": DEEP_DEPTH,
        "CRANK_LRS": list(CRANK_LRS),
        "DEEP_LRS": list(DEEP_LRS),
        "SATURATION_Z": SATURATION_Z,
        "CHECK_LOGIT": CHECK_LOGIT,
        "CHECK_LABEL": CHECK_LABEL,
        "CHANCE_PERCENT": CHANCE_PERCENT,
        "DECAY_FACTORS": list(DECAY_FACTORS),
        "DECAY_DEPTHS": list(DECAY_DEPTHS),
        "EVAL_BUG_BATCH": EVAL_BUG_BATCH,
    }
