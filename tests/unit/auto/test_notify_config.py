"""The `notify:` section of .deepflow/config.yaml, and the one-liners of
docs/notifications.md read through it as a person would paste them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gtd.auto.config import load_auto_config
from gtd.errors import InputError
from gtd.paths import CONFIG as CONFIG_PATH
from gtd.proc import command_argv

DOC = Path(__file__).resolve().parents[3] / "docs" / "notifications.md"


def write(root: Path, text: str) -> None:
    path = root / CONFIG_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_notifier_and_its_bound_are_read(tmp_path: Path) -> None:
    write(tmp_path, "notify:\n  command: ./tell.sh --loud\n  timeout_seconds: 2.5\n")
    config = load_auto_config(tmp_path)
    assert (config.notify_command, config.notify_timeout_s) == ("./tell.sh --loud", 2.5)
    write(tmp_path, "notify:\n  command: null\n")
    assert load_auto_config(tmp_path).notify_command is None


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("notify:\n  comand: x\n", "unknown key notify.comand"),
        ("notify:\n  command: x\n  timeout_seconds: 0\n", "notify.timeout_seconds"),
        ('notify:\n  command: "echo \'open"\n', "cannot split the command"),
        ("notify: ntfy\n", "notify must be a mapping"),
    ],
)
def test_a_mistake_names_its_line(tmp_path: Path, text: str, fragment: str) -> None:
    write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        load_auto_config(tmp_path)
    assert fragment in caught.value.render()


def test_every_one_liner_in_the_docs_reads_as_a_shell_command(tmp_path: Path) -> None:
    blocks = re.findall(r"```yaml\n(notify:\n.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 6  # the first example, then Linux, macOS, ntfy, Slack, Discord
    for block in blocks:
        write(tmp_path, block)
        command = load_auto_config(tmp_path).notify_command
        assert command is not None, block
        argv, via_shell = command_argv(command)
        assert via_shell, command  # each uses $GTD_... : only a shell expands it
        assert argv[:2] == ["/bin/sh", "-c"]
