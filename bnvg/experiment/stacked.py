"""Several training runs at once, as one stacked network, each bit for bit its single run.

The workshop's nets are 4 wide: a step costs Python and dispatch, not arithmetic, so the
sweep's 64 seeds, trained one after another, spend most of their time outside the kernels.
Here the runs of one shape (depth and width; the same recipe but for its seeds) train
together: every Linear's weights are stacked `(runs, out, in)` and
applied with `torch.baddbmm`; each run draws its own minibatches from its own generator,
its loss is the same `bce` over its own batch (runs that share a minibatch order share one
generator), and the sum of the runs' losses is differentiated once, which hands each run
exactly its own gradient. Each run keeps its own
normalisation (batch norm and layer norm on the run's slice, with its own parameters and
statistics: one `F.batch_norm` over the stack would sum in another order), activation and
skip. Each run takes its own SGD step, with its own learning rate: the update `train` makes,
on the run's slice.

Under the reference kernels this gives every run the bits of `bnvg.experiment.train.train_run`
(the weights, the running statistics, every point of the history): measured for every net
the workshop trains, over both seed axes. Other kernels may not (a batched matrix product
may sum in another order than a single one), so `same_bits` trains a few steps of a batch
both ways first, on the platform at hand: claimlog trains together only where they agree,
and one run at a time, saying so, where they do not. Nothing here decides a number: no run's
cache key, and no claim's evidence key, includes this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import torch.nn.functional as F
from torch import nn

from bnvg.experiment.config import NetSpec, RunSpec, Workshop
from bnvg.experiment.data import TwoMoons, two_moons
from bnvg.experiment.measure import init_grad_ratio
from bnvg.experiment.model import TinyNet, bce, build_network
from bnvg.experiment.results import History, TrainedRun
from bnvg.experiment.runs import RUNS
from bnvg.experiment.runtime import torch
from bnvg.experiment.train import train_run

CANARY_STEPS = 51  # step 1 and step 50 are evaluated: the training and the evaluation paths


def shape_of(spec: RunSpec, workshop: Workshop) -> str:
    """What runs must share to train together: the network's depth and width, and the recipe
    but for its seeds (each run keeps its own normalisation, activation, skip, starting
    weights and learning rate)."""
    recipe = dataclasses.replace(workshop, sampler_seed=None, init_seed=None)
    return repr((spec.net.depth, spec.net.width, recipe))


class _Stack:
    """The parameters and buffers of several `TinyNet`s of one depth and width, stacked run
    by run: every Linear's weights `(runs, out, in)`; each run's normalisation apart."""

    def __init__(self, nets: Sequence[TinyNet]) -> None:
        self.nets = nets
        self.depth = nets[0].spec.depth
        # Runs of one kind (normalisation, activation, skip) lie side by side, a chunk each
        # (`train_together` orders them so): what is applied to a whole chunk at once.
        self.chunks: list[tuple[int, int, NetSpec]] = []
        for i, net in enumerate(nets):
            if self.chunks and _kind(self.chunks[-1][2]) == _kind(net.spec):
                start, _, spec = self.chunks[-1]
                self.chunks[-1] = (start, i + 1, spec)
            else:
                self.chunks.append((i, i + 1, net.spec))

        def stacked(name: str) -> list[torch.Tensor]:
            return [
                torch.stack([_tensor(net, name.format(k=k)) for net in nets]).clone()
                for k in range(self.depth)
            ]

        self.weights, self.biases = stacked("hidden.{k}.weight"), stacked("hidden.{k}.bias")
        self.out_weight = torch.stack([net.out.weight.detach() for net in nets]).clone()
        self.out_bias = torch.stack([net.out.bias.detach() for net in nets]).clone()
        # Each run's normalisation of layer k: its module's parameters and statistics, copies.
        self.norms = [[_copy(net.norms[k]) for k in range(self.depth)] for net in nets]
        for p in self.stacked():
            p.requires_grad_(True)

    def stacked(self) -> list[torch.Tensor]:
        return [*self.weights, *self.biases, self.out_weight, self.out_bias]

    def forward(self, x: torch.Tensor, training: bool) -> torch.Tensor:
        """Each run's logits, `(runs, N)`, from each run's inputs `x`, `(runs, N, 2)`."""
        h = x
        for k in range(self.depth):
            z = torch.baddbmm(self.biases[k].unsqueeze(1), h, self.weights[k].transpose(1, 2))
            parts = []
            for start, stop, spec in self.chunks:
                y = z[start:stop]
                if spec.norm != "none":
                    norms = [run[k] for run in self.norms[start:stop]]
                    y = torch.stack([n(y[i], training) for i, n in enumerate(norms) if n])
                a = torch.sigmoid(y) if spec.act == "sigmoid" else torch.relu(y)
                # The skip needs matching shapes: the 2 -> width input layer never takes it.
                if spec.residual and a.shape[1:] == h.shape[1:]:
                    a = a + h[start:stop]
                parts.append(a)
            h = parts[0] if len(parts) == 1 else torch.cat(parts)
        weight = self.out_weight.transpose(1, 2)
        return torch.baddbmm(self.out_bias.unsqueeze(1), h, weight).squeeze(-1)

    def step(self, lrs: Sequence[float]) -> None:
        """Each run's SGD step at its own learning rate, as `torch.optim.SGD` takes it: on
        each stretch of runs that share one (`train_together` orders them so), at once."""
        stretches: list[tuple[int, int, float]] = []
        for i, lr in enumerate(lrs):
            if stretches and stretches[-1][2] == lr:
                stretches[-1] = (stretches[-1][0], i + 1, lr)
            else:
                stretches.append((i, i + 1, lr))
        with torch.no_grad():
            for p in self.stacked():
                grad = p.grad
                assert grad is not None
                for start, stop, lr in stretches:
                    p[start:stop].add_(grad[start:stop], alpha=-lr)
                p.grad = None
            for run, lr in zip(self.norms, lrs, strict=True):
                for norm in run:
                    if norm is not None:
                        norm.step(lr)

    def unstack(self, steps: int) -> None:
        """Each net, given its run's trained parameters and statistics back."""
        with torch.no_grad():
            for i, net in enumerate(self.nets):
                for k in range(self.depth):
                    net.linear(k).weight.copy_(self.weights[k][i])
                    net.linear(k).bias.copy_(self.biases[k][i])
                    norm = self.norms[i][k]
                    if norm is not None:
                        norm.put_back(net.norms[k], steps)
                net.out.weight.copy_(self.out_weight[i])
                net.out.bias.copy_(self.out_bias[i])


class _Norm:
    """One run's batch norm or layer norm of one layer: its own parameters and statistics."""

    def __init__(self, module: nn.BatchNorm1d | nn.LayerNorm) -> None:
        self.batch = isinstance(module, nn.BatchNorm1d)
        self.eps = module.eps  # as the module normalises
        self.momentum = module.momentum if isinstance(module, nn.BatchNorm1d) else None
        self.weight = module.weight.detach().clone().requires_grad_(True)
        self.bias = module.bias.detach().clone().requires_grad_(True)
        if isinstance(module, nn.BatchNorm1d):
            assert module.running_mean is not None and module.running_var is not None
            self.mean = module.running_mean.clone()
            self.var = module.running_var.clone()

    def __call__(self, z: torch.Tensor, training: bool) -> torch.Tensor:
        if self.batch:
            assert self.momentum is not None  # a cumulative average would read the step count
            return F.batch_norm(
                z, self.mean, self.var, self.weight, self.bias, training, self.momentum, self.eps
            )
        return F.layer_norm(z, (z.shape[-1],), self.weight, self.bias, self.eps)

    def step(self, lr: float) -> None:
        for p in (self.weight, self.bias):
            assert p.grad is not None
            p.add_(p.grad, alpha=-lr)
            p.grad = None

    def put_back(self, module: nn.Module, steps: int) -> None:
        assert isinstance(module, nn.BatchNorm1d | nn.LayerNorm)
        module.weight.copy_(self.weight)
        module.bias.copy_(self.bias)
        if isinstance(module, nn.BatchNorm1d):
            assert module.running_mean is not None and module.running_var is not None
            assert module.num_batches_tracked is not None
            module.running_mean.copy_(self.mean)
            module.running_var.copy_(self.var)
            module.num_batches_tracked += steps  # one per training step


def _kind(spec: NetSpec) -> tuple[str, str, bool]:
    """What a chunk of the stack applies alike: normalisation, activation, skip."""
    return spec.norm, spec.act, spec.residual


def _copy(module: nn.Module) -> _Norm | None:
    return _Norm(module) if isinstance(module, nn.BatchNorm1d | nn.LayerNorm) else None


def _frozen(net: TinyNet) -> Callable[[], Mapping[str, Any]]:
    """The net's final weights and buffers, copied, as `train_run` keeps them."""
    state = MappingProxyType({k: v.detach().clone() for k, v in net.state_dict().items()})
    return lambda: state


def _tensor(net: TinyNet, name: str) -> torch.Tensor:
    found: torch.Tensor = net.state_dict()[name]
    return found.detach()


def train_together(
    runs: Sequence[tuple[RunSpec, Workshop]], progress: Callable[[float], None] | None = None
) -> list[TrainedRun | Exception]:
    """Each of `runs` (of one `shape_of`) trained, all at once: each as `train_run` trains it.
    A run that fails on its own before training (a probe that divides by a dead net's zero
    gradient) is its error, in its place: the others train without it. `progress` is told
    the fraction of the steps done at each point of the history."""
    if len({shape_of(spec, workshop) for spec, workshop in runs}) != 1:
        raise ValueError("runs of different shapes train apart")
    # A chunk of the stack per kind of run, and within it a stretch per learning rate.
    order = sorted(range(len(runs)), key=lambda i: (_kind(runs[i][0].net), runs[i][0].lr))
    first = runs[0][1]
    data = two_moons(first)  # the seeds change neither the data nor the split
    out: dict[int, TrainedRun | Exception] = {}
    nets: dict[int, TinyNet] = {}
    for i in order:
        spec, workshop = runs[i]
        try:
            if not spec.lr > 0:
                raise ValueError(f"lr must be > 0, got {spec.lr!r}")
            net = build_network(spec.net, workshop)
            if spec.probed:
                init_grad_ratio(net, data.X_train, data.y_train)
        except Exception as error:
            out[i] = error
        else:
            nets[i] = net
    if nets:
        stack = _Stack(list(nets.values()))
        lrs = [runs[i][0].lr for i in nets]
        histories = _train(stack, data, lrs, [runs[i][1] for i in nets], progress)
        stack.unstack(first.steps)
        for (i, net), history in zip(nets.items(), histories, strict=True):
            out[i] = TrainedRun(runs[i][0], history, _frozen(net))
    return [out[i] for i in range(len(runs))]


def _train(
    stack: _Stack,
    data: TwoMoons,
    lrs: Sequence[float],
    workshops: Sequence[Workshop],
    progress: Callable[[float], None] | None = None,
) -> list[History]:
    """`bnvg.experiment.train.train`, for every run of the stack in the same step."""
    recipe, runs = workshops[0], len(workshops)
    X_train, y_train, X_test, y_test = data.X_train, data.y_train, data.X_test, data.y_test
    # A generator per minibatch order, as `train` draws it: runs that share one share it.
    seeds = [w.minibatch_seed for w in workshops]
    generators = {seed: torch.Generator().manual_seed(seed) for seed in dict.fromkeys(seeds)}
    every_train = X_train.expand(runs, *X_train.shape)
    every_test = X_test.expand(runs, *X_test.shape)
    points: list[tuple[list[int], list[float], list[float]]] = [([], [], []) for _ in workshops]
    for step in range(1, recipe.steps + 1):
        drawn = {
            seed: torch.randint(0, recipe.n_train, (recipe.batch,), generator=g)
            for seed, g in generators.items()
        }
        picked = torch.stack([drawn[seed] for seed in seeds])
        x, y = X_train[picked], y_train[picked]
        logits = stack.forward(x, training=True)
        # Each run's mean loss over its own batch, summed: each run's gradient is its own.
        loss = F.binary_cross_entropy_with_logits(logits, y, reduction="none").mean(1).sum()
        loss.backward()
        stack.step(lrs)
        if step % recipe.eval_every == 0 or step == 1:
            with torch.no_grad():
                train_logits = stack.forward(every_train, training=False)
                test_logits = stack.forward(every_test, training=False)
            for i, (steps, losses, accs) in enumerate(points):
                steps.append(step)
                losses.append(bce(train_logits[i], y_train).item())
                correct = ((test_logits[i] > 0).float() == y_test).float()
                accs.append(float(correct.mean().item()))
            if progress is not None:
                progress(step / recipe.steps)
    return [History(tuple(at), tuple(loss), tuple(acc)) for at, loss, acc in points]


def same_bits(runs: Sequence[tuple[RunSpec, Workshop]]) -> bool:
    """Whether `runs` trained together give, on this platform, the bits each gives alone:
    both ways for `CANARY_STEPS` steps (the training path and the evaluation's), every weight,
    statistic and point of the history compared bit for bit."""
    short = [(spec, dataclasses.replace(w, steps=CANARY_STEPS)) for spec, w in runs]
    together = train_together(short)
    data = two_moons(short[0][1])
    for (spec, workshop), run in zip(short, together, strict=True):
        if isinstance(run, Exception):
            continue  # it fails alone too: nothing to compare
        alone = train_run(spec, data, workshop)
        if _bits(alone.history) != _bits(run.history):
            return False
        ours, theirs = run.state(), alone.state()
        if ours.keys() != theirs.keys() or any(
            ours[k].numpy().tobytes() != theirs[k].numpy().tobytes() for k in ours
        ):
            return False
    return True


def _bits(history: History) -> list[str]:
    """A history's every number, exactly (a diverged run's NaN is equal to itself here)."""
    return [float(x).hex() for x in (*history.step, *history.loss, *history.test_acc)]


class RunsTogether:
    """The workshop's runs of one shape, trained at once: declared to claimlog
    (`Declaration.together`) beside `bnvg.experiment.runs.TRAINING`, which they stand in for."""

    def shape(self, name: str, recipe: Workshop) -> str | None:
        return shape_of(RUNS[name], recipe)

    def train(
        self,
        runs: Sequence[tuple[str, Workshop]],
        keys: Sequence[str],
        progress: Callable[[float], None] | None = None,
    ) -> list[TrainedRun | Exception]:
        trained = train_together([(RUNS[name], recipe) for name, recipe in runs], progress)
        return [
            run if isinstance(run, Exception) else dataclasses.replace(run, key=key)
            for run, key in zip(trained, keys, strict=True)
        ]

    def same_bits(self, runs: Sequence[tuple[str, Workshop]]) -> bool:
        return same_bits([(RUNS[name], recipe) for name, recipe in runs])


TOGETHER = RunsTogether()
