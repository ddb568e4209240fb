"""The one network class behind every variant of the workshop (section S3).

Plain, batch norm and layer norm come from `norm`; ReLU from `act`; the skip connection from
`residual`; the depth-8 nets from `depth`. Sharing one code path is itself a control: two
variants differ only in these options, and (because every build re-seeds the weight RNG)
they start from identical Linear weights.

One hidden layer is Linear -> normalise -> activate:

    z_pre = W h + b          # (N, width)
    z     = norm(z_pre)      # identity for the plain net
    h'    = act(z)           # (+ h when residual and the shapes match)

Every network trains on the same loss, `bce`: the sigmoid fused into binary cross-entropy
(BCEWithLogitsLoss), numerically stable for large logits, whose gradient with respect to the
logit is p - y (section S2); `accuracy` is what every table reports.

The final Linear maps the last hidden layer to one logit; the sigmoid lives in the loss.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from bnvg.experiment.config import PLAIN, WORKSHOP, NetSpec, Workshop
from bnvg.experiment.runtime import torch

N_FEATURES = 2  # two-moons points are (x1, x2)


@dataclass(frozen=True)
class Recording:
    """Every hidden layer's tensors from one recorded forward pass, in layer order.

    `z` and `h` keep their gradients (`retain_grad`), so after `loss.backward()` their
    `.grad` is the backward signal dL/dz_k and dL/dh_k at each depth.
    """

    z_pre: tuple[torch.Tensor, ...]  # Linear outputs, each (N, width)
    z: tuple[torch.Tensor, ...]  # normalised pre-activations, each (N, width)
    h: tuple[torch.Tensor, ...]  # activations, each (N, width)


def _normaliser(norm: str, width: int) -> nn.Module:
    if norm == "batch":
        return nn.BatchNorm1d(width)
    if norm == "layer":
        return nn.LayerNorm(width)
    # Identity keeps the plain net on the exact code path of the normalised variants.
    return nn.Identity()


class TinyNet(nn.Module):
    """A `depth` x `width` MLP for two-moons, configured by a `NetSpec`.

    Build it with `build_network`, which seeds the weights; constructing it directly draws
    from whatever state torch's global RNG is in.
    """

    def __init__(self, spec: NetSpec) -> None:
        super().__init__()
        self.spec = spec
        dims = [N_FEATURES] + [spec.width] * spec.depth
        # Creation order matters: the Linear layers draw their initial weights from the RNG
        # in this order (hidden layers first, then the output layer), as in the script.
        self.hidden = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(spec.depth))
        self.norms = nn.ModuleList(_normaliser(spec.norm, spec.width) for _ in range(spec.depth))
        self.out = nn.Linear(spec.width, 1)
        self.act: Callable[[torch.Tensor], torch.Tensor] = (
            torch.sigmoid if spec.act == "sigmoid" else torch.relu
        )

    def linear(self, k: int) -> nn.Linear:
        """Hidden layer k's Linear (0-based), typed as such."""
        lin = self.hidden[k]
        assert isinstance(lin, nn.Linear)
        return lin

    def __repr__(self) -> str:
        return f"TinyNet({self.spec})"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits, shape (N,)."""
        return self._forward(x, None)

    def forward_recorded(self, x: torch.Tensor) -> tuple[torch.Tensor, Recording]:
        """Logits plus every hidden layer's tensors, with their gradients retained.

        Used only for the at-init measurements: keeping the intermediates costs memory the
        optimiser never needs.
        """
        rec: dict[str, list[torch.Tensor]] = {"z_pre": [], "z": [], "h": []}
        logits = self._forward(x, rec)
        return logits, Recording(tuple(rec["z_pre"]), tuple(rec["z"]), tuple(rec["h"]))

    def _forward(self, x: torch.Tensor, rec: dict[str, list[torch.Tensor]] | None) -> torch.Tensor:
        h = x
        for lin, nrm in zip(self.hidden, self.norms, strict=True):
            z_pre = lin(h)
            z = nrm(z_pre)
            a = self.act(z)
            # The skip needs matching shapes, so the 2 -> width input layer never takes it.
            if self.spec.residual and a.shape == h.shape:
                a = a + h
            if rec is not None:
                z.retain_grad()
                a.retain_grad()
                rec["z_pre"].append(z_pre)
                rec["z"].append(z)
                rec["h"].append(a)
            h = a
        logits: torch.Tensor = self.out(h).squeeze(-1)
        return logits


def build_network(spec: NetSpec = PLAIN, workshop: Workshop = WORKSHOP) -> TinyNet:
    """A freshly initialised network, seeded so every variant starts from the same weights.

    Seeding happens inside `fork_rng`, so building a network neither depends on nor changes
    torch's global RNG state: the result is the same whatever ran before.

    With `spec.init == "xavier"` the default weights are drawn first and then every Linear
    weight (hidden and output) is re-drawn with Glorot's uniform scale,
    std = sqrt(2 / (fan_in + fan_out)), and every bias zeroed, continuing the same RNG
    stream, as the workshop does.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(workshop.weight_seed)
        net = TinyNet(spec)
        if spec.init == "xavier":
            for lin in [*net.hidden, net.out]:
                assert isinstance(lin, nn.Linear)
                nn.init.xavier_uniform_(lin.weight)
                nn.init.zeros_(lin.bias)
    return net


def weight_checksum(net: TinyNet) -> float:
    """Sum of |w| over every hidden-layer weight and bias: a cheap fingerprint that proves
    two variants start from identical weights (summed in the script's order)."""
    return sum(p.abs().sum().item() for lin in net.hidden for p in lin.parameters())


def parameter_count(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


# -- the loss every network trains on, and the accuracy every table reports -----------------
bce = nn.BCEWithLogitsLoss()  # stateless: one instance serves every caller


def accuracy(net: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of correct predictions (a logit > 0 means p > 0.5).

    Evaluates in `eval()` mode, so batch norm normalises with its running averages rather
    than this batch's statistics (the S9 bug, avoided), then restores the caller's mode.
    """
    was_training = net.training
    net.eval()
    with torch.no_grad():
        acc = float(((net(X) > 0).float() == y).float().mean().item())
    net.train(was_training)
    return acc
