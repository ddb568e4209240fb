"""What the experiment computes, as plain values: no torch is needed to hold or read them.

The measurements (`measure`), the eval-bug demonstration (`eval_bug`), the autograd check
(`sigmoid_facts`) and the training runs (`train`) return these frozen dataclasses of numbers.
Keeping them apart from the code that computes them lets a session that reuses a result from
pytest's cache (`claimlog.plugin.fixtures`) read it without importing torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bnvg.experiment.config import TARGET_ACCURACY, WORKSHOP, RunSpec, Workshop

if TYPE_CHECKING:
    from bnvg.experiment.model import TinyNet


@dataclass(frozen=True)
class LayerStats:
    """One hidden layer's row of the S4 table."""

    layer: int  # 1-based, as the workshop counts
    w_grad: float  # ||dL/dW_k||, Frobenius norm
    h_grad: float  # ||dL/dh_k||, the backward signal arriving at this layer's output
    z_pre_std: float  # std of the Linear output
    z_std: float  # std after normalisation (batch norm pins it near 1)
    h_std: float  # std of the activation
    slope: float  # mean sigmoid slope sigma'(z) over the batch (at most 0.25)
    sat_pct: float  # % of units whose slope is below SATURATED_SLOPE
    w_gain: float  # RMS singular value of W_k: ||W||_F / sqrt(min(shape))


@dataclass(frozen=True)
class AtInit:
    """The whole S4 measurement of one network."""

    loss: float
    layers: tuple[LayerStats, ...]
    out_grad: float  # ||dL/dW|| of the output layer

    @property
    def grad_ratio(self) -> float:
        """Layer-1 weight gradient over the output layer's: the vanishing-gradient fingerprint."""
        return self.layers[0].w_grad / self.out_grad

    @property
    def times_smaller(self) -> float:
        """How many times smaller the layer-1 gradient is than the output's (e.g. 3015)."""
        return self.out_grad / self.layers[0].w_grad

    @property
    def shrink_factors(self) -> tuple[float, ...]:
        """||dL/dh_k|| / ||dL/dh_k+1|| for k = 1 .. depth-1: the per-layer backward shrink."""
        ls = self.layers
        return tuple(ls[k].h_grad / ls[k + 1].h_grad for k in range(len(ls) - 1))


@dataclass(frozen=True)
class EvalBug:
    """Test accuracy of one trained batch-norm net, predicted three ways."""

    eval_mode: float  # model.eval(): running statistics (correct)
    train_mode_full_batch: float  # train mode, the whole test set as one batch
    train_mode_small_batches: float  # train mode, the test set `batch` points at a time
    batch: int  # the small batch size (2: the smallest batch norm can normalise)
    gamma: tuple[float, ...]  # learned scale of the first batch-norm layer, one per neuron
    beta: tuple[float, ...]  # learned shift of the first batch-norm layer


@dataclass(frozen=True)
class LogitGradient:
    """Autograd's dL/dz for BCE(sigmoid(z), y), beside the closed form p - y."""

    z: float
    y: float
    p: float
    formula: float  # p - y
    autograd: float  # dL/dz from loss.backward()


@dataclass(frozen=True)
class History:
    """What one training run recorded, at steps 1, eval_every, 2 * eval_every, ..."""

    step: tuple[int, ...]
    loss: tuple[float, ...]  # full training-set BCE
    test_acc: tuple[float, ...]  # fraction of the test set classified correctly

    @property
    def final_loss(self) -> float:
        return self.loss[-1]

    @property
    def final_acc(self) -> float:
        return self.test_acc[-1]

    @property
    def best_acc(self) -> float:
        return max(self.test_acc)

    def never_at_target(self, recorded: Sequence[int]) -> str | None:
        """Why "never at 90%" does not hold of this history, or None where it does: it
        records every step of `recorded` (the recipe's, `Workshop.recorded_steps`) and its
        test accuracy is below 90% at each."""
        if tuple(self.step) != tuple(recorded):
            return f"the history records {len(self.step)} points, the recipe {len(recorded)}"
        best = max(range(len(self.step)), key=lambda i: self.test_acc[i])
        if self.test_acc[best] >= TARGET_ACCURACY:
            return f"{self.test_acc[best] * 100:.1f}% at step {self.step[best]}"
        return None

    @property
    def first_step_at_target(self) -> int | None:
        """The first recorded step with test accuracy >= 90%, or None if it never got there."""
        return next(
            (s for s, a in zip(self.step, self.test_acc, strict=True) if a >= TARGET_ACCURACY),
            None,
        )


@dataclass(frozen=True)
class TrainedRun:
    """A finished run: its history, and its final weights kept out of anyone's reach.

    The weights are loaded when first asked for (`network`): a claim that reads only the
    history, and a figure reused from the cache, need no torch. `key` is the run's key in the
    store (`bnvg.experiment.runs`), when it has one: the same key, the same weights.
    """

    spec: RunSpec
    history: History
    _state: Callable[[], Mapping[str, Any]] = field(repr=False)
    key: str = ""

    def state(self) -> Mapping[str, Any]:
        """The final weights and buffers, by name (tensors; read-only to callers)."""
        return self._state()

    def network(self, workshop: Workshop = WORKSHOP) -> TinyNet:
        """A fresh copy of the trained network, in eval mode; changing it changes nothing
        any other caller sees."""
        from bnvg.experiment.model import build_network

        net = build_network(self.spec.net, workshop)
        net.load_state_dict({k: v.clone() for k, v in self.state().items()})
        net.eval()
        return net
