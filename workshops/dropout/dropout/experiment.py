"""What the workshop computes: a small net fitted to noisy labels, with and without dropout.

Two hundred training points of the XOR problem (the label is 1 where x1 and x2 have the same
sign), a fifth of their labels flipped; a thousand test points with their true labels. A net
of two hidden layers of 64 ReLU units has far more weights than there are points, so with
full-batch Adam it learns many of the flipped training labels too, and its test accuracy pays
for it. The same net with dropout (each hidden unit dropped with probability p at every step)
cannot keep such exceptions: it scores about the share of true labels on its training set,
and better on the test set.

Everything is drawn from seeded generators: the data from the recipe's `seed`, the starting
weights and dropout's masks from its `init_seed` (the sweep's seed axis), through torch's
global generator, seeded where a fit starts.

It is ordinary PyTorch: torch imported at the top, `nn.Linear`, `nn.Dropout`, `torch.optim`.
Its bits depend on the CPU even under the reference kernels (MKL's matrix products take a path
of their own on some AMD cores for layers this wide; `nn.Dropout`'s masks come from MKL on
Intel CPUs only), and the engine tells such machines apart by what they compute: each is a
platform of its own, with its own evidence, and its sentences hold on every one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Recipe:
    """Every constant of the workshop."""

    seed: int = 0  # the data: points and which labels are flipped
    n_train: int = 200
    n_test: int = 1000
    flipped: float = 0.2  # the share of training labels flipped
    width: int = 64
    steps: int = 600
    lr: float = 0.01
    dropout: float = 0.5
    init_seed: int | None = None  # starting weights and dropout masks; None: `seed`

    def with_seeds(self, init: int | None) -> Recipe:
        return dataclasses.replace(self, init_seed=init)

    @property
    def weight_seed(self) -> int:
        return self.seed if self.init_seed is None else self.init_seed


RECIPE = Recipe()


@dataclass(frozen=True)
class Data:
    x_train: torch.Tensor
    y_train: torch.Tensor  # with a share of labels flipped
    x_test: torch.Tensor
    y_test: torch.Tensor  # true labels


def xor_data(recipe: Recipe) -> Data:
    """Points uniform in [-1, 1]^2, labelled 1 where x1 * x2 > 0; a share of the training
    labels flipped (exactly `flipped` of them, chosen at random)."""
    g = torch.Generator().manual_seed(recipe.seed)
    x = torch.rand(recipe.n_train + recipe.n_test, 2, generator=g) * 2 - 1
    y = (x[:, 0] * x[:, 1] > 0).float()
    y_train = y[: recipe.n_train].clone()
    flip = torch.randperm(recipe.n_train, generator=g)[: round(recipe.flipped * recipe.n_train)]
    y_train[flip] = 1 - y_train[flip]
    return Data(x[: recipe.n_train], y_train, x[recipe.n_train :], y[recipe.n_train :])


def network(dropout: float, width: int) -> nn.Sequential:
    """2 -> width -> width -> 1, ReLU, dropout after each hidden layer (p = 0: none). Its
    starting weights are drawn from torch's global generator, and so are its masks."""
    return nn.Sequential(
        nn.Linear(2, width),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(width, width),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(width, 1),
    )


@dataclass(frozen=True)
class Fit:
    """What one run ends with, as fractions (the log prints percentages)."""

    train_acc: float
    test_acc: float

    @property
    def gap(self) -> float:
        return self.train_acc - self.test_acc


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    net.eval()  # dropout off: the net as it is used
    with torch.no_grad():
        return float(((net(x).squeeze(1) > 0).float() == y).float().mean())


def fit(recipe: Recipe, dropout: float) -> Fit:
    """Train the net full-batch with Adam for `steps` steps; its accuracies at the end. The
    same starting weights with dropout or without: torch's generator is seeded here."""
    data = xor_data(recipe)
    torch.manual_seed(recipe.weight_seed)
    net = network(dropout, recipe.width)
    opt = torch.optim.Adam(net.parameters(), lr=recipe.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    for _ in range(recipe.steps):
        net.train()
        opt.zero_grad()
        loss = loss_fn(net(data.x_train).squeeze(1), data.y_train)
        loss.backward()
        opt.step()
    return Fit(accuracy(net, data.x_train, data.y_train), accuracy(net, data.x_test, data.y_test))
