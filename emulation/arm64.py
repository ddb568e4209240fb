"""The workshop's evidence on Linux arm64, computed here under QEMU's user-mode emulation.

    nox -s arm64                     # both CPU models; or, without nox:
    python emulation/arm64.py --cpu neoverse-n1

Many readers run Linux on arm64 (Graviton, Ampere, Docker and Linux VMs on Apple silicon,
Raspberry Pi). This builds, from Debian's and PyPI's packages only, an aarch64 Python 3.11
with the project's pinned dependencies, runs it under `qemu-aarch64` (from Debian trixie's
statically linked `qemu-user`), and computes the workshop's fragment of the evidence there
with `python -m bnvg.sweep --release`, once per CPU model:

- `neoverse-n1` (NEON; Graviton2, Ampere Altra, the CPU QEMU and most Apple-silicon VMs
  present), where torch's ATen kernels are "DEFAULT";
- `neoverse-v1` (SVE, 256 bits; Graviton3), where they are "SVE256".

Nothing is installed into this machine: Debian's arm64 packages are fetched with an apt state
of their own and unpacked with `dpkg -x`, PyPI's aarch64 wheels are unpacked by this
machine's pip with `--target`. Everything lives in the cache folder (`.nox/arm64/` by
default, about 5 GB), each step done once: a second call builds nothing, and the sweep
computes nothing for a fragment that is already there.

QEMU computes IEEE arithmetic in software, instruction by instruction, so a fragment is
expected to be what real hardware of that CPU model computes; the platform records that it
was emulated (`CLAIMLOG_EMULATION`), and nobody here has compared one with a real Graviton yet.
The project's code is not installed: the emulated Python reads it from this checkout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEBIAN = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
QEMU_SUITE = "trixie"  # QEMU 10: imports torch without a faked /proc/cpuinfo (7.2 does not)
PYTHON_SUITE = "bookworm"  # Python 3.11, the reference environment's
# The aarch64 Python and what torch, numpy and matplotlib load beside it: Python's own
# dependencies, C++'s runtime and OpenMP. Debian's names; nothing else from the package.
SYSROOT_PACKAGES = [
    "python3.11",
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "media-types",
    "libc6",
    "libgcc-s1",
    "libstdc++6",
    "libgomp1",
    "zlib1g",
    "libexpat1",
    "libffi8",
    "libssl3",
    "libbz2-1.0",
    "liblzma5",
    "libsqlite3-0",
    "libuuid1",
    "libncursesw6",
    "libtinfo6",
    "libreadline8",
    "libcrypt1",
    "libnsl2",
    "libtirpc3",
    "libtirpc-common",
    "libgssapi-krb5-2",
    "libk5crypto3",
    "libkeyutils1",
    "libkrb5-3",
    "libkrb5support0",
    "libcom-err2",
    "libzstd1",
    "libdb5.3",
    "libgdbm6",
    "libgdbm-compat4",
    "ca-certificates",
    "libmd0",
]
# Each CPU model's MIDR_EL1, which the kernel shows in sysfs and oneDNN reads to know the CPU
# (without it oneDNN says "Can't open MIDR_EL1 sysfs entry").
CPUS = {
    "neoverse-n1": "0x00000000414fd0c1",
    "neoverse-v1": "0x00000000411fd402",
}
# Speed under emulation, for the progress line: a claims session took 16x (NEON) and 23x
# (SVE) the workshop script's native time on an AMD EPYC 26/2, plus about 40 s of imports.
SLOWDOWN = {"neoverse-n1": 16, "neoverse-v1": 23}
PYPI_PLATFORMS = [f"manylinux_2_{v}_aarch64" for v in range(17, 37)] + ["manylinux2014_aarch64"]


def say(text: str) -> None:
    print(f"arm64: {text}", flush=True)


def run(*command: str | Path, **kwargs: object) -> None:
    subprocess.run([str(c) for c in command], check=True, **kwargs)  # type: ignore[call-overload]


@contextmanager
def progress(what: str) -> Iterator[None]:
    """Say every minute how long `what` has run, then how long it took: the steps take
    minutes, and their own tools are quiet meanwhile."""
    start = time.monotonic()
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(60):
            say(f"{what}: {(time.monotonic() - start) / 60:.0f} min so far")

    threading.Thread(target=heartbeat, daemon=True).start()
    try:
        yield
    finally:
        done.set()
    say(f"{what}: done in {(time.monotonic() - start) / 60:.1f} min")


class Step:
    """A step done once: its folder, and a stamp of what it was made from. A different
    stamp (another pin, another package list) or a step killed halfway makes it again."""

    def __init__(self, folder: Path, made_from: object) -> None:
        self.folder = folder
        self.stamp = folder.with_name(folder.name + ".done")
        self.made_from = json.dumps(made_from, sort_keys=True)

    def done(self) -> bool:
        return self.stamp.exists() and self.stamp.read_text() == self.made_from

    def start(self) -> Path:
        self.stamp.unlink(missing_ok=True)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        return self.folder

    def finish(self) -> None:
        self.stamp.write_text(self.made_from)


def apt(cache: Path, suite: str, architecture: str) -> list[str]:
    """apt-get's options for an apt state of its own under `cache`: `suite`'s packages for
    `architecture`, never this machine's package database."""
    state = cache / f"apt-{suite}-{architecture}"
    for folder in ("lists/partial", "archives/partial"):
        (state / folder).mkdir(parents=True, exist_ok=True)
    (state / "status").touch()
    sources = state / "sources.list"
    sources.write_text(f"deb [arch={architecture} signed-by={KEYRING}] {DEBIAN} {suite} main\n")
    return [
        f"-oDir::State::Lists={state / 'lists'}",
        f"-oDir::State::status={state / 'status'}",
        f"-oDir::Cache={state}",
        f"-oDir::Cache::archives={state / 'archives'}",
        f"-oDir::Etc::SourceList={sources}",
        "-oDir::Etc::SourceParts=/nonexistent",
        f"-oAPT::Architecture={architecture}",
        f"-oAPT::Architectures::={architecture}",
        "-oDebug::NoLocking=1",
        "-qq",
    ]


def debian_packages(
    cache: Path, suite: str, architecture: str, names: list[str], into: Path
) -> None:
    """Fetch `names` from Debian `suite` for `architecture` and unpack them into `into`."""
    options = apt(cache, suite, architecture)
    run("apt-get", *options, "update")
    debs = cache / f"debs-{suite}-{architecture}"
    shutil.rmtree(debs, ignore_errors=True)
    debs.mkdir()
    run("apt-get", *options, "download", *names, cwd=debs, stderr=subprocess.DEVNULL)
    for deb in sorted(debs.glob("*.deb")):
        run("dpkg", "-x", deb, into)
    shutil.rmtree(debs)


def pinned_dependencies() -> list[str]:
    """The engine's pinned dependencies with the extras bnvg uses, and bnvg's own; claimlog
    itself is read from this checkout."""
    engine = tomllib.loads((ROOT / "engine" / "pyproject.toml").read_text())["project"]
    bnvg = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    extras = engine["optional-dependencies"]
    pins = [*engine["dependencies"], *extras["text"], *extras["sweep"], *bnvg]
    return [d for d in pins if not d.startswith("claimlog")]


def build(cache: Path) -> dict[str, Path]:
    """QEMU, the aarch64 Python and its site-packages under `cache`, each built once."""
    cache.mkdir(parents=True, exist_ok=True)
    qemu = Step(cache / "qemu", [QEMU_SUITE, "qemu-user"])
    if not qemu.done():
        say(f"fetching QEMU from Debian {QEMU_SUITE} (qemu-user, 71 MB)")
        debian_packages(cache, QEMU_SUITE, "amd64", ["qemu-user"], qemu.start())
        for other in (qemu.folder / "usr/bin").iterdir():  # 40 targets: aarch64 is the one
            if other.name != "qemu-aarch64":
                other.unlink()
        shutil.rmtree(qemu.folder / "usr/share", ignore_errors=True)
        qemu.finish()
    sysroot = Step(cache / "sysroot", [PYTHON_SUITE, SYSROOT_PACKAGES])
    if not sysroot.done():
        say(f"fetching an arm64 Python 3.11 from Debian {PYTHON_SUITE} (36 packages, 14 MB)")
        debian_packages(cache, PYTHON_SUITE, "arm64", SYSROOT_PACKAGES, sysroot.start())
        sysroot.finish()
    dependencies = pinned_dependencies()
    site = Step(cache / "site-packages", dependencies)
    if not site.done():
        say(
            "fetching the pinned dependencies' aarch64 wheels from PyPI (torch's is the CUDA "
            "build: 2.8 GB with its nvidia libraries) and unpacking them (4.9 GB)"
        )
        wheels = cache / "wheels"
        tags = [f"--platform={p}" for p in PYPI_PLATFORMS]
        tags += ["--python-version=3.11", "--implementation=cp", "--abi=cp311", "--abi=abi3"]
        tags += ["--abi=none", "--only-binary=:all:"]
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
        with progress("downloading"):
            run(*pip, "download", f"--dest={wheels}", *tags, *dependencies)
        target = site.start()
        with progress("unpacking"):
            run(
                *pip,
                "install",
                f"--target={target}",
                "--no-index",
                f"--find-links={wheels}",
                *tags,
                *dependencies,
            )
        shutil.rmtree(wheels)
        site.finish()
    return {
        "qemu": qemu.folder / "usr/bin/qemu-aarch64",
        "sysroot": sysroot.folder,
        "site": site.folder,
    }


def qemu_version(qemu: Path) -> str:
    first = subprocess.run([qemu, "-version"], capture_output=True, text=True).stdout
    return first.split()[2] if first else "?"  # "qemu-aarch64 version 10.0.13 (Debian ...)"


def python_for(cache: Path, built: dict[str, Path], cpu: str) -> Path:
    """A `python` that runs the aarch64 Python under QEMU as `cpu`. It is a script of this
    machine, so a process it starts with sys.executable (pytest's, Dask's) is emulated too."""
    # The sysroot again, as hard links (it costs nothing twice), with the CPU model's MIDR.
    made = Step(cache / cpu / "root", [PYTHON_SUITE, SYSROOT_PACKAGES, CPUS[cpu]])
    root = made.folder
    if not made.done():
        run("cp", "-al", f"{built['sysroot']}/.", made.start())
        midr = root / "sys/devices/system/cpu/cpu0/regs/identification/midr_el1"
        midr.parent.mkdir(parents=True)
        midr.write_text(CPUS[cpu] + "\n")
        made.finish()
    python = cache / cpu / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    emulation = f"QEMU {qemu_version(built['qemu'])}, -cpu {cpu}"
    python.write_text(
        "#!/bin/sh\n"
        f"export PYTHONPATH='{built['site']}:{ROOT}'\n"
        f"export CLAIMLOG_EMULATION='{emulation}'\n"
        f"exec '{built['qemu']}' -L '{root}' -cpu {cpu} -0 '{python}' "
        f"'{root}/usr/bin/python3.11' \"$@\"\n"
    )
    python.chmod(0o755)
    return python


def compute(python: Path, cpu: str, script_seconds: float) -> None:
    """The workshop's fragment on `cpu` (if it is missing) and the merge."""
    expected = 40 + SLOWDOWN[cpu] * script_seconds
    say(
        f"{cpu}: the workshop's claims under emulation (about {expected / 60:.0f} min if its "
        "fragment is missing)"
    )
    with progress(cpu):
        run(python, "-m", "claimlog.sweep", "--release", "--workers=1", cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cpu",
        choices=sorted(CPUS),
        action="append",
        help="a CPU model to emulate (default: every one)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=ROOT / ".nox" / "arm64",
        help="where the emulated environment is kept (default: .nox/arm64)",
    )
    parser.add_argument(
        "--script-seconds",
        type=float,
        default=25.0,
        help="the workshop script's time natively here, for the estimates",
    )
    args = parser.parse_args(argv)
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        parser.error("this needs Debian's apt-get and dpkg (a Debian or Ubuntu machine)")
    built = build(args.cache.resolve())
    for cpu in args.cpu or sorted(CPUS):
        compute(python_for(args.cache.resolve(), built, cpu), cpu, args.script_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
