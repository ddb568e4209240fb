"""A platform is what it computes (issue 49): the fingerprint, the two MKL paths, a workshop in
ordinary PyTorch, and a computation that is not deterministic.

MKL's COMPATIBLE branch takes a path of its own on some AMD cores for float32 products eight
or more wide, and which cores it calls Zen is MKL's business. `emulation/mkl_path.c` answers
for it, so that both paths run on this machine, whatever it is: a workshop recorded on one path
and run on the other must be told apart by its bits, judged by its sentences, and never called
"the reference"; bnvg, whose nets are four wide, is the reference on both.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from claimlog import hearing, kernels
from claimlog.kernels import fingerprint_under, reference_kernels
from claimlog.platform import TORCH_REFERENCE, Platform

ROOT = Path(__file__).resolve().parent.parent


# -- the kernels: recorded, replayed, refused ----------------------------------------------
def small_fit(width: int = 32, seeded: bool = True) -> float:
    import torch
    from torch import nn

    if seeded:
        torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, width), nn.Tanh(), nn.Linear(width, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x = torch.linspace(-1, 1, 200).reshape(100, 2)
    for _ in range(50):
        opt.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(
            net(x).squeeze(1), (x[:, 0] > 0).float()
        )
        loss.backward()
        opt.step()
    return float(loss.detach())


def test_a_computations_kernels_are_its_operators_shapes_and_bits_replayed_alike_every_time():
    recorded = hearing.record("small fit", small_fit)
    described = [kernels.describe_kernel(k) for k in recorded]
    assert (
        "aten.addmm.default on float32 [32], float32 [100, 2], float32 [2, 32] (strided)"
        in described
    )
    assert not any(
        d.startswith(("aten.t.", "aten.view.")) for d in described
    )  # views compute nothing
    once, again = kernels.replay(recorded), kernels.replay(recorded)
    assert once == again and set(once) == set(recorded)
    assert not [k for k, bits in once.items() if bits.startswith(("error", "unreplayable"))]
    assert kernels.fingerprint(once) == kernels.fingerprint(again)


def test_the_record_hears_a_computation_to_its_end_and_checks_only_its_first_steps():
    """Adam calls the same kernels with a new step size every step: each step is a new
    signature, but no new kernel. The two starts that check the computation is deterministic
    stop after `QUIET` calls of known kernels; the start that hears it runs to its end, and
    hears the evaluation there, on another shape, which the module call that starts it
    announces (issue 59: a recorder that stopped inside the loop never saw it)."""
    import torch
    from torch import nn

    steps = []

    def adam_fit() -> None:
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        x = torch.linspace(-1, 1, 40).reshape(20, 2)
        for step in range(2_000):
            steps.append(step)
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
        with torch.no_grad():
            net(torch.linspace(-1, 1, 14).reshape(7, 2))  # the evaluation at the end

    recorded = hearing.record("adam fit", adam_fit)
    assert 2_000 < len(steps) < 2_000 + 2 * 200  # a step is ~50 calls: QUIET is ~30 steps
    described = [kernels.describe_kernel(k) for k in recorded]
    assert {"aten.addcdiv_.default", "aten.addmm.default"} <= {d.split(" ")[0] for d in described}
    assert any(d.startswith("aten.addmm.default") and "[7, 2]" in d for d in described), described


def test_recording_leaves_the_global_generators_as_they_were():
    import numpy as np
    import torch

    torch.manual_seed(7)
    np.random.seed(7)
    expected = (torch.rand(3), np.random.rand(3))
    torch.manual_seed(7)
    np.random.seed(7)
    hearing.record("small fit", small_fit)  # which seeds torch's generator as it starts
    assert torch.equal(torch.rand(3), expected[0]) and (np.random.rand(3) == expected[1]).all()


def test_a_computation_that_draws_from_an_unseeded_generator_is_refused_naming_its_first_moved_call():
    with pytest.raises(hearing.NotDeterministic) as refused:
        hearing.record("the unseeded fit", lambda: small_fit(seeded=False))
    said = str(refused.value)
    assert "\n" not in said
    assert said.startswith(
        "the unseeded fit is not deterministic: started twice in this process, its call 1 of "
        "aten.uniform_.default on float32 [32, 2] gave other bits"
    )


def test_calls_only_the_first_start_makes_are_no_evidence_of_nondeterminism():
    """A computation that reads a kept result the first time it starts makes calls the second
    start does not: calls are matched kernel by kernel."""
    load, mm = (json.dumps({"op": op, "args": [], "kwargs": {}}) for op in ("aten.load", "aten.mm"))
    first = [(load, "a"), (load, "b"), (mm, "x"), (mm, "y")]
    assert hearing._first_moved(first, [(mm, "x"), (mm, "y")]) is None
    assert hearing._first_moved(first, [(mm, "x"), (mm, "z")]) == "its call 2 of aten.mm"


def test_a_platforms_fingerprint_is_part_of_its_identity_its_folder_and_its_cache_keys():
    names = Platform.here(
        1, {"torch": "2.13.0+cpu", "cpu capability": "AVX2", "widest capability": "AVX2"}
    )
    one, other = (
        Platform.from_json({**names.to_json(), "fingerprint": f})
        for f in ("0123456789ab", "ba9876543210")
    )
    assert one.identity()["fingerprint"] == "0123456789ab"
    assert one.id.endswith("-bits-01234567") and one.id != other.id
    assert one.cache_fields() != other.cache_fields()
    assert Platform.from_json(one.identity()).id == one.id
    assert "cpu" not in one.identity()  # under MKL's COMPATIBLE branch, the bits speak for the CPU


# -- both of MKL's paths, on this machine (the shims: `mkl_paths`, tests/conftest.py) --------
def preloaded(shim):
    return {**os.environ, "LD_PRELOAD": str(shim)}


@pytest.mark.slow
def test_bnvg_computes_the_references_bits_on_both_of_mkls_paths(mkl_paths, tmp_path, monkeypatch):
    """Its nets are four wide, below where MKL's paths part: the reference spans both."""
    environment = ROOT / "snapshots" / "environment.json"
    recorded = json.loads(environment.read_text())["fingerprint"]
    chosen = reference_kernels(environment)
    for shim in mkl_paths.values():
        monkeypatch.setenv("LD_PRELOAD", str(shim))
        assert fingerprint_under(TORCH_REFERENCE, 1, chosen, tmp_path) == recorded


# -- a third workshop, written as docs/engine.md says, in ordinary PyTorch ---------------
WORKSHOP = {
    "pyproject.toml": """
        [tool.pytest.ini_options]
        testpaths = ["claims"]
        pythonpath = ["."]
        claimlog_declaration = "circle.workshop:DECLARATION"
        claimlog_workshop = "text"
        addopts = ["-p", "no:randomly", "-p", "no:xdist"]
    """,
    ".gitignore": """
        __pycache__/
    """,
    "circle/__init__.py": "",
    "circle/experiment.py": '''
        """A net 32 wide learns whether a point lies inside a circle."""
        from dataclasses import dataclass

        import torch
        from torch import nn


        @dataclass(frozen=True)
        class Recipe:
            width: int = 32
            steps: int = 300
            lr: float = 0.5


        RECIPE = Recipe()


        @dataclass(frozen=True)
        class Fit:
            loss: float
            accuracy: float


        def fit(recipe: Recipe) -> Fit:
            g = torch.Generator().manual_seed(0)
            x = torch.rand(400, 2, generator=g) * 2 - 1
            y = ((x[:, 0] ** 2 + x[:, 1] ** 2) < 0.5).float()
            torch.manual_seed(1)
            w = recipe.width
            net = nn.Sequential(nn.Linear(2, w), nn.Tanh(), nn.Linear(w, w), nn.Tanh(), nn.Linear(w, 1))
            opt = torch.optim.SGD(net.parameters(), lr=recipe.lr, momentum=0.9)
            loss_fn = nn.BCEWithLogitsLoss()
            for _ in range(recipe.steps):
                opt.zero_grad()
                loss = loss_fn(net(x[:300]).squeeze(1), y[:300])
                loss.backward()
                opt.step()
            with torch.no_grad():
                right = (net(x[300:]).squeeze(1) > 0).float() == y[300:]
            return Fit(loss.item(), right.float().mean().item())
    ''',
    "circle/log.py": """
        from functools import cache

        from claimlog import Kind, Line, Log, Quantity, Template
        from circle.experiment import RECIPE

        RESULT = Template(
            "final loss = {loss}, test accuracy = {accuracy}%",
            {"loss": Quantity("final loss", Kind.LOSS, ".4f"),
             "accuracy": Quantity("test accuracy", Kind.PERCENT, ".1f")},
        )
        NET = Template("net: 2 -> {width} -> {width2} -> 1, {steps} SGD steps",
                       {"width": Quantity("width", Kind.SETTING), "width2": Quantity("width", Kind.SETTING),
                        "steps": Quantity("steps", Kind.SETTING)})


        @cache
        def log() -> Log:
            return Log((
                Line.words("Inside the circle -- experiment log"),
                Line.fixed(NET, "net", "document", width=RECIPE.width, width2=RECIPE.width, steps=RECIPE.steps),
                Line.by_claim(RESULT, "result"),
            ), home="circle.log.log()")
    """,
    "circle/fixtures.py": """
        import pytest

        from claimlog import Computed


        @pytest.fixture(scope="session")
        def result(recipe, computed: Computed):
            from circle.experiment import fit

            return computed.get("fit", lambda: fit(recipe))
    """,
    "circle/workshop.py": """
        from pathlib import Path

        from claimlog import Declaration

        PACKAGE = Path(__file__).resolve().parent


        def _log():
            from circle.log import log

            return log()


        def _recipe(seeds):
            from circle.experiment import RECIPE

            return RECIPE


        DECLARATION = Declaration(
            name="circle",
            log=_log,
            recipe=_recipe,
            plugins=("circle.fixtures",),
            computing=(PACKAGE / "experiment.py",),
            quoting=(PACKAGE / "log.py",),
        )
    """,
    "claims/test_circle.py": '''
        import pytest
        from circle.log import log

        from claimlog import above, below


        @pytest.mark.log_lines("result")
        def test_the_net_learns_the_circle(result, quoted):
            """Text: "its loss ends below 0.01 and it classifies 99.0% of the test points"."""
            line = log().line_named("result").fill(loss=result.loss, accuracy=result.accuracy * 100)
            quoted.lines(line, holds={"final loss": below(0.01), "test accuracy": above(95)})
    ''',
    "text/circle.md": """
        # Inside the circle

        After 300 SGD steps (line 2) its loss is 0.0038 and it classifies 99.0% of the test
        points (line 3).
    """,
}


def write_workshop(folder: Path, files=WORKSHOP) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return folder


def git(folder, *args):
    return subprocess.run(
        ["git", "-C", folder, *args], check=True, capture_output=True, text=True
    ).stdout


def pytest_in(folder, env, *args, passes=True):
    env = {k: v for k, v in env.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=folder, env=env, capture_output=True, text=True
    )
    assert (done.returncode == 0) == passes, done.stdout[-4000:] + done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_a_workshop_recorded_on_one_mkl_path_is_another_platform_on_the_other(mkl_paths, tmp_path):
    """Recorded with `pytest --snapshot-update` under one path, run under the other: every
    claim and citation passes, the run names another platform (never "the reference ... bit
    for bit") and what sets it apart, computes its result again rather than reuse the other
    path's, and leaves the tree clean."""
    folder = write_workshop(tmp_path / "circle")
    zen, intel = preloaded(mkl_paths["zen"]), preloaded(mkl_paths["intel"])
    said = pytest_in(folder, zen, "--snapshot-update")
    assert "recorded the reference" in said
    git(folder, "init", "-q")
    git(folder, "add", ".")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recorded")

    said = pytest_in(folder, zen)
    # The update keyed its result by the platform as the record named it before (no kernels
    # yet), and kept it also under the fingerprint it recorded: this run reuses it.
    assert "this run computed on the reference" in said and "reused 1 result" in said
    # Each record of kernels is kept under its computation's key, which names the platform
    # by its fingerprint: the first update's (of a platform with no record yet) is not this
    # one's, so the second records again; the third records nothing again. Both write the same.
    said = pytest_in(folder, zen, "--snapshot-update")
    assert "reused the kernels" not in said
    said = pytest_in(folder, zen, "--snapshot-update")
    assert "reused the kernels of 1 computation, recorded by an earlier update" in said
    assert git(folder, "status", "--porcelain") == ""

    said = pytest_in(folder, intel)
    header = next(line for line in said.splitlines() if line.startswith("circle: "))
    assert header.startswith("circle: a platform new to the evidence (")
    assert (
        "kernels give other bits here than on the reference (matrix products among them): aten."
        in header
    )
    assert "bit for bit" not in said and "computed on the reference" not in said
    assert "this platform is new to the evidence" in said
    assert "3 passed" in said  # the claim and the text's two citations
    assert "reused 1 result" not in said  # the other path's result is not this one's
    assert git(folder, "status", "--porcelain") == ""

    said = pytest_in(folder, intel)
    assert "this platform is new to the evidence" in said and "reused 1 result" in said
    assert git(folder, "status", "--porcelain") == ""

    # An edit of the recipe fails as an edit on both paths, never as drift: no sweep has
    # measured this workshop, but its update kept each claim's key beside the snapshots.
    assert (
        "test_circle.py::test_the_net_learns_the_circle"
        in (folder / "snapshots/keys.json").read_text()
    )
    experiment = folder / "circle" / "experiment.py"
    experiment.write_text(experiment.read_text().replace("steps: int = 300", "steps: int = 299"))
    for env in (zen, intel):
        said = pytest_in(folder, env, passes=False)
        assert "its claim changed since the snapshots were recorded" in said
        assert "FAILED claims/test_circle.py::test_the_net_learns_the_circle" in said


# Run under one MKL path: the record's kernels that give other bits here are dropped from it,
# and its fingerprint written again, as a record would read that never heard them (kernels
# the workshop calls only late, or only on some machines): then this machine's fingerprint is
# the reference's, yet its numbers are not.
FORGET_WHAT_SETS_IT_APART = """
import json
from pathlib import Path

from claimlog.platform import apply

apply()  # the reference kernels, as a session computes under them, before torch is imported
import torch

from claimlog.kernels import fingerprint, replay

torch.set_num_threads(1)
environment = Path("snapshots/environment.json")
record = json.loads(environment.read_text())
here = replay(record["kernels"])
record["kernels"] = {k: bits for k, bits in record["kernels"].items() if here[k] == bits}
record["fingerprint"] = fingerprint(record["kernels"])
environment.write_text(json.dumps(record, indent=2, sort_keys=True) + "\\n")
"""


@pytest.mark.slow
def test_a_machine_with_the_references_fingerprint_that_computes_otherwise_is_found_out(
    mkl_paths, tmp_path
):
    """A fingerprint can only hold the kernels its record heard. Where a machine gives the
    reference's bits for all of them and numbers move all the same, the claim unedited, its
    computations are heard here to their last kernel before anything fails: a kernel the
    record never heard, or one with other bits, makes it another platform (the numbers drift,
    the statements are judged, it passes); none makes the failure stand, saying so."""
    folder = write_workshop(tmp_path / "circle")
    zen, intel = preloaded(mkl_paths["zen"]), preloaded(mkl_paths["intel"])
    pytest_in(folder, zen, "--snapshot-update")
    git(folder, "init", "-q")
    git(folder, "add", ".")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recorded")

    env = {k: v for k, v in intel.items() if k != "CLAIMLOG_KERNEL_DEFAULTS"}
    subprocess.run(
        [sys.executable, "-c", FORGET_WHAT_SETS_IT_APART], cwd=folder, env=env, check=True
    )
    said = pytest_in(folder, intel, "--cache-clear")
    found_out = said.split("this platform is not the reference after all")[-1]
    assert "this platform is not the reference after all" in said, said[-3000:]
    assert "is called here, and the record never was" in found_out
    assert "aten.addmm.default on float32 [32], float32 [300, 32], float32 [32, 32]" in found_out
    assert "result, final loss: snapshot" in found_out and "3 passed" in said

    # On the path it was recorded on, a number changed by hand in the snapshot: every kernel
    # the computation calls is the record's, with its bits, so the difference fails.
    git(folder, "checkout", "-q", "snapshots")
    numbers = folder / "snapshots/numbers/claims/test_circle/test_the_net_learns_the_circle.csv"
    stored = numbers.read_text().splitlines()
    loss = next(i for i, line in enumerate(stored) if line.startswith('"result, final loss"'))
    value = float(stored[loss].split(",")[-1])
    stored[loss] = f'"result, final loss",{value * (1 + 1e-7)!r}'
    numbers.write_text("\n".join(stored) + "\n")
    said = pytest_in(folder, zen, passes=False)
    assert "FAILED claims/test_circle.py::test_the_net_learns_the_circle" in said
    assert "each one its computations call, heard here to the last, is the record's" in said
    assert "not the reference after all" not in said


@pytest.mark.slow
def test_a_computation_that_is_not_deterministic_is_refused_in_one_line_and_records_nothing(
    tmp_path,
):
    files = dict(WORKSHOP)
    files["circle/experiment.py"] = WORKSHOP["circle/experiment.py"].replace(
        "            torch.manual_seed(1)\n", ""
    )
    folder = write_workshop(tmp_path / "circle", files)
    said = pytest_in(folder, os.environ, "--snapshot-update", passes=False)
    refusals = [line for line in said.splitlines() if "is not deterministic" in line]
    assert refusals and refusals[0].startswith(
        "fit is not deterministic: started twice in this process, its call 1 of "
        "aten.uniform_.default on float32 [32, 2] gave other bits"
    ), said[-3000:]
    written = [
        p for p in folder.rglob("*") if p.is_file() and {"snapshots", "captures"} & set(p.parts)
    ]
    assert not written
    assert not list(folder.glob(".pytest_cache/d/*-kernels/*.bin"))  # nor kept a record


def test_torch_imported_before_claimlog_could_set_the_reference_kernels_is_said_in_one_line(
    tmp_path,
):
    folder = write_workshop(tmp_path / "circle")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (*TORCH_REFERENCE, "CLAIMLOG_KERNEL_DEFAULTS")
    }
    first = "import sys, torch, pytest; sys.exit(pytest.main(['--collect-only', '-q']))"
    done = subprocess.run(
        [sys.executable, "-c", first], cwd=folder, env=env, capture_output=True, text=True
    )
    said = [
        line for line in done.stderr.splitlines() if "torch was imported before claimlog" in line
    ]
    assert len(said) == 1, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "torch was imported before" not in done.stderr
