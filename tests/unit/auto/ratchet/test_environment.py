"""The environment's fingerprint, on real folders: what changes it and what does
not (gtd.auto.ratchet.environment)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gtd.auto.ratchet.environment import changes, fingerprint


def _again(site: Path, before: dict[str, str]) -> list[str]:
    """What changed since ``before``, as `cycle end` asks."""
    return changes(before, fingerprint([str(site)], like=before))


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site-packages"
    (site / "lib").mkdir(parents=True)
    (site / "lib" / "__init__.py").write_text("VALUE = 1\n")
    (site / "single.py").write_text("VALUE = 1\n")
    (site / "dev.pth").write_text("/somewhere\n")
    return site


def test_a_first_bytecode_cache_in_a_package_changes_nothing(tmp_path: Path) -> None:
    site = _site(tmp_path)
    before = fingerprint([str(site)])
    (site / "lib" / "__pycache__").mkdir()
    (site / "lib" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0" * 16)
    (site / "__pycache__").mkdir()
    assert _again(site, before) == []


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache-yet", "cached"])
def test_an_entry_added_to_a_package_or_taken_from_it_is_a_change(
    tmp_path: Path, cached: bool
) -> None:
    """A package with no bytecode cache yet is read by its names, one with a
    cache by its modification time: either way an entry added, or one renamed,
    is a change."""
    site = _site(tmp_path)
    if cached:
        (site / "lib" / "__pycache__").mkdir()
    before = fingerprint([str(site)])
    assert before[str(site / "lib")].startswith("d:" if cached else "n:")
    time.sleep(0.05)  # file times come from a clock that ticks every few ms
    (site / "lib" / "extra.py").write_text("")
    assert _again(site, before) == [f"{site / 'lib'} modified"]
    (site / "lib" / "extra.py").unlink()
    (site / "lib" / "__init__.py").rename(site / "lib" / "moved.py")
    assert _again(site, before) == [f"{site / 'lib'} modified"]


def test_top_level_files_by_size_and_time_and_pth_files_by_content(tmp_path: Path) -> None:
    site = _site(tmp_path)
    before = fingerprint([str(site)])
    (site / "single.py").write_text("VALUE = 22\n")
    pth = site / "dev.pth"
    was = pth.stat()
    pth.write_text("/elsewher\n")  # the same size, and its time set back
    os.utime(pth, ns=(was.st_atime_ns, was.st_mtime_ns))
    (site / "new.py").write_text("")
    (site / ".hidden-tool-folder").mkdir()
    assert _again(site, before) == [
        f"{site / 'new.py'} added",
        f"{pth} modified",
        f"{site / 'single.py'} modified",
    ]


def test_a_file_edited_inside_a_package_is_left_to_the_runs(tmp_path: Path) -> None:
    """The fingerprint reads top-level entries: the end's runs judge the files
    they run by change time (tests/integration/test_ratchet_environment_files.py)."""
    site = _site(tmp_path)
    before = fingerprint([str(site)])
    (site / "lib" / "__init__.py").write_text("VALUE = 2222\n")
    assert _again(site, before) == []


def test_a_package_folder_swapped_for_a_copy_with_the_same_names_is_a_change(
    tmp_path: Path,
) -> None:
    """An older copy of the package moved into its place: the same names, files
    that keep their old change times; the folder is another inode."""
    site = _site(tmp_path)
    old = tmp_path / "older-copy"
    old.mkdir()
    (old / "__init__.py").write_text("VALUE = 0\n")
    before = fingerprint([str(site)])
    (site / "lib" / "__init__.py").unlink()
    (site / "lib").rmdir()
    old.rename(site / "lib")
    assert _again(site, before) == [f"{site / 'lib'} modified"]


def test_a_path_entry_with_nothing_there_yet_is_watched(tmp_path: Path) -> None:
    """The interpreter's own ``pythonXY.zip`` is on the path before its library,
    and usually absent: an archive made there during the cycle would shadow any
    module of the standard library."""
    import zipfile

    from gtd.auto.ratchet.environment import outside

    site, archive = _site(tmp_path), tmp_path / "python311.zip"
    dirs = outside([str(archive), str(site), "relative"], [str(tmp_path / "repo")])
    assert dirs == [str(archive), str(site)]
    before = fingerprint(dirs)
    assert before[str(archive)] == "missing"
    with zipfile.ZipFile(archive, "w") as made:
        made.writestr("statistics.py", "def fmean(values): return 0.0\n")
    assert changes(before, fingerprint(dirs, like=before)) == [f"{archive} modified"]


def test_a_seal_of_another_description_format_is_not_compared(tmp_path: Path) -> None:
    """A helper upgraded while a cycle is in flight: the seal `begin` took
    describes entries as the old helper did, and every entry would read as
    changed to the new one. Only a seal of this format is compared."""
    from gtd.auto.cycle.seals import environment_changes
    from gtd.auto.ratchet.environment import FORMAT

    site = _site(tmp_path)
    dirs = [str(site)]
    begun = fingerprint(dirs)
    sealed = {"environment": begun, "environment_format": FORMAT}
    (site / "new.py").write_text("")
    assert environment_changes(sealed, dirs) == [f"{site / 'new.py'} added"]
    old = {"environment": {p: "f:1:2" for p in begun}}
    assert environment_changes(old, dirs) == []


def test_the_variables_the_interpreter_reads_are_watched_by_digest() -> None:
    from gtd.auto.ratchet.environment import variable_changes, variables

    begun = variables({"PYTHONPATH": "/a", "PATH": "/bin", "PYTHONUNBUFFERED": "1", "HOME": "/h"})
    assert list(begun) == ["PYTHONPATH"]
    assert "/a" not in begun.values()
    now = variables({"PYTHONPATH": "/b", "PYTHONOPTIMIZE": "1", "LD_PRELOAD": "x.so"})
    assert variable_changes(begun, now) == [
        "LD_PRELOAD set",
        "PYTHONOPTIMIZE set",
        "PYTHONPATH changed",
    ]
    gone = ["LD_PRELOAD unset", "PYTHONOPTIMIZE unset", "PYTHONPATH unset"]
    assert variable_changes(now, {}) == gone
