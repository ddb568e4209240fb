"""A platform's fingerprint: the bits the workshop's own kernels give on this machine.

Names do not say which bits a machine computes: under the same kernel settings MKL takes a
path of its own on some AMD cores and not on others, `torch.bernoulli_` asks cpuinfo, and
nobody knows what the next release asks. So the platform (`claimlog.platform.Platform`)
carries what its kernels compute, measured:

- **recorded once**, under a full update, from the workshop's own computations: each
  computed result and each trained run is run whole under a `TorchDispatchMode` that notes
  the signature of every distinct kernel it calls, from its first call to its last (the
  operator, its tensors' dtypes, shapes and strides, its other arguments), so that a second
  phase, a last partial batch or an evaluation at the end on another shape is seen as well
  as the first step (`record`). A kernel is a signature but for its float arguments: Adam's
  step size changes every step, and a loop that calls the same kernels with another scalar
  has shown them already. The signatures go into the reference identity
  (`snapshots/environment.json`), each with the digest of what it gives there;
- **replayed** anywhere (`replay`): each signature called on fixed inputs, made from integer
  arithmetic that every CPU computes alike, each random operator from the same seed, and
  its outputs hashed. The digest of all of them is the fingerprint: two machines that give
  it are the same platform, whatever their CPUs are called, and a kernel whose bits differ
  is named (`describe_kernel`).

A deterministic computation, started twice in one process, calls the same kernels on the
same bits. `record` starts it twice more, each time until `QUIET` calls in a row bring no new
kernel, and compares every output of those first calls: an unseeded generator, or anything
else that makes a second run differ, is refused (`NotDeterministic`) naming the first call
whose bits moved, before anything is recorded.

Everything here imports torch when called, never when imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from claimlog.machine import import_torch, torch_facts_key
from claimlog.platform import KERNELS, NOT_SET, SET_BY_CLAIMLOG, VARIABLES
from claimlog.store import Entry, Memo, Store, digest

QUIET = 1_500  # calls in a row with no new kernel: the computation has shown its kernels
CAP = 30_000  # calls at most, whatever is still new (a loop whose shapes never settle)


class NotDeterministic(Exception):
    """Started twice in one process, a computation gave other bits (the message says where)."""


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


def _bits(value: Any, into: Any) -> None:
    """Feed what `value` holds, bit for bit, to the hash `into`."""
    import torch

    if isinstance(value, torch.Tensor):
        flat = value.detach().reshape(-1).contiguous()
        into.update(f"{flat.dtype}{tuple(value.shape)}".encode())
        into.update(flat.view(torch.uint8).numpy().tobytes())
    elif isinstance(value, list | tuple):
        for item in value:
            _bits(item, into)
    elif value is None or isinstance(value, bool | int | float | complex | str):
        into.update(repr(value).encode())
    else:
        into.update(type(value).__name__.encode())  # a handle, not bits


# Operators whose outputs hold whatever memory held, or the storage they are handed: their
# bits are nobody's, or some other call's.
NO_BITS = "no bits of its own"
UNINITIALISED = (
    "aten.set_",
    "aten.empty",
    "aten.empty_like",
    "aten.empty_strided",
    "aten.new_empty",
    "aten.new_empty_strided",
    "aten.resize_",
)


def _uninitialised(op_name: str) -> bool:
    return op_name.rsplit(".", 1)[0] in UNINITIALISED


def digest_of(value: Any) -> str:
    h = hashlib.sha256()
    _bits(value, h)
    return h.hexdigest()[:16]


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
            bits = NO_BITS if _uninitialised(str(op)) else digest_of(out)
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
    are), part of the key it is kept under; read by the first update that records."""
    return digest(Path(__file__).read_bytes().decode())


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
    return {**settled, **{c: b for c, b in later.items() if not _uninitialised(_op(c))}}


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


# -- the replay -----------------------------------------------------------------------------
def _operator(name: str) -> Any:
    import torch

    namespace, op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


class _Unreplayable(Exception):
    pass


def _filled(spec: Mapping[str, Any], salt: int) -> Any:
    """A tensor of the described dtype, shape and strides, filled with values every CPU
    computes alike: integer arithmetic, then one exact division (floats in (0, 1), valid for
    probabilities, logarithms and square roots; integers 0 and 1, valid as indices)."""
    import torch

    dtype = getattr(torch, spec["tensor"])
    shape, stride = spec["shape"], spec["stride"]
    size = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    k = (torch.arange(size, dtype=torch.int64) * 2654435761 + salt * 40503) % 65536
    if dtype.is_floating_point or dtype.is_complex:
        values = ((k.to(torch.float64) + 0.5) / 65536).to(dtype)
    elif dtype == torch.bool:
        values = k % 2 == 0
    else:
        values = (k % 2).to(dtype)
    return values.as_strided(shape, stride)


def _built(described: Any, salts: Iterable[int]) -> Any:
    import torch

    if isinstance(described, list):
        return [_built(d, salts) for d in described]
    if not isinstance(described, dict):
        return described
    if "tensor" in described:
        return _filled(described, next(iter(salts)))
    if "float" in described:
        return float.fromhex(described["float"])
    if "dtype" in described:
        return getattr(torch, described["dtype"])
    if "device" in described:
        return torch.device(described["device"])
    if "torch" in described:
        return getattr(torch, described["torch"])
    if "generator" in described:
        return None
    raise _Unreplayable(described.get("unreplayable", "an argument of no known kind"))


def replay(signatures: Iterable[str]) -> dict[str, str]:
    """{signature: digest of what it gives here}, each called on fixed inputs (`_filled`),
    each random operator after seeding torch's default generator with 0 (torch's global
    generator is left as it was). A call that cannot be made here is digested by its error,
    which is a bit of the platform too."""
    import itertools

    import torch

    out: dict[str, str] = {}
    with torch.random.fork_rng(devices=[]):
        for called in sorted(set(signatures)):
            described = json.loads(called)
            salts = itertools.count(1)
            try:
                args = _built(described["args"], salts)
                kwargs = {k: _built(v, salts) for k, v in described["kwargs"].items()}
                torch.manual_seed(0)
                given = _operator(described["op"])(*args, **kwargs)
                uninitialised = _uninitialised(described["op"])
                out[called] = NO_BITS if uninitialised else digest_of(given)
            except _Unreplayable as why:
                out[called] = f"unreplayable: {why}"
            except Exception as error:  # how it fails is what it gives here
                out[called] = f"error: {type(error).__name__}"
    return out


def fingerprint(digests: Mapping[str, str]) -> str:
    """The digest of every kernel's digest: what the platform's identity carries ("" for no
    kernels: a workshop whose record names none yet)."""
    if not digests:
        return ""
    h = hashlib.sha256()
    for called in sorted(digests):
        h.update(called.encode() + b"\0" + digests[called].encode() + b"\n")
    return h.hexdigest()[:12]


def describe_kernel(called: str) -> str:
    """A signature for people: "aten.addmm.default on float32 [300, 32], [32, 32] (strided)"."""
    described = json.loads(called)
    tensors: list[str] = []
    for tensor in _tensors([described["args"], described["kwargs"]]):
        shape, stride = tensor["shape"], tensor["stride"]
        contiguous = all(
            stride[i] == math.prod(shape[i + 1 :]) for i in range(len(shape)) if shape[i] > 1
        )
        tensors.append(f"{tensor['tensor']} {shape}" + ("" if contiguous else " (strided)"))
    return f"{described['op']} on " + ", ".join(tensors) if tensors else described["op"]


def _tensors(described: Any) -> Iterator[dict[str, Any]]:
    """The tensors of a described call's arguments, in order."""
    if isinstance(described, list):
        for value in described:
            yield from _tensors(value)
    elif isinstance(described, dict) and "tensor" in described:
        yield described
    elif isinstance(described, dict):
        for value in described.values():
            yield from _tensors(value)


# Kernels a reader knows by what they do, and whose paths are known to depend on the CPU:
# MKL's matrix products (its Zen path), and random draws (`bernoulli_` asks cpuinfo).
FAMILIES = {
    "matrix products": {"mm", "addmm", "bmm", "baddbmm", "mv", "addmv", "dot", "linear", "matmul"},
    "random draws": {"bernoulli", "bernoulli_", "uniform_", "normal_", "rand", "randn", "randint"},
}


def family(called: str) -> str | None:
    """What a kernel is, for people ("matrix products"), where it is one of `FAMILIES`."""
    name = json.loads(called)["op"].split(".")[1]
    return next((f for f, names in FAMILIES.items() if name in names), None)


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
    heard = {k: c for k, c in heard.items() if not _uninitialised(_op(c))}  # never recorded
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


def differing(here: Mapping[str, str], reference: Mapping[str, str]) -> list[str]:
    """The kernels that give other bits here than `reference` says, for people, widest
    first (the products that set a platform apart are usually the wide ones)."""
    moved = [s for s in reference if here.get(s) != reference[s]]
    return [describe_kernel(s) for s in sorted(moved, key=lambda s: (-_elements(s), s))]


def _elements(called: str) -> int:
    """How many numbers a call's tensors hold, together: how wide it is."""
    described = json.loads(called)
    return sum(math.prod(t["shape"]) for t in _tensors([described["args"], described["kwargs"]]))


# -- the fingerprint: the bits the workshop's own kernels give here --------------------------
PRELOAD = "LD_PRELOAD"  # a library loaded before the others can answer for MKL (a shim)


def _kernel_bits_key(
    signatures: Iterable[str], threads: int, environ: Mapping[str, str] = os.environ
) -> str:
    """What the kernels' bits depend on, read without torch: the kernels, torch and the CPU
    (`torch_facts_key`), every kernel variable, what is preloaded (in `environ`, the
    variables of the process that computes them), and the threads."""
    inputs = {
        "kernels": digest(*sorted(signatures)),
        "torch facts": torch_facts_key(environ),
        "threads": threads,
        **{name: environ.get(name, "") for name in (*VARIABLES, PRELOAD)},
    }
    return digest(json.dumps(inputs, sort_keys=True))


def _bits_of(entry: Entry) -> dict[str, str]:
    found = json.loads(entry.content)
    if not isinstance(found, dict):
        raise ValueError(f"not the kernels' bits: {found!r}")
    return {str(k): str(v) for k, v in found.items()}


def kernel_bits(signatures: Iterable[str], threads: int, store: Store | None) -> dict[str, str]:
    """{kernel: the digest of what it gives here} for the workshop's kernels
    (`claimlog.kernels.replay`, with `threads` threads). Asking costs torch's import and a
    tenth of a second, so the answer is kept in `store` (pytest's cache) under a key of what
    it depends on; without a store, torch is asked. No kernels (a record that names none, a
    workshop that computes nothing in torch): nothing to ask, and torch is not imported."""
    chosen = sorted(set(signatures))
    if not chosen:
        return {}

    def replayed() -> dict[str, str]:
        import_torch().set_num_threads(threads)
        return replay(chosen)

    bits = Memo(store, "kernels' bits").get(
        "the kernels' bits",
        _kernel_bits_key(chosen, threads),
        replayed,
        encode=lambda answer: json.dumps(answer, sort_keys=True).encode(),
        decode=_bits_of,
    )
    assert bits is not None  # waiting for the lock always gives an answer
    return bits


def reference_kernels(environment: Path) -> dict[str, str]:
    """The workshop's kernels as the reference identity (`environment`,
    snapshots/environment.json) records them, each with the digest of what it gave there:
    {} where it records none, or cannot be read."""
    try:
        data = json.loads(environment.read_text())
    except (OSError, ValueError):
        return {}
    kernels = data.get(KERNELS) if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in kernels.items()} if isinstance(kernels, dict) else {}


_ASK_KERNELS = """
import json, sys
from pathlib import Path
from claimlog.kernels import fingerprint, kernel_bits
from claimlog.store import Store
kernels, threads, store = json.loads(sys.stdin.read())
bits = kernel_bits(kernels, threads, Store(Path(store)) if store else None)
print(fingerprint(bits))
"""


def fingerprint_under(
    variables: Mapping[str, str], threads: int, kernels: Iterable[str], store: Path | None
) -> str:
    """The fingerprint a session with the kernel `variables` (NOT_SET: left to the machine)
    and `threads` threads computes on, on this machine: read from `store` (pytest's cache,
    where `kernel_bits` keeps it) if a process with those variables kept it there, else asked
    of a process of its own, since torch reads the variables once, as it is imported. "" for
    a workshop whose record names no kernels."""
    chosen = sorted(set(kernels))
    if not chosen:
        return ""
    env = {k: v for k, v in os.environ.items() if k not in (*VARIABLES, SET_BY_CLAIMLOG)}
    env.update({k: v for k, v in variables.items() if v != NOT_SET})
    kept = kept_kernel_bits(chosen, threads, Store(store), env) if store else None
    if kept is not None:
        return fingerprint(kept)
    answer = subprocess.run(
        [sys.executable, "-c", _ASK_KERNELS],
        input=json.dumps([chosen, threads, str(store) if store else ""]),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return answer.stdout.strip()


def kept_kernel_bits(
    signatures: Iterable[str], threads: int, store: Store, environ: Mapping[str, str] = os.environ
) -> dict[str, str] | None:
    """`kernel_bits` as a process on this platform (with the variables `environ`) kept them
    in `store`, or None: known without importing torch."""
    chosen = sorted(set(signatures))
    if not chosen:
        return {}
    key = _kernel_bits_key(chosen, threads, environ)
    return Memo(store, "kernels' bits").peek(key, _bits_of)
