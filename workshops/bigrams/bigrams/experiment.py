"""What the workshop computes: bigram statistics of 32,033 names, counted, then learned.

A bigram is a pair of consecutive characters of a name written between two marks, "." at its
start and at its end ("emma" gives .e em mm ma a.). Counting every bigram gives a model of the
next character; a net of one linear layer, 27 inputs to 27 outputs, learns the same model by
gradient descent on the negative log likelihood.

Ordinary PyTorch, every draw from a seeded generator. The names are read in place from the
shared dataset (`NAMES`, or the file `$BIGRAMS_NAMES` names), never copied; the recipe carries
the file's digest, so an edit of the data makes every kept result stale.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

# Beside the project: ../shared/data/names/names.txt (this file is four folders down).
NAMES = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "names" / "names.txt"
MARK = "."  # a name's start and end, character 0


def names_file() -> Path:
    return Path(os.environ.get("BIGRAMS_NAMES", NAMES))


@dataclass(frozen=True)
class Recipe:
    """Every constant of the workshop; `data` is the names file's SHA-256, so that results
    computed from other names are never reused."""

    data: str
    seed: int = 2147483647  # the notebook's generator seed
    steps: int = 100
    lr: float = 50.0
    weight_decay: float = 0.01  # on the mean of the squared weights


@cache
def recipe() -> Recipe:
    path = names_file()
    try:
        content = path.read_bytes()
    except OSError as error:
        raise FileNotFoundError(
            f"the names dataset is not at {path} ({error.strerror}): put the shared data beside "
            "the project, or name the file in $BIGRAMS_NAMES"
        ) from None
    return Recipe(data=hashlib.sha256(content).hexdigest())


@dataclass(frozen=True)
class Data:
    names: list[str]
    xs: torch.Tensor  # every bigram's first character, as an index 0..26
    ys: torch.Tensor  # its second
    itos: list[str] = field(default_factory=list)  # index -> character, MARK first

    @property
    def vocabulary(self) -> int:
        return len(self.itos)


def load(r: Recipe) -> Data:
    """The names, one per line, and their bigrams in order of the file."""
    names = names_file().read_text().split()
    if hashlib.sha256(names_file().read_bytes()).hexdigest() != r.data:
        raise ValueError(f"{names_file()} is not the names file the recipe was made from")
    itos = [MARK, *sorted(set("".join(names)))]
    stoi = {s: i for i, s in enumerate(itos)}
    pairs = [(stoi[a], stoi[b]) for w in names for a, b in zip(MARK + w, w + MARK, strict=True)]
    xs, ys = torch.tensor(pairs).unbind(1)
    return Data(names, xs.contiguous(), ys.contiguous(), itos)


@dataclass(frozen=True)
class Counting:
    """The counted model: how often each bigram occurs, and its log likelihood."""

    distinct: int  # bigrams that occur at least once
    top: str  # the most common one, as two characters
    top_count: int
    log_likelihood: float  # summed in order, in float32
    average_nll: float


def count(data: Data) -> Counting:
    """P = (N + 1) / its row sums (every bigram seen once more, so none has probability 0);
    the log likelihood of every bigram of the data under P, added one after the other in
    float32 as a loop over the names adds it."""
    v = data.vocabulary
    n = torch.bincount(data.xs * v + data.ys, minlength=v * v).reshape(v, v)
    p = (n + 1).float()
    p /= p.sum(1, keepdim=True)
    logp = p[data.xs, data.ys].log().numpy()
    total = float(np.add.accumulate(logp, dtype=np.float32)[-1])  # in order, as the loop adds
    top = int(n.argmax())
    return Counting(
        distinct=int((n > 0).sum()),
        top=data.itos[top // v] + data.itos[top % v],
        top_count=int(n.max()),
        log_likelihood=total,
        average_nll=-total / len(data.xs),
    )


@dataclass(frozen=True)
class Learning:
    """The net's loss (mean negative log likelihood plus weight decay) before each step."""

    losses: tuple[float, ...]


def learn(data: Data, r: Recipe) -> Learning:
    """A 27 x 27 weight matrix from the seeded generator, trained full-batch by gradient
    descent: logits = one_hot(x) @ W, softmax, the mean negative log likelihood of the next
    character plus weight_decay * mean(W^2)."""
    g = torch.Generator().manual_seed(r.seed)
    w = torch.randn((data.vocabulary, data.vocabulary), generator=g, requires_grad=True)
    x = F.one_hot(data.xs, num_classes=data.vocabulary).float()
    losses = []
    for _ in range(r.steps):
        logits = x @ w
        loss = F.cross_entropy(logits, data.ys) + r.weight_decay * (w**2).mean()
        losses.append(loss.item())
        w.grad = None
        loss.backward()
        with torch.no_grad():
            w -= r.lr * w.grad
    return Learning(tuple(losses))
