"""The kernels a computation calls, heard as it runs: what a full update records.

The fingerprint (`claimlog.kernels`) replays the workshop's own kernels, and this module
finds them. Under a full update, each computed result and each trained run is heard whole
under a `TorchDispatchMode` that notes the signature of every distinct kernel it calls, from
its first call to its last (`Listening`), so that a second phase, a last partial batch or an
evaluation at the end on another shape is seen as well as the first step. A kernel is a
signature but for its float arguments (`_kernel`): Adam's step size changes every step, and
a loop that calls the same kernels with another scalar has shown them already.

A deterministic computation, started twice in one process, calls the same kernels on the
same bits. `record` starts it twice more, each time until `QUIET` calls in a row bring no new
kernel, and compares every output of those first calls: an unseeded generator, or anything
else that makes a second run differ, is refused (`NotDeterministic`) naming the first call
whose bits moved, before anything is recorded. Where a number moved on the reference all the
same, the kernels heard here are held against the record (`apart_from_record`).

A normal session never imports this module: only an update records, and only a number that
moved is examined. Everything here imports torch when called, never when imported.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import claimlog.kernels as fingerprinting
from claimlog.kernels import (
    NO_BITS,
    NotDeterministic,
    describe_kernel,
    digest_of,
    replay,
    uninitialised,
)
from claimlog.store import digest

QUIET = 1_500  # calls in a row with no new kernel: the computation has shown its kernels
CAP = 30_000  # calls at most, whatever is still new (a loop whose shapes never settle)


class _Enough(Exception):
    """Raised through a computation once its kernels are known: it need not go on."""


def _describe(value: Any) -> Any:
    """An operator's argument as JSON: a tensor by dtype, shape and strides (its values are
    the replay's own), everything else as itself or by its kind."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided:
            return {"unreplayable": str(value.layout)}
        return {
            "tensor": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
            "stride": list(value.stride()),
        }
    if isinstance(value, list | tuple):
        return [_describe(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": value.type}
    if isinstance(value, torch.layout | torch.memory_format):
        return {"torch": str(value).removeprefix("torch.")}
    if isinstance(value, torch.Generator):
        return {"generator": None}  # the replay seeds torch's default one
    return {"unreplayable": type(value).__name__}


def signature(op: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """One operator call, as the JSON text the record keeps: "aten.addmm.default" with its
    arguments described (`_describe`)."""
    described = {
        "op": str(op),
        "args": _describe(list(args)),
        "kwargs": {k: _describe(v) for k, v in kwargs.items()},
    }
    return json.dumps(described, sort_keys=True, separators=(",", ":"))


_FLOAT = re.compile(r'\{"float":"[^"]*"\}')


def _kernel(called: str) -> str:
    """A signature's kernel: the signature with every float argument the same."""
    return _FLOAT.sub('{"float":null}', called)


def _computes(op: Any) -> bool:
    """Whether an operator call computes bits of its own: an ATen operator, not a view (the
    profiler's marks and the like are no kernels)."""
    return str(op).startswith("aten.") and not op.is_view


def _calls_of(compute: Callable[[], Any]) -> list[tuple[str, str]]:
    """(signature, digest of its outputs) of each operator call `compute` makes, until its
    kernels are known (`QUIET` calls in a row of kernels seen before, or `CAP`); then it is
    stopped."""
    from torch.utils._python_dispatch import TorchDispatchMode

    calls: list[tuple[str, str]] = []
    seen: set[str] = set()

    class Recorder(TorchDispatchMode):
        quiet = 0

        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]

        def __torch_dispatch__(
            self, op: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = op(*args, **(kwargs or {}))
            if not _computes(op):
                return out
            called = signature(op, args, kwargs or {})
            bits = NO_BITS if uninitialised(str(op)) else digest_of(out)
            calls.append((called, bits))
            kernel = _kernel(called)
            self.quiet = self.quiet + 1 if kernel in seen else 0
            seen.add(kernel)
            if self.quiet >= QUIET or len(calls) >= CAP:
                raise _Enough
            return out

    try:
        with Recorder():
            compute()
    except Exception:
        # Stopped (autograd may wrap the stop in an error of its own), or failed: a
        # computation that fails fails again, outside the recorder, where its error is shown.
        pass
    return calls


def _shape_of(value: Any) -> Any:
    """What of an operator's argument names its kernel, cheaply (a call's whole signature is
    made only for a kernel not seen yet): a tensor by dtype, shape and strides, a float by
    nothing (`_kernel`), a container by its items, anything else as itself."""
    import torch

    if isinstance(value, torch.Tensor):
        return (value.dtype, tuple(value.shape), value.stride(), value.layout)
    if isinstance(value, list | tuple):
        return tuple(_shape_of(v) for v in value)
    if isinstance(value, float):
        return float
    if isinstance(value, bool | int | str | None | torch.dtype | torch.device):
        return value
    return type(value)


class Listening:
    """The kernels a computation calls, heard while it runs, from its first call to its last:
    `with Listening() as heard: compute()`, then `heard.kernels`, {kernel: the signature of
    its first call}. The computation is the one that runs anyway (a run trained, a result
    computed), so hearing it costs little beside it.

    Hearing every kernel call costs more than the computation itself (each, the backward
    pass's included, goes through Python), so the listener hears them while kernels are new,
    and stops once `QUIET` calls in a row brought none, as `_calls_of` does. Then it waits for
    the computation to call a module, or to step an optimiser, on something not seen before
    (another shape of input, another mode, another optimiser or parameter group, another
    setting of one), and hears every kernel call again from there: where a second phase, a
    last partial batch, an evaluation on another shape or a wider net starts. While it waits,
    each module call and each step costs a look at what it takes."""

    def __init__(self) -> None:
        self.kernels: dict[str, str] = {}
        self._hooks: list[Any] = []
        self._lister: Any = None

    def __enter__(self) -> Listening:
        import torch
        from torch.optim import optimizer
        from torch.utils._python_dispatch import TorchDispatchMode

        kernels, seen = self.kernels, set()
        counted: dict[Any, bool] = {}  # by operator: whether it `_computes`, asked once

        class Lister(TorchDispatchMode):
            quiet = 0
            on = False

            def __init__(self) -> None:
                super().__init__()  # type: ignore[no-untyped-call]

            def __torch_dispatch__(
                self, op: Any, types: Any, args: Any = (), kwargs: Any = None
            ) -> Any:
                out = op(*args, **(kwargs or {}))
                counts = counted.get(op)
                if counts is None:
                    counts = counted[op] = _computes(op)
                if counts:
                    shape = (op, _shape_of(args), _shape_of(sorted((kwargs or {}).items())))
                    if shape in seen:
                        self.quiet += 1
                    else:
                        seen.add(shape)
                        self.quiet = 0
                        called = signature(op, args, kwargs or {})
                        kernels.setdefault(_kernel(called), called)
                return out

        lister: Any = Lister()  # entered and left as the computation goes (untyped)
        self._lister = lister
        calls: set[Any] = set()  # the module calls and optimiser steps seen, by what they take

        def hear(call: Any) -> None:
            if call not in calls:
                calls.add(call)
                lister.quiet = 0
                if not lister.on:
                    lister.__enter__()
                    lister.on = True
            elif lister.on and lister.quiet >= QUIET:
                lister.__exit__(None, None, None)
                lister.on = False

        def module_call(module: Any, inputs: Any) -> None:
            hear((type(module), module.training, _shape_of(inputs)))

        def optimiser_step(opt: Any, args: Any, kwargs: Any) -> None:
            groups = tuple(
                tuple(sorted((k, _shape_of(v)) for k, v in group.items()))
                for group in opt.param_groups
            )
            hear((type(opt), groups))

        self._hooks = [
            torch.nn.modules.module.register_module_forward_pre_hook(module_call),
            optimizer.register_optimizer_step_pre_hook(optimiser_step),
        ]
        lister.__enter__()
        lister.on = True
        return self

    def __exit__(self, *exc: object) -> None:
        for hook in self._hooks:
            hook.remove()
        if self._lister.on:
            self._lister.__exit__(None, None, None)
            self._lister.on = False


def kernels_of(compute: Callable[[], Any]) -> dict[str, str]:
    """The kernels `compute` calls, run whole now for no other end (`Listening`); one that
    fails fails again where its error is shown."""
    with Listening() as heard, contextlib.suppress(Exception):
        compute()
    return heard.kernels


@cache
def recording() -> str:
    """How a record is made (this module's code: QUIET, CAP, what a signature and a kernel
    are; and `claimlog.kernels`', what a digest of bits is), part of the key it is kept
    under; read by the first update that records."""
    return digest(*(Path(f).read_bytes().decode() for f in (__file__, fingerprinting.__file__)))


def record(
    name: str, compute: Callable[[], Any], whole: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The kernels of the computation `name`, from its first call to its last: those it
    called as it ran (`whole`, as `Listening` heard them), or run whole once more to hear
    them (`kernels_of`). {signature: digest of what it gave, where its first calls gave it,
    else ""}. Started twice more until its kernels settle, with torch's, numpy's and Python's
    global generators left as they were for the computation itself; NotDeterministic if the
    second start gave other bits."""
    import numpy as np
    import torch

    torch_state, numpy_state, python_state = (
        torch.get_rng_state(),
        np.random.get_state(),
        random.getstate(),
    )
    try:
        first, second = _calls_of(compute), _calls_of(compute)
        moved = _first_moved(first, second)
        if moved is not None:
            raise NotDeterministic(
                f"{name} is not deterministic: started twice in this process, {moved} gave "
                "other bits; seed every generator it draws from inside the computation, and "
                "compute with a fixed thread count"
            )
        if whole is None:
            whole = kernels_of(compute)
    finally:
        torch.set_rng_state(torch_state)
        np.random.set_state(numpy_state)
        random.setstate(python_state)
    settled = {called: bits for called, bits in first if bits != NO_BITS}
    known = {_kernel(called) for called in settled}
    later = {called: "" for kernel, called in whole.items() if kernel not in known}
    return {**settled, **{c: b for c, b in later.items() if not uninitialised(_op(c))}}


def _op(called: str) -> str:
    """The operator of a signature: "aten.addmm.default"."""
    return str(json.loads(called)["op"])


def _first_moved(first: Sequence[tuple[str, str]], second: Sequence[tuple[str, str]]) -> str | None:
    """The first call of `first` whose bits the same call of `second` does not give, for
    people ("its call 3 of aten.normal_.default on float32 [4, 2]"), or None. Calls are
    matched signature by signature, the k-th call of each with the k-th: a computation that
    reads a kept result only the first time it starts makes calls the second start does not."""
    again: dict[str, list[str]] = {}
    for called, bits in second:
        again.setdefault(called, []).append(bits)
    seen: dict[str, int] = {}
    for called, bits in first:
        k = seen[called] = seen.get(called, 0) + 1
        later = again.get(called, [])
        if bits != NO_BITS and k <= len(later) and later[k - 1] != bits:
            return f"its call {k} of {describe_kernel(called)}"
    return None


def apart_from_record(heard: Mapping[str, str], recorded: Mapping[str, str]) -> list[str]:
    """What sets this machine apart from the record, of the kernels a computation was `heard`
    calling here ({kernel: signature}, `Listening`), for people: each that the record never
    heard (another path of the computation here, or a record made by other code), and each
    whose call, as the record holds it, gives other bits here (`replay`). The record's own
    call is replayed, not the one heard: a kernel (an operator on its shapes) is called with
    other scalars too (two layers' bounds of `uniform_`), and its bits are known only for
    the call recorded. An operator that gives memory as it was (`UNINITIALISED`) gives no
    bits to hold. [] where the record holds every kernel, with its bits."""
    known = {_kernel(called): called for called in recorded}
    heard = {k: c for k, c in heard.items() if not uninitialised(_op(c))}  # never recorded
    calls = {kernel: known.get(kernel) for kernel in heard}
    bits_here = replay(c for c in calls.values() if c is not None)
    found = []
    for kernel, called in sorted(heard.items()):
        ours = calls[kernel]
        if ours is None:
            found.append(f"{describe_kernel(called)} is called here, and the record never was")
        elif bits_here.get(ours) != recorded[ours]:
            found.append(f"{describe_kernel(ours)} gives other bits here")
    return found
