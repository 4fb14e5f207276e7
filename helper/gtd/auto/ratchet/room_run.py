"""One run of the configured commands in a clean room, as the judging and the
baseline make it (through gtd.auto.ratchet.commands): what the plugin is asked
to collect and guard, and what a run collected."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from gtd.auto.config import AutoConfig
from gtd.auto.ratchet import box, checklog, commands, hypotables, protect, report_listener, room
from gtd.auto.ratchet import files as files_mod
from gtd.auto.ratchet.held import Held
from gtd.auto.ratchet.results import Item
from gtd.git_parse import TreeEntry

PASSING = frozenset({"passed", "xpassed"})  # the outcomes a test passes with


def run(
    rm: room.Room,
    config: AutoConfig,
    env: dict[str, str],
    *,
    only_files: tuple[str, ...] | None = None,
    only_ids: tuple[str, ...] | None = None,
    only: frozenset[str] = frozenset({"build", "test", "typecheck", "lint"}),
    held: Held | None = None,
    guarded: tuple[str, ...] | None = None,
    ended: Callable[[], None] | None = None,
) -> commands.Run:
    """The configured commands in the room: the plugin collects only ``only_files``
    (or runs only ``only_ids``), no module may load from the live repository, and
    editable installs of the project load from the room instead. ``held``: the
    test command already started (gtd.auto.ratchet.held); ``guarded``: the
    protected Python files whose values the plugin guards (:func:`guarded_files`);
    ``ended``: called when the last command has ended (commands.run_all)."""
    request = report_listener.Request(
        rm.tree,
        only_files=only_files,
        only_ids=only_ids,
        forbidden=(rm.live,),
        redirect=report_listener.Redirect(rm.live, rm.tree),
        guarded=guarded,
        env_since_ns=None if rm.began is None else int(rm.began * 1e9),
    )
    boxed = box.plan(config)
    checklog.note(boxed.described)
    ran = commands.run_all(
        rm.tree,
        config,
        env=env,
        reports_dir=rm.slot / "reports",
        only=only,
        request=request,
        held=held,
        ended=ended,
        box=boxed,
        readable=(str(rm.live),),
        writable=(str(hypotables.folder(rm.slot)),),
    )
    hypotables.keep(rm.slot)
    return ran


def collected(items: Sequence[Item]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files holding tests, source modules whose only tests are doctests)."""
    whole = {i.file for i in items if i.kind != "doctest-module" and i.file}
    modules = {i.file for i in items if i.kind == "doctest-module" and i.file} - whole
    return tuple(sorted(whole)), tuple(sorted(modules))


def guarded_files(
    guarded: Mapping[str, protect.Protection],
    base: Mapping[str, TreeEntry],
    declared: Sequence[str] = (),
) -> tuple[str, ...]:
    """The Python files among the wholly protected ones the judged tree takes from
    the base (``base``: its listing): test modules, conftests, the tests' helpers.
    The plugin records the values their modules hold (globals, class attributes,
    default arguments, closures) and what they read of builtins and libraries,
    and names each one changed by the end of the session: the change cannot edit
    these files, and must not change what they read either. The baseline's run
    is given the same files, so what the tests themselves change (a cache, a
    counter) is evidence there too and is not held against a change.

    A module outside the test folders is guarded only when ``declared``
    (``ratchet.protect``) names it: one the snapshot holds because the tests
    import it and it asserts (gtd.auto.ratchet.leaned) is held by its content,
    as its own code may change its values while the tests run (pyparsing's
    ``pyparsing.testing``), which no baseline run recorded."""
    candidates = [
        p
        for p, why in guarded.items()
        if why.whole and p.endswith(".py") and p in base and base[p].kind == "blob"
    ]
    plain = [p for p in candidates if files_mod.is_test_path(p) or protect.is_protected_path(p)]
    others = [p for p in candidates if p not in plain]
    if others and declared:
        plain += [p for p in others if _declared(declared, p)]
    return tuple(sorted(plain))


def _declared(patterns: Sequence[str], path: str) -> bool:
    """Whether ``ratchet.protect`` names ``path``: plain folder or file names
    (`fixtures/`, `pkg/testing.py`) read here, anything else by gitignore's
    rules (pathspec, ~35 ms of imports a run does without where it can)."""
    if any(ch in pat for pat in patterns for ch in "*?[!\\"):
        return protect.declared(patterns)(path)
    for pat in patterns:
        name = pat.strip().strip("/")
        if not name:
            continue
        if "/" in name:  # anchored at the top, as gitignore reads it
            if path == name or path.startswith(name + "/"):
                return True
        elif f"/{name}/" in f"/{path}/" or path.endswith("/" + name) or path == name:
            return True
    return False
