"""What the workshop computes: a small net fitted to noisy labels, with and without dropout.

Two hundred training points of the XOR problem (the label is 1 where x1 and x2 have the same
sign), a fifth of their labels flipped; a thousand test points with their true labels. A net
of two hidden layers of 64 ReLU units has far more weights than there are points, so with
full-batch Adam it learns many of the flipped training labels too, and its test accuracy pays
for it. The same net with dropout (each hidden unit dropped with probability p at every step)
cannot keep such exceptions: it scores about the share of true labels on its training set,
and better on the test set.

Everything is drawn from seeded generators: the data from the recipe's `seed`, the starting
weights and dropout's masks from its `init_seed` (the sweep's seed axis). The layers keep off
the two routes by which torch's results depend on the CPU's vendor under the reference
kernels. They sum their products with ATen (`SummedLinear`), not with MKL's matrix product,
whose COMPATIBLE branch takes a path of its own on AMD's Zen cores for layers eight or more
wide; and they draw dropout's masks with `torch.rand` (`Dropout`), not with
`torch.bernoulli_`, which asks MKL for them on Intel CPUs only. With `nn.Linear` and
`nn.Dropout` this log printed other accuracies on an Intel Xeon than on an AMD EPYC; this
net computes the same bits on the Intel Xeon with MKL told it runs on a Zen core
(docs/platforms.md in the repository says what was measured, and what was not).

torch is imported by the functions that compute, never when the module is: the recipe is read
by the workshop's plugin and log before claimlog has set the reference kernels, which torch
reads once, when it is imported.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    import torch

    g = torch.Generator().manual_seed(recipe.seed)
    x = torch.rand(recipe.n_train + recipe.n_test, 2, generator=g) * 2 - 1
    y = (x[:, 0] * x[:, 1] > 0).float()
    y_train = y[: recipe.n_train].clone()
    flip = torch.randperm(recipe.n_train, generator=g)[: round(recipe.flipped * recipe.n_train)]
    y_train[flip] = 1 - y_train[flip]
    return Data(x[: recipe.n_train], y_train, x[recipe.n_train :], y[recipe.n_train :])


@cache
def summed_linear() -> type[nn.Linear]:
    """`nn.Linear` (its weights, bias and initialisation), whose products are summed by ATen:
    y = sum over i of x_i * w_i, + b, an elementwise product and a sum over one dimension,
    where `nn.Linear` calls MKL's matrix product. Its gradients are ATen's too. It holds a
    batch x inputs x outputs product in memory at once: fine for a workshop's small nets."""
    from torch import nn

    class SummedLinear(nn.Linear):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = (x.unsqueeze(-1) * self.weight.t()).sum(-2)
            return y if self.bias is None else y + self.bias

    return SummedLinear


@cache
def dropout_layer() -> type[nn.Module]:
    """Dropout as `nn.Dropout` computes it (in training, each unit zeroed with probability p
    and the rest scaled by 1 / (1 - p), the mask scaled before it multiplies, as ATen does; in
    evaluation, nothing), its masks drawn with `torch.rand` from the generator it is given."""
    import torch
    from torch import nn

    class Dropout(nn.Module):
        def __init__(self, p: float, generator: torch.Generator) -> None:
            super().__init__()
            if not 0 <= p <= 1:
                raise ValueError(f"dropout probability has to be between 0 and 1, got {p!r}")
            self.p, self.generator = p, generator

        def forward(self, h: torch.Tensor) -> torch.Tensor:
            if not self.training or self.p == 0:
                return h
            if self.p == 1:
                return h * 0
            keep = torch.rand(h.shape, generator=self.generator) >= self.p
            return h * (keep.to(h.dtype) / (1 - self.p))

    return Dropout


def network(recipe: Recipe, dropout: float) -> nn.Sequential:
    """2 -> width -> width -> 1, ReLU, dropout after each hidden layer (p = 0: none)."""
    import torch
    from torch import nn

    linear, drop = summed_linear(), dropout_layer()
    w = recipe.width
    # Seeded inside fork_rng, so that building a net neither depends on torch's global
    # generator nor changes it. The masks continue the stream the starting weights were drawn
    # from, as nn.Dropout's would: a generator of their own seeded alike would repeat the
    # weights' draws, and keep each unit by the sign of one of its weights.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(recipe.weight_seed)
        layers = (linear(2, w), linear(w, w), linear(w, 1))
        masks = torch.Generator()
        masks.set_state(torch.get_rng_state())
    return nn.Sequential(
        layers[0],
        nn.ReLU(),
        drop(dropout, masks),
        layers[1],
        nn.ReLU(),
        drop(dropout, masks),
        layers[2],
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
    import torch

    net.eval()  # dropout off: the net as it is used
    with torch.no_grad():
        return float(((net(x).squeeze(1) > 0).float() == y).float().mean())


def fit(recipe: Recipe, dropout: float) -> Fit:
    """Train the net full-batch with Adam for `steps` steps; its accuracies at the end."""
    import torch
    from torch import nn

    data = xor_data(recipe)
    net = network(recipe, dropout)
    opt = torch.optim.Adam(net.parameters(), lr=recipe.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    for _ in range(recipe.steps):
        net.train()
        opt.zero_grad()
        loss = loss_fn(net(data.x_train).squeeze(1), data.y_train)
        loss.backward()
        opt.step()
    return Fit(accuracy(net, data.x_train, data.y_train), accuracy(net, data.x_test, data.y_test))
