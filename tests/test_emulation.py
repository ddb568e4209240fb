"""`nox -s arm64`'s builder (emulation/arm64.py), without building: what it keeps, what it runs.

The build itself fetches 2.8 GB and the emulated sessions take minutes: they are evidence,
run by hand (see docs/platforms.md, "arm64"), not tests.
"""

import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def arm64():
    spec = importlib.util.spec_from_file_location("arm64", ROOT / "emulation" / "arm64.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_step_is_done_once_and_again_when_what_it_is_made_from_changes(arm64, tmp_path):
    step = arm64.Step(tmp_path / "site-packages", ["torch==2.13.0"])
    assert not step.done()
    (step.start() / "half").write_text("a step killed halfway is not done")
    assert not step.done()
    step.finish()
    assert step.done()
    assert not arm64.Step(tmp_path / "site-packages", ["torch==2.14.1"]).done()
    arm64.Step(tmp_path / "site-packages", ["torch==2.14.1"]).start()
    assert not (tmp_path / "site-packages" / "half").exists() and not step.done()


def test_apt_keeps_a_state_of_its_own_and_never_the_machines(arm64, tmp_path):
    options = arm64.apt(tmp_path, "bookworm", "arm64")
    assert f"-oDir::State::status={tmp_path / 'apt-bookworm-arm64' / 'status'}" in options
    assert (
        "-oAPT::Architecture=arm64" in options and "-oDir::Etc::SourceParts=/nonexistent" in options
    )
    sources = (tmp_path / "apt-bookworm-arm64" / "sources.list").read_text()
    assert sources.startswith("deb [arch=arm64 signed-by=") and " bookworm main" in sources


def test_each_cpu_model_gets_a_python_that_runs_under_qemu_as_that_cpu(
    arm64, tmp_path, monkeypatch
):
    sysroot = tmp_path / "sysroot"
    (sysroot / "usr" / "bin").mkdir(parents=True)
    qemu = tmp_path / "qemu-aarch64"
    qemu.write_text(
        "#!/bin/sh\necho 'qemu-aarch64 version 10.0.13 (Debian 1:10.0.13+ds-0+deb13u1)'\n"
    )
    qemu.chmod(0o755)
    built = {"qemu": qemu, "sysroot": sysroot, "site": tmp_path / "site"}
    python = arm64.python_for(tmp_path, built, "neoverse-v1")
    script = python.read_text()
    assert "export CLAIMLOG_EMULATION='QEMU 10.0.13, -cpu neoverse-v1'" in script
    assert f"-L '{tmp_path / 'neoverse-v1' / 'root'}' -cpu neoverse-v1 -0 '{python}'" in script
    midr = tmp_path / "neoverse-v1/root/sys/devices/system/cpu/cpu0/regs/identification/midr_el1"
    assert midr.read_text() == "0x00000000411fd402\n"  # Neoverse-V1's: implementer 0x41, part 0xd40
    assert subprocess.run(["sh", "-n", str(python)]).returncode == 0  # a valid shell script
