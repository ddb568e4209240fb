"""A platform's fingerprint: the bits the workshop's own kernels give on this machine.

Names do not say which bits a machine computes: under the same kernel settings MKL takes a
path of its own on some AMD cores and not on others, `torch.bernoulli_` asks cpuinfo, and
nobody knows what the next release asks. So the platform (`claimlog.platform.Platform`)
carries what its kernels compute, measured. The kernels are the workshop's own, recorded once
by a full update from its computations (`claimlog.hearing`), each as the signature of one
call (the operator, its tensors' dtypes, shapes and strides, its other arguments), and kept
in the reference identity (`snapshots/environment.json`) with the digest of what it gave
there. Here they are **replayed** (`replay`): each signature called on fixed inputs, made
from integer arithmetic that every CPU computes alike, each random operator from the same
seed, and its outputs hashed. The digest of all of them is the fingerprint (`fingerprint`):
two machines that give it are the same platform, whatever their CPUs are called, and a
kernel whose bits differ is named (`describe_kernel`, `differing`).

A session needs the fingerprint before its first claim, and asking torch costs its import,
so the bits are kept in pytest's cache under what they depend on (`kernel_bits`): a warm
session knows its platform without importing torch. Everything here imports torch when
called, never when imported.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from claimlog.machine import import_torch, torch_facts_key
from claimlog.platform import KERNELS, NOT_SET, SET_BY_CLAIMLOG, VARIABLES
from claimlog.store import Entry, Memo, Store, digest, read_json


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


class NotDeterministic(Exception):
    """Started twice in one process, a computation gave other bits (the message says where):
    refused by `claimlog.hearing.record`, caught wherever a result is computed."""


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


def uninitialised(op_name: str) -> bool:
    """Whether an operator gives memory as it was (`UNINITIALISED`): no bits of its own."""
    return op_name.rsplit(".", 1)[0] in UNINITIALISED


def digest_of(value: Any) -> str:
    h = hashlib.sha256()
    _bits(value, h)
    return h.hexdigest()[:16]


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
                gives_nothing = uninitialised(described["op"])
                out[called] = NO_BITS if gives_nothing else digest_of(given)
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

    return Memo(store, "kernels' bits").get(
        "the kernels' bits",
        _kernel_bits_key(chosen, threads),
        replayed,
        encode=lambda answer: json.dumps(answer, sort_keys=True).encode(),
        decode=_bits_of,
    )


def reference_kernels(environment: Path) -> dict[str, str]:
    """The workshop's kernels as the reference identity (`environment`,
    snapshots/environment.json) records them, each with the digest of what it gave there:
    {} where it records none, or cannot be read."""
    data = read_json(environment)
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
