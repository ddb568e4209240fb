"""The reference kernels and the platform: what is set, who set it, and what moves the floats."""

import pytest

from bnvg.experiment import kernels
from bnvg.experiment.platform import identity, platform_id

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
    assert {k: env[k] for k in kernels.REFERENCE} == dict(kernels.REFERENCE)
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
    assert env["NPY_DISABLE_CPU_FEATURES"] == kernels.REFERENCE["NPY_DISABLE_CPU_FEATURES"]
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


def test_the_one_line_for_the_workshop_script_sets_torchs_reference_kernels():
    assert kernels.reference_line() == (
        "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 "
        "OMP_NUM_THREADS=1 python3 experiment.py"
    )
