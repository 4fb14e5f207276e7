"""`gtd validate [file]`: check the steering files against their formats.

Without a file it validates ``.gtd/TODO.md`` and ``.gtd/REVIEW.md`` where present,
from the repository root; with one, that file, its format decided by its name.
Exit 0 when every file is clean, 1 with every finding as ``path:line: message``.
The language server publishes the same findings (gtd.steering.check)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gtd.cli.output import emit
from gtd.errors import GtdError, InputError
from gtd.step.steering import REVIEW, TODO

DEFAULT_FILES = (TODO, REVIEW)  # what step mode checks (gtd.step.gather.CHECKED_FILES)


def _read(path: Path, shown: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise GtdError(f"{shown}: no such file") from None
    except IsADirectoryError:
        raise GtdError(f"{shown}: is a directory") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(shown, f"not UTF-8 text (byte {exc.start})") from None


def validate(file: str | None, as_json: bool) -> int:
    from gtd.steering import KIND_BY_NAME, check, kind_of

    targets: list[tuple[Path, str]] = []
    if file is None:
        from gtd.cli.output import root

        top = root()
        targets = [(top / rel, rel) for rel in DEFAULT_FILES if (top / rel).is_file()]
    else:
        if kind_of(file) is None:
            names = " or ".join(KIND_BY_NAME)
            raise GtdError(
                f"{file}: not a steering file", f"gtd validate checks files named {names}"
            )
        targets = [(Path(file), file)]

    results: list[dict[str, Any]] = []
    lines: list[str] = []
    for path, shown in targets:
        kind = kind_of(path)
        assert kind is not None
        findings = check(kind, _read(path, shown))
        results.append({"path": shown, "kind": kind, "findings": [f.to_json() for f in findings]})
        lines.extend(
            f"{shown}:{f.line}: {f.message}" + (" (warning)" if f.severity == "warning" else "")
            for f in findings
        )
    invalid = any(r["findings"] for r in results)
    if not results:
        text = "no steering files (.gtd/TODO.md, .gtd/REVIEW.md) to validate"
    elif invalid:
        count = len(lines)
        lines.append(f"invalid: {count} {'finding' if count == 1 else 'findings'}")
        text = "\n".join(lines)
    else:
        text = "\n".join(f"{r['path']}: ok" for r in results)
    emit({"status": "invalid" if invalid else "ok", "files": results}, text, as_json)
    return 1 if invalid else 0
