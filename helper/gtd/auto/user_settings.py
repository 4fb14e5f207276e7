"""The one key of the person's Claude Code user settings that keeps a night's
loop from waiting at a prompt, set for the loop's duration only, with consent.

Claude Code 2.1.332 asks the person, and waits, about a sandboxed command's
connection to a host no setting allows (and about any other call no rule
decides) in the default, Accept Edits and Plan modes of an interactive session.
``permissions.denyInsteadOfPrompting: true`` turns every such prompt into a
refusal the model is told of; ``sandbox.network.strictAllowlist`` would cover
the network only. Claude Code reads both only from the user settings
(``~/.claude/settings.json``, or ``$CLAUDE_CONFIG_DIR/settings.json``),
``--settings`` and managed settings, never from the project's files where the
sandbox block goes (gtd.auto.sandbox), and a running session cannot be given
``--settings``. So `gtd auto setup --user-settings` (or ``GTD_USER_SETTINGS=on``)
merges it into the user settings; the loop's end, `gtd auto sandbox --off` and
`install.py --uninstall` take it out (docs/sandbox.md).

Not the default: the user settings apply to every Claude Code session of the
person while the loop runs, where a prompt then becomes a refusal.

The same merge and record as the project's block: what was merged, and the
person's bytes, recorded in the user's state folder (``$XDG_STATE_HOME/gtd``),
written before the settings, so a crash in between leaves a record of a key not
there yet (removal skips it), never a key no record names. A value the person
changed meanwhile is theirs and stays. Several repositories' loops may hold the
key at once (``owners``): it goes when the last one ends.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gtd.auto.faults import crash_point
from gtd.auto.sandbox import merge, read_settings, registry_path, unmerge
from gtd.fsio import atomic_write, read_bytes

if TYPE_CHECKING:
    from typing import Any

KEY = ("permissions", "denyInsteadOfPrompting")
BLOCK: dict[str, Any] = {"permissions": {"denyInsteadOfPrompting": True}}
RECORD = "user-settings.json"  # beside the sandbox registry
ENV = "GTD_USER_SETTINGS"


def settings_path(env: Mapping[str, str] | None = None) -> Path:
    """The user settings Claude Code reads: ``$CLAUDE_CONFIG_DIR/settings.json``
    or ``~/.claude/settings.json``."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    return Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "settings.json"


def record_path() -> Path:
    return registry_path().parent / RECORD


def consented(flag: bool, env: Mapping[str, str] | None = None) -> bool:
    """The person's consent: the setup flag, or ``GTD_USER_SETTINGS=on`` in
    gtd's environment (a standing yes, from a shell profile)."""
    env = os.environ if env is None else env
    return flag or env.get(ENV, "").strip().lower() in {"on", "1", "yes", "true"}


def _record() -> dict[str, Any] | None:
    try:
        data = json.loads(read_bytes(record_path()))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("leaves"), list) else None


def owners() -> list[str]:
    """The repositories whose loop holds the key now."""
    data = _record()
    found = data.get("owners") if data else None
    return [p for p in found if isinstance(p, str)] if isinstance(found, list) else []


def _target(path: Path) -> Path:
    """The file itself where the settings are a link (a dotfiles checkout): an
    atomic replace of the link would leave a plain file in its place."""
    return Path(os.path.realpath(path))


def _load(path: Path) -> tuple[dict[str, Any], str | None]:
    return read_settings(path, path, "fix it, then run `gtd auto setup` again", limit=1 << 22)


def hold(root: Path) -> Path:
    """Merge the key into the user settings for the loop of ``root`` (the
    settings file written). A second hold replaces exactly ours, so a record a
    crash left half done is made whole."""
    here = str(Path(os.path.realpath(root)))
    before = owners()
    _take_out()
    path = _target(settings_path())
    settings, original = _load(path)
    merged, leaves = merge(settings, BLOCK, ())
    data = {
        "settings": str(path),
        "created": original is None,
        "folder_created": not path.parent.exists(),
        "original": original,
        "leaves": leaves,
        "owners": sorted({*before, here}),
    }
    # The record first: a crash between the two writes leaves a record of a key
    # that is not there yet, which removal skips.
    atomic_write(record_path(), json.dumps(data, indent=2) + "\n")
    crash_point("user-settings-recorded")
    atomic_write(path, json.dumps(merged, indent=2) + "\n")
    return path


def release(root: Path) -> bool:
    """The loop of ``root`` has ended: the key goes when no other repository's
    loop holds it (a repository no longer there holds nothing). Whether the
    settings were given back."""
    data = _record()
    if data is None:
        return False
    here = str(Path(os.path.realpath(root)))
    left = [p for p in owners() if p != here and Path(p, ".git").exists()]
    if left:
        if left != owners():
            atomic_write(record_path(), json.dumps({**data, "owners": left}, indent=2) + "\n")
        return False
    return _take_out()


def release_all() -> bool:
    """Take the key out whoever holds it (`install.py --uninstall`)."""
    return _take_out()


def _take_out() -> bool:
    """Take out exactly what :func:`hold` recorded and drop the record."""
    data = _record()
    if data is None:
        return False
    path = Path(str(data.get("settings") or _target(settings_path())))
    original = data.get("original")
    if path.is_file():
        # A file the person broke meanwhile raises: left alone, and the record
        # stays so a run after their fix still takes the key out.
        settings, _ = _load(path)
        cleaned = unmerge(settings, data["leaves"])
        if data.get("created") and not cleaned:
            path.unlink()
            if data.get("folder_created"):
                with contextlib.suppress(OSError):  # not empty: Claude Code's files
                    path.parent.rmdir()
        elif isinstance(original, str) and _parses_to(original, cleaned):
            if read_bytes(path).decode("utf-8", "replace") != original:
                atomic_write(path, original)
        elif cleaned != settings:
            atomic_write(path, json.dumps(cleaned, indent=2) + "\n")
    record_path().unlink(missing_ok=True)
    return True


def _parses_to(text: str, value: dict[str, Any]) -> bool:
    try:
        return bool(json.loads(text) == value) if text.strip() else value == {}
    except ValueError:
        return False


def follow_setup(root: Path, answer: dict[str, Any], flag: bool) -> None:
    """After `gtd auto setup` answered: with consent and a ready loop, hold the
    key; without consent, release this repository's hold; say which in the
    answer's ``prompts`` line (gtd.doctor's wording)."""
    from gtd.errors import GtdError

    if answer.get("status") != "ready":
        return
    try:
        if consented(flag):
            path = hold(root)
            answer["prompts"] = f"refused, not asked ({'.'.join(KEY)}: true in {path})"
            return
        release(root)
    except (OSError, GtdError) as exc:
        said = f"user settings: {exc}"
        earlier = answer.get("warning")
        answer["warning"] = f"{earlier}; {said}" if earlier else said
    why, _ = prompt_waits(Path(os.path.expanduser("~")), os.environ)
    if why is not None:
        answer["prompts"] = (
            "can wait for you (run setup with --user-settings to refuse them; docs/sandbox.md)"
        )


def prompt_waits(home: Path, env: Mapping[str, str]) -> tuple[str | None, str]:
    """(None, which setting in which file refuses every prompt) when no
    permission prompt of Claude Code can wait for a person; else (why, the file
    to fix). ``strictAllowlist`` alone refuses only the network's."""
    from gtd.auto.sandbox import _MANAGED

    user = settings_path({**env, "HOME": str(home)})
    for path in (*(Path(p) for p in _MANAGED), user):
        try:
            data = json.loads(read_bytes(path, limit=1 << 22))
        except (OSError, ValueError):
            continue
        node: Any = data
        for key in KEY:
            node = node.get(key) if isinstance(node, dict) else None
        if node is True:
            return None, f"{'.'.join(KEY)}: true in {path}"
    return "a permission prompt in an interactive session asks you and waits", str(user)
