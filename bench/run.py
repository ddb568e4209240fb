"""Benchmark: the claims against the workshop script, timed back to back on one machine.

    .venv/bin/python bench/run.py [--script ../shared/seed/experiment.py] [--rounds 3]

Each round runs, one after the other,
  the workshop script (a copy made in a scratch folder, one thread, under the reference
  kernels, as reference-log runs it),
  `pytest claims/`                cold (no pytest cache: every run trained, every figure drawn)
                                  and warm (reusing the runs and drawings a first run kept),
  `pytest claims/ -k eval_bug`    cold and warm (one claim's worth),
  `pytest claims/ --workshop DIR` warm (the author's loop: one changed sentence, checked),
the claims started as the project's tests start them (`bnvg.runner.run_claims`), writing into
a scratch folder, and each checked by its session record: a failed run is no timing, and a
warm run that trained anything is refused.
so a machine that slows down or speeds up during the benchmark affects all three alike. It
prints each command's median wall and CPU seconds and the ratios B/A and C/A, taken round by
round and then the median. It then times training alone: seconds per 1000 SGD steps of the
plain and the batch-norm net at depth 4, 8, 16 and 32 (in this process, one thread).

These machines are shared and noisy: quote the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bnvg.experiment.platform import apply as apply_reference_kernels
from bnvg.runner import environment, run_claims

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCRIPT = ROOT.parent / "shared" / "seed" / "experiment.py"


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float  # user + system of the child processes


def timed(run: Callable[[], None]) -> Timing:
    """Run one whole process to completion and measure it (its children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu)


# A page of workshop prose citing the log, for the author's loop: `--workshop DIR`.
WORKSHOP_TEXT = """\
# Module 2: why the plain net stops learning

The inputs vary by 0.89 and 0.51 (line 10), and the plain net's layer 4's gradient is
3.99e-02 (line 38) against 2.07e-01 with batch norm (line 48).
After 4000 steps at lr 0.5 the plain net still scores 51.5% (line 65).
"""


def commands(script: Path, scratch: Path) -> dict[str, Callable[[], None]]:
    """The commands, each writing only into `scratch`. "cold" runs use no pytest cache and
    train and draw everything; "warm" runs reuse a cache that a first run filled."""
    workshop = scratch / "script" / "workshop"
    workshop.mkdir(parents=True)
    shutil.copy(script, workshop / "experiment.py")
    text = scratch / "text"
    text.mkdir()
    (text / "module2.md").write_text(WORKSHOP_TEXT)
    cache = scratch / "cache"

    # The script computes what the claims compute: under the reference kernels, one thread.
    script_env = environment({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    apply_reference_kernels(environ=script_env)

    def the_script() -> None:
        subprocess.run(
            [sys.executable, "experiment.py"],
            cwd=workshop,
            env=script_env,
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def claims(*args: str, warm: bool, filling: bool = False) -> Callable[[], None]:
        def run() -> None:
            done = run_claims(
                ["-q", *args],
                cwd=ROOT,
                outputs=scratch / "claims",
                cache_dir=cache if warm else None,
            )
            if done.returncode != 0 or done.record.exitstatus != 0:
                raise SystemExit(f"pytest claims/ {' '.join(args)} failed:\n{done.tail()}")
            if warm and not filling and done.record.trained:
                raise SystemExit(f"a warm run trained {done.record.trained}: the cache is cold")

        return run

    claims(warm=True, filling=True)()  # fill the cache the warm runs reuse
    return {
        "workshop script": the_script,
        "pytest claims/ (cold)": claims(warm=False),
        "pytest claims/ (warm)": claims(warm=True),
        "pytest claims/ -k eval_bug (cold)": claims("-k", "eval_bug", warm=False),
        "pytest claims/ -k eval_bug (warm)": claims("-k", "eval_bug", warm=True),
        "pytest claims/ --workshop DIR (warm)": claims(f"--workshop={text}", warm=True),
    }


def seconds_per_1000_steps(depth: int, norm: str) -> float:
    import torch

    from bnvg.experiment.config import NetSpec, Workshop
    from bnvg.experiment.data import two_moons
    from bnvg.experiment.model import build_network
    from bnvg.experiment.train import train

    torch.set_num_threads(1)
    workshop = Workshop(steps=1000)
    data = two_moons(workshop)
    train(build_network(NetSpec(depth=4)), data, 0.5, Workshop(steps=50))  # warm-up imports
    net = build_network(NetSpec(depth=depth, norm=norm))  # type: ignore[arg-type]
    start = time.perf_counter()
    train(net, data, 0.5, workshop)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--script",
        type=Path,
        default=DEFAULT_SCRIPT,
        help="the workshop script to compare against (copied at run time)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (after one warm-up)")
    parser.add_argument(
        "--skip-scaling", action="store_true", help="leave out the seconds-per-1000-steps table"
    )
    args = parser.parse_args()
    if not args.script.is_file():
        parser.error(f"no workshop script at {args.script}; give its path with --script")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    print(
        f"{time.strftime('%Y-%m-%d')} | {platform.machine()} | {os.cpu_count()} cores | "
        f"{platform.processor() or platform.platform()} | python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(args.script, Path(tmp))
        width = max(map(len, cmds))  # so the columns line up under the longest command
        results: dict[str, list[Timing]] = {name: [] for name in cmds}
        for round_no in range(args.rounds + 1):  # round 0 warms caches and is not counted
            for name, command in cmds.items():
                t = timed(command)
                if round_no:
                    results[name].append(t)
                print(
                    f"  round {round_no}{' (warm-up)' if not round_no else ''}: "
                    f"{name:<{width}} {t.wall:6.2f} s wall {t.cpu:6.2f} s cpu",
                    flush=True,
                )

    base = results["workshop script"]
    columns = f"{'median wall s':>13} {'median cpu s':>12} {'wall / script':>14}"
    print(f"\n{'command':<{width}} {columns}")
    for name, timings in results.items():
        ratios = [t.wall / b.wall for t, b in zip(timings, base, strict=True)]
        print(
            f"{name:<{width}} {statistics.median(t.wall for t in timings):>13.2f} "
            f"{statistics.median(t.cpu for t in timings):>12.2f} "
            f"{statistics.median(ratios):>13.3f}x"
        )

    if not args.skip_scaling:
        print("\nseconds per 1000 training steps (one thread, in process)")
        print(f"{'depth':>5} {'plain':>8} {'batch norm':>11}")
        for depth in (4, 8, 16, 32):
            plain, bn = (
                seconds_per_1000_steps(depth, "none"),
                seconds_per_1000_steps(depth, "batch"),
            )
            print(f"{depth:>5} {plain:>8.2f} {bn:>11.2f}")


if __name__ == "__main__":
    main()
