"""The reference kernels and the platform: what is set, who set it, and what moves the floats."""

import subprocess
import sys
from types import SimpleNamespace

import pytest

from claimlog import machine
from claimlog import platform as kernels
from claimlog.platform import Platform
from claimlog.store import Store


def identity(env):
    return Platform.from_json(env).identity()


def platform_id(env):
    return Platform.from_json(env).id


def reference_values():
    return {**kernels.TORCH_REFERENCE, "NPY_DISABLE_CPU_FEATURES": machine.numpy_reference()}


REFERENCE_ENV = {
    "machine": "x86_64",
    "torch": "2.13.0+cpu",
    "numpy": "2.2.6",
    "numpy simd": "AVX2",
    "cpu capability": "AVX2",
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "torch threads": "1",
}


@pytest.fixture
def avx2(monkeypatch):
    monkeypatch.setattr(kernels, "x86_64", lambda: True)
    monkeypatch.setattr(kernels, "has_avx2", lambda: True)


def test_the_reference_is_set_where_the_user_set_nothing(avx2):
    env = {}
    origins = kernels.apply(environ=env)
    assert {k: env[k] for k in kernels.VARIABLES} == reference_values()
    assert set(origins.values()) == {kernels.REFERENCE_DEFAULT}
    assert kernels.set_by_user(env) == []


def test_a_variable_the_user_set_wins_and_is_recorded_as_theirs(avx2):
    env = {"ATEN_CPU_CAPABILITY": "default"}
    origins = kernels.apply(environ=env)
    assert env["ATEN_CPU_CAPABILITY"] == "default" and env["MKL_CBWR"] == "COMPATIBLE"
    assert origins["ATEN_CPU_CAPABILITY"] == kernels.USER
    assert kernels.set_by_user(env) == ["ATEN_CPU_CAPABILITY"]


def test_native_kernels_leave_torch_to_the_machine_but_keep_numpys_cap(avx2):
    env = {}
    origins = kernels.apply(native=True, environ=env)
    assert not set(kernels.TORCH_VARIABLES) & set(env)
    assert env["NPY_DISABLE_CPU_FEATURES"] == machine.numpy_reference()
    assert [origins[k] for k in kernels.TORCH_VARIABLES] == [kernels.MACHINE] * 3


def test_a_process_bnvg_starts_decides_again_what_its_parent_set():
    """An xdist worker or a sweep job inherits the parent's defaults, not as the user's."""
    parent = {}
    kernels.apply(environ=parent)
    child = dict(parent)
    kernels.apply(native=True, environ=child)
    assert "ATEN_CPU_CAPABILITY" not in child and kernels.set_by_user(child) == []


def test_a_value_changed_after_bnvg_set_it_is_someones_choice_and_stays(avx2):
    parent = {}
    kernels.apply(environ=parent)
    child = {**parent, "ATEN_CPU_CAPABILITY": "default"}  # a caller's env= for its child
    assert kernels.apply(environ=child)["ATEN_CPU_CAPABILITY"] == kernels.USER
    assert child["ATEN_CPU_CAPABILITY"] == "default"
    assert kernels.set_by_user(child) == ["ATEN_CPU_CAPABILITY"]


def test_a_cpu_without_avx2_is_never_asked_for_avx2_kernels(monkeypatch):
    monkeypatch.setattr(kernels, "x86_64", lambda: True)
    monkeypatch.setattr(kernels, "has_avx2", lambda: False)
    env = {}
    assert kernels.apply(environ=env)["ATEN_CPU_CAPABILITY"] == kernels.MACHINE
    assert "ATEN_CPU_CAPABILITY" not in env and env["MKL_CBWR"] == "COMPATIBLE"


def test_off_x86_64_nothing_is_set(monkeypatch):
    monkeypatch.setattr(kernels, "x86_64", lambda: False)
    env = {}
    assert set(kernels.apply(environ=env).values()) == {kernels.MACHINE}
    assert env == {}


def test_under_mkls_compatible_branch_the_cpu_is_no_part_of_the_platform():
    intel = {**REFERENCE_ENV, "cpu": "GenuineIntel family 6 model 207 (Intel Xeon)"}
    amd = {**REFERENCE_ENV, "cpu": "AuthenticAMD family 25 model 1 (AMD EPYC)"}
    assert (
        platform_id(intel)
        == platform_id(amd)
        == ("x86_64-torch-2.13.0-cpu-numpy-2.2.6-avx2-aten-avx2-mkl-compatible-onednn-avx2-1t")
    )


def test_under_mkls_own_choice_the_cpu_is_part_of_the_platform():
    intel = {**REFERENCE_ENV, "MKL_CBWR": "(not set)", "cpu": "GenuineIntel family 6 model 207"}
    amd = {**intel, "cpu": "AuthenticAMD family 25 model 1"}
    assert identity(intel)["mkl"] == "AUTO" and identity(intel)["cpu"].startswith("GenuineIntel")
    assert platform_id(intel) != platform_id(amd)
    assert platform_id(amd).endswith("-mkl-auto-onednn-avx2-1t-authenticamd-family-25-model-1")


@pytest.mark.parametrize(
    ("changed", "value"),
    [
        ("torch", "2.15.0+cpu"),
        ("cpu capability", "DEFAULT"),
        ("ONEDNN_MAX_CPU_ISA", "(not set)"),
        ("torch threads", "2"),
        ("numpy simd", "AVX512"),
        ("machine", "arm64"),
    ],
)
def test_every_setting_that_moves_the_floats_makes_another_platform(changed, value):
    assert platform_id({**REFERENCE_ENV, changed: value}) != platform_id(REFERENCE_ENV)


# -- numpy: what it dispatches to, not what the CPU has ----------------------------------------

# numpy 2.2.6 on a Sapphire Rapids Xeon under the reference: its CPU features go beyond its
# dispatch targets (AVX512_SPR, AVX512FP16 and AVX512VL are features no target of 2.2.6 is
# named after), and every AVX-512 target is off.
SAPPHIRE_RAPIDS_UNDER_THE_REFERENCE = SimpleNamespace(
    __cpu_baseline__=["SSE", "SSE2", "SSE3"],
    __cpu_dispatch__=["SSSE3", "SSE41", "AVX", "FMA3", "AVX2", "AVX512F", "AVX512_SKX"],
    __cpu_features__={
        **dict.fromkeys(["SSE", "SSE2", "SSE3", "SSSE3", "SSE41", "AVX", "FMA3", "AVX2"], True),
        "AVX512F": False,
        "AVX512_SKX": False,
        "AVX512_SPR": True,
        "AVX512FP16": True,
        "AVX512VL": True,
        "AMX_TILE": True,
    },
)


def test_numpys_width_is_read_from_its_enabled_dispatch_targets_not_its_cpu_features(
    monkeypatch,
):
    monkeypatch.setattr(machine, "_numpy_core", lambda: SAPPHIRE_RAPIDS_UNDER_THE_REFERENCE)
    assert machine.numpy_simd() == "AVX2"


def test_numpys_width_counts_an_avx512_target_that_is_on(monkeypatch):
    core = SimpleNamespace(**vars(SAPPHIRE_RAPIDS_UNDER_THE_REFERENCE))
    core.__cpu_features__ = {**core.__cpu_features__, "AVX512_SKX": True}
    monkeypatch.setattr(machine, "_numpy_core", lambda: core)
    assert machine.numpy_simd() == "AVX512"
    assert machine.numpy_simd(without=["AVX512F", "AVX512_SKX"]) == "AVX2"


def test_the_reference_turns_off_every_avx512_target_of_the_installed_numpy(monkeypatch):
    """Whatever its release: a newer numpy's AVX512_SPR target is turned off too, and no name
    numpy does not dispatch to is given (numpy warns of one)."""
    newer = ("AVX2", "AVX512F", "AVX512CD", "AVX512_SKX", "AVX512_ICL", "AVX512_SPR")
    monkeypatch.setattr(machine, "numpy_dispatch_targets", lambda store=None: newer)
    assert machine.numpy_reference() == "AVX512F AVX512CD AVX512_SKX AVX512_ICL AVX512_SPR"
    monkeypatch.setattr(
        machine, "numpy_dispatch_targets", lambda store=None: ("NEON", "ASIMD", "ASIMDHP")
    )
    env = {}
    assert kernels.apply(environ=env)["NPY_DISABLE_CPU_FEATURES"] == kernels.MACHINE
    assert "NPY_DISABLE_CPU_FEATURES" not in env


def test_the_installed_numpys_targets_are_asked_of_numpy_itself():
    targets = machine.numpy_dispatch_targets()
    assert "AVX2" in targets
    assert set(machine.numpy_reference().split()) == {t for t in targets if "AVX512" in t}


def test_numpys_targets_are_kept_in_pytests_cache_by_its_build(tmp_path, monkeypatch):
    """Asking numpy starts Python (a tenth of a second of every session): the answer is kept
    under the key of numpy's compiled core, and read back without asking."""
    monkeypatch.delitem(sys.modules, "numpy", raising=False)  # as the entry point finds it
    kept = Store(tmp_path)
    asked = machine.numpy_dispatch_targets(kept)
    assert kept.get(machine.numpy_build_key()) is not None
    monkeypatch.setattr(machine, "_ask_numpy", lambda: pytest.fail("asked again"))
    assert machine.numpy_dispatch_targets(kept) == asked
    assert machine.numpy_build_key() != ""  # the key names the installed numpy's core


def test_a_child_process_keeps_numpys_cap_without_asking_numpy_again(avx2, monkeypatch):
    parent = {}
    kernels.apply(environ=parent)
    monkeypatch.setattr(
        machine, "numpy_dispatch_targets", lambda store=None: pytest.fail("asked again")
    )
    child = dict(parent)
    origins = kernels.apply(native=True, environ=child)
    assert child["NPY_DISABLE_CPU_FEATURES"] == parent["NPY_DISABLE_CPU_FEATURES"]
    assert origins["NPY_DISABLE_CPU_FEATURES"] == kernels.REFERENCE_DEFAULT
    assert kernels.set_by_user(child) == []


# -- the reference is an identity, not a machine ------------------------------------------------


def reference_identity():
    return Platform.from_json(
        {
            "machine": "x86_64",
            "torch": "2.13.0+cpu",
            "numpy": "2.2.6",
            "numpy simd": "AVX2",
            "aten": "AVX2",
            "mkl": "COMPATIBLE",
            "onednn": "AVX2",
            "threads": "1",
        }
    )


@pytest.mark.parametrize(
    "cpu",
    [
        "AuthenticAMD family 25 model 1 (AMD EPYC)",
        "AuthenticAMD family 26 model 2 (AMD EPYC)",
        "GenuineIntel family 6 model 207 (INTEL(R) XEON(R) PLATINUM)",
        "GenuineIntel family 6 model 167 (Intel Xeon Processor (SapphireRapids))",
    ],
)
def test_any_cpu_under_the_reference_kernels_is_the_reference(cpu):
    here = Platform.from_json({**REFERENCE_ENV, "cpu": cpu, "python": "3.11.7"})
    assert here.id == reference_identity().id
    assert here.identity() == reference_identity().identity()  # what environment.json holds
    assert cpu in here.describe() and "any x86_64 CPU" in reference_identity().describe()


def test_a_platform_round_trips_through_its_record():
    here = Platform.here(1)
    assert Platform.from_json(here.to_json()) == here
    assert Platform.from_json(here.identity()).identity() == here.identity()


def test_torch_reads_the_thread_count_from_the_variable_the_platform_sets():
    import bnvg.experiment.runtime as runtime

    assert runtime.THREADS == machine.THREADS


# A process that computes, as a claims session is: it imports torch through the engine.
TORCH_IMPORTED = """
import gc
from claimlog.machine import import_torch
import_torch()
print(gc.isenabled(), gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_torchs_objects_are_frozen_out_of_every_later_garbage_collection():
    """`import_torch` leaves the objects torch's import created out of the collector's reach
    (`gc.freeze`), so that no later full collection scans them again, and the collector on."""
    done = subprocess.run(
        [sys.executable, "-c", TORCH_IMPORTED], capture_output=True, text=True, check=True
    )
    enabled, frozen, tracked = done.stdout.split()
    assert enabled == "True"
    # What a later collection scans is a small part of what the process holds.
    assert int(frozen) > 100_000 and int(tracked) < int(frozen) // 10, done.stdout


# -- arm64 ---------------------------------------------------------------------------------------

NEOVERSE_N1_CPUINFO = {
    "processor": "0",
    "model name": "ARMv8 Processor rev 1 (v8l)",
    "Features": "fp asimd aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm",
    "CPU implementer": "0x41",
    "CPU architecture": "8",
    "CPU variant": "0x4",
    "CPU part": "0xd0c",
    "CPU revision": "1",
}

EMULATED_N1 = {
    "machine": "aarch64",
    "torch": "2.13.0+cu130",
    "numpy": "2.2.6",
    "numpy simd": "ASIMD",
    "cpu capability": "DEFAULT",
    "mkl": "absent",
    "onednn": "uncapped",
    "torch threads": "1",
    "cpu": "Arm Neoverse-N1 (implementer 0x41 part 0xd0c)",
    "emulated by": "QEMU 10.0.13, -cpu neoverse-n1",
}


def test_an_arm64_cpu_is_named_by_its_implementer_and_part(monkeypatch):
    monkeypatch.setattr(machine, "_cpuinfo", lambda: NEOVERSE_N1_CPUINFO)
    assert machine.cpu() == "Arm Neoverse-N1 (implementer 0x41 part 0xd0c)"
    unknown = {**NEOVERSE_N1_CPUINFO, "CPU implementer": "0x99", "CPU part": "0x001"}
    monkeypatch.setattr(machine, "_cpuinfo", lambda: unknown)
    assert machine.cpu() == "implementer 0x99 part 0x001"


def test_an_emulated_arm64_platform_says_so_and_is_another_platform_than_the_hardware():
    emulated = Platform.from_json(EMULATED_N1)
    hardware = Platform.from_json({k: v for k, v in EMULATED_N1.items() if k != "emulated by"})
    assert emulated.identity()["cpu"] == EMULATED_N1["cpu"]  # no MKL: the CPU computes
    assert emulated.identity()["emulated by"] == "QEMU 10.0.13, -cpu neoverse-n1"
    assert emulated.id == (
        "aarch64-torch-2.13.0-cu130-numpy-2.2.6-asimd-aten-default-mkl-absent-onednn-uncapped"
        "-1t-arm-neoverse-n1-emulated"
    )
    assert hardware.id == emulated.id.removesuffix("-emulated")
    assert "emulated by QEMU 10.0.13, -cpu neoverse-n1" in emulated.describe()
    for kept in (emulated.to_json(), emulated.identity()):  # a record, environment.json
        assert Platform.from_json(kept).identity() == emulated.identity()


def test_off_x86_64_the_reference_kernels_name_nothing_the_platform_computes_with():
    emulated = Platform.from_json(EMULATED_N1)
    asked = {**kernels.TORCH_REFERENCE, "NPY_DISABLE_CPU_FEATURES": "AVX512F"}
    assert emulated.with_settings(asked, 1, "DEFAULT").identity() == emulated.identity()
    assert emulated.with_settings(asked, 2, "DEFAULT").threads == 2
    assert kernels.mkl_branch("COMPATIBLE", "aarch64") == "absent"
