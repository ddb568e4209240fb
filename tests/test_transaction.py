"""Committed means verified: the record (captures/, diagrams/, snapshots/) changes only under a
--snapshot-update that completes, all at once (`claimlog.transaction`), and a normal run writes
what it computed to obtained/, never to the record."""

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from filelock import FileLock

from claimlog.places import Places
from claimlog.runner import environment, scratch_copy
from claimlog.transaction import Busy, Update, record_files

ROOT = Path(__file__).resolve().parent.parent


def digests(root):
    """Every file of the record, by path, as a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in record_files(Places(root))
    }


@pytest.fixture
def record(tmp_path):
    """A small record: a log, a figure, a text snapshot, a numbers snapshot, the identity."""
    places = Places(tmp_path)
    for path, text in {
        "captures/results.log": "line 1\nline 2\n",
        "diagrams/a.png": "png a",
        "snapshots/text/test_s1.ambr": "# name: test\n",
        "snapshots/numbers/claims/test_s1/test_one.csv": "reading,value\nx,1.0\n",
        "snapshots/environment.json": "{}\n",
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return places


def write_an_update(places):
    """What an update does to the record: rewrite, add and delete files."""
    (places.root / "captures/results.log").write_text("line 1\nline 2, new\n")
    (places.root / "diagrams/b.png").write_text("png b")
    (places.root / "snapshots/numbers/claims/test_s1/test_one.csv").unlink()
    (places.root / "snapshots/text/.test_s1.ambr.x.tmp").write_text("half")


def test_a_committed_update_is_the_record(record):
    update = Update(record)
    update.acquire()
    update.begin()
    write_an_update(record)
    after = digests(record.root)
    update.commit()
    update.release()
    assert digests(record.root) == after
    assert not update.journal.exists() and not update.before.exists()
    # The next session finds nothing to recover.
    assert Update(record).recover() is None


def test_an_update_killed_part_way_is_undone_by_the_next_session(record):
    before = digests(record.root)
    update = Update(record)
    update.acquire()
    update.begin()
    write_an_update(record)
    update.release()  # as the operating system does for a killed process
    said = Update(record).recover()
    assert said is not None and "interrupted" in said
    assert digests(record.root) == before
    assert not (record.root / "snapshots/text/.test_s1.ambr.x.tmp").exists()


def test_a_recovery_killed_in_turn_is_redone(record, monkeypatch):
    before = digests(record.root)
    update = Update(record)
    update.begin()
    write_an_update(record)
    calls = []

    def dies_after_the_first_file(source, target):
        if calls:
            raise KeyboardInterrupt  # killed in the middle of putting files back
        calls.append(target)
        Path(target).write_bytes(Path(source).read_bytes())

    monkeypatch.setattr("claimlog.transaction.shutil.copyfile", dies_after_the_first_file)
    with pytest.raises(KeyboardInterrupt):
        Update(record).recover()
    monkeypatch.undo()
    assert Update(record).journal.exists()  # still to be recovered
    assert Update(record).recover() is not None
    assert digests(record.root) == before


def test_a_second_session_is_refused_while_an_update_holds_the_lock(record):
    """The lock is the operating system's: held by another process, released when it dies."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from claimlog.places import Places\n"
        "from claimlog.transaction import Update\n"
        "u = Update(Places(Path(sys.argv[1])))\n"
        "u.acquire()\n"
        "u.begin()\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(record.root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(Busy, match=r"another pytest session is updating the snapshots"):
            Update(record).acquire()
    finally:
        holder.kill()
        holder.wait()
    second = Update(record)
    second.acquire()  # the dead process's lock is gone
    second.release()


def test_a_session_waits_for_another_sessions_look_for_an_interrupted_update(record):
    """Every session takes the lock a moment as it starts (`recover`): two sessions started
    together both run, where the second was refused as if an update held the checkout."""
    record.make_obtained()
    looking = FileLock(record.obtained / ".update.lock", thread_local=False)
    looking.acquire()
    release = threading.Timer(0.5, looking.release)
    release.start()
    try:
        second = Update(record)
        second.acquire()  # waited for the look, not refused
        second.release()
    finally:
        release.join()


def geometric_decay_session(pytester, *args):
    """A normal session of the geometric-decay claims, in process, in the project copied into
    pytester's folder (with its record: `scratch_copy(..., record=True)`)."""
    result = pytester.runpytest_inprocess(
        "claims/",
        "--import-mode=importlib",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-k",
        "geometric_decay",
        *args,
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    return result


def test_a_normal_run_writes_its_log_and_figures_to_obtained_and_changes_no_committed_file(
    outside_xdist, pytester
):
    """Without --results-log or --diagrams the run writes obtained/, says how it compares
    with the record, and leaves captures/, diagrams/ and snapshots/ as they were."""
    project = scratch_copy(ROOT, pytester.path, record=True)
    before = digests(project)
    said = geometric_decay_session(pytester).stdout.str()
    assert digests(project) == before
    assert (project / "obtained" / "diagrams" / "geometric_decay.png").is_file()
    assert "obtained/diagrams/ hold what this run computed" in said
    assert "1 figure drawn, each byte-identical to diagrams/" in said


# -- a real update, killed part way ---------------------------------------------------------
UPDATE = ["-m", "pytest", "claims/", "--snapshot-update", "-k", "geometric_decay", "-n", "0"]


def changed_project(into):
    """A scratch copy of the project whose geometric-decay snapshots (numbers and text) an
    update must rewrite: two files, so a half-done update would be a mix."""
    project = scratch_copy(ROOT, into, record=True)
    numbers = next((project / "snapshots/numbers/claims/test_s5_geometric_decay").glob("*.csv"))
    numbers.write_text(numbers.read_text().replace("0.9", "0.8", 1))
    text = project / "snapshots/text/test_s5_geometric_decay.ambr"
    text.write_text(text.read_text().replace("after 4 layers", "after four layers", 1))
    return project


@pytest.mark.slow
def test_an_update_killed_at_any_moment_leaves_the_record_as_committed_or_as_the_whole_update(
    tmp_path,
):
    """Every session shares one pytest cache, which the complete update fills: the killed
    updates then compute nothing and spend their time writing the record and committing, so
    the moments they are killed at fall there (without it they would all fall in the
    computing, before the update writes anything), and each next session starts at once."""
    cache = ["-o", f"cache_dir={tmp_path / 'cache'}"]
    complete = changed_project(tmp_path / "complete")
    done = subprocess.run(
        [sys.executable, *UPDATE, *cache],
        cwd=complete,
        env=environment(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    after = digests(complete)
    committed = digests(changed_project(tmp_path / "committed"))
    assert after != committed
    # From the journal's first moment to about the update's end (half a second or so here).
    for delay in (0.0, 0.2, 0.4, 0.8):
        project = changed_project(tmp_path / f"killed-{delay}")
        update = subprocess.Popen(
            [sys.executable, *UPDATE, *cache],
            cwd=project,
            env=environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        journal = Update(Places(project)).journal
        deadline = time.monotonic() + 60
        while not journal.exists() and update.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        # The whole process group, as a power cut would; an update that already ended has
        # no process left to kill.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(update.pid, signal.SIGKILL)
        update.wait()
        nxt = subprocess.run(
            [sys.executable, "-m", "pytest", "claims/", "-k", "geometric_decay", "-n", "0", *cache],
            cwd=project,
            env=environment(),
            capture_output=True,
            text=True,
        )
        found = digests(project)
        assert found in (committed, after), f"killed {delay} s into the update: a mix"
        assert not journal.exists()
        # As committed, the changed snapshots fail; as updated, they pass.
        assert nxt.returncode == (0 if found == after else 1), nxt.stdout[-2000:]


def test_a_figure_that_moved_is_shown_committed_and_obtained_side_by_side(
    outside_xdist, pytester, html_rows
):
    """The claims report and pytest-html's report show a figure this run drew otherwise than
    the committed one as both, side by side (here the committed PNG was changed)."""
    project = scratch_copy(ROOT, pytester.path, record=True)
    committed = project / "diagrams" / "geometric_decay.png"
    committed.write_bytes(committed.read_bytes() + b"moved")
    before = digests(project)
    said = geometric_decay_session(
        pytester, "--claims-report=report.md", "--html=report.html", "--self-contained-html"
    ).stdout.str()
    assert digests(project) == before
    assert "1 of 1 figures differ from diagrams/ (this run's are in obtained/diagrams/): " in said
    report = (project / "report.md").read_text()
    assert "| committed | this run |" in report
    assert "![committed geometric_decay.png](diagrams/geometric_decay.png)" in report
    assert "![geometric_decay.png](obtained/diagrams/geometric_decay.png)" in report
    rows = html_rows(project / "report.html")
    [row] = [r for name, r in rows.items() if name.endswith("test_geometric_decay_figure_is_drawn")]
    [moved] = [e["content"] for e in row["extras"] if "claimlog-figure-moved" in e["content"]]
    assert "committed: geometric_decay.png" in moved and "this run: geometric_decay.png" in moved
    assert moved.count("data:image/png;base64,") == 2
