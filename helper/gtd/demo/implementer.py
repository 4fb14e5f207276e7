"""The demo's scripted implementer: an agent process for `gtd loop --agent`.

It behaves as an agent would on the sample project's plan (gtd/demo/sample): it
reads the brief on stdin, works in the repository root (its working directory),
edits files, leaves the work uncommitted and says what it did. Only the choice of
edits is scripted; everything after it — the ratchet, the commit or the exact
revert, memory, the report — is gtd's own work on a real repository.

Like a real agent it learns from the brief alone: a task whose brief lists no
earlier reverted attempt gets its first attempt, a brief that lists one gets the
second. So the night goes:

- T1 is done right the first time;
- T2's first attempt rewrites ``add()`` and loses the quantity merge, breaking a
  test: reverted; the second attempt is correct;
- T3's first attempt is off by one (bulk price from two items) and, to get the
  suite green, loosens the existing test it broke: the ratchet refuses a modified
  snapshot test and reverts; the second attempt is correct;
- T4 is done right the first time.

The same attempts drive the scripted model of ``gtd demo --claude``
(gtd.demo.model_rules), as Edit and Write tool calls of the implementer subagent.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# -- what an attempt is ------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """Write ``text`` to ``path``, which must hold ``base`` first (None: must not
    exist). The Write tool, after reading the file: an agent that finds the file
    other than it expects stops instead of clobbering it."""

    path: str
    text: str
    base: str | None = None


@dataclass(frozen=True)
class Attempt:
    """One try at a task: the writes, what the implementer says it did, and what the
    ratchet is expected to answer (None: it passes; else a fragment of the reason
    it reverts the attempt with). Inside Claude Code the pack's guard hook refuses
    a write to a protected test before the ratchet ever sees it; `guarded` is the
    ratchet's answer there when it differs."""

    summary: str
    writes: tuple[Write, ...]
    refused: str | None = None
    guarded: str | None = None

    def verdict(self, in_claude: bool) -> str | None:
        return self.guarded if in_claude and self.guarded is not None else self.refused


class ScriptError(Exception):
    """The repository or the brief is not what the script was written for."""


# -- the sample's cart.py as the night changes it ----------------------------------


def cart_py(
    *,
    remove: bool = False,
    codes: bool = False,
    merge: bool = True,
    bulk_from: int | None = None,
    receipt: bool = False,
) -> str:
    """cart.py with the given features. ``cart_py()`` is the sample as shipped;
    ``merge=False`` is the broken ``add()``; ``bulk_from=2`` the off-by-one."""
    top = [
        '"""A shopping cart: items with unit prices in cents, and what they cost together."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    if codes:
        top += [
            "# Discount codes and the percentage each takes off the total.",
            'CODES = {"SAVE10": 10}',
        ]
    if bulk_from is not None:
        top += [
            "# From this many of one item on, each costs BULK_PERCENT less.",
            f"BULK_FROM = {bulk_from}",
            "BULK_PERCENT = 10",
        ]
    if codes or bulk_from is not None:
        top.append("")
    init = [
        "class Cart:",
        "    def __init__(self) -> None:",
        "        # item name -> (unit price in cents, quantity)",
        "        self.items: dict[str, tuple[int, int]] = {}",
    ]
    if codes:
        init.append("        self.discount = 0  # percent off the total, set by apply_code()")
    add = [
        "    def add(self, name: str, price: int, qty: int = 1) -> None:",
        '        """Put `qty` of an item in the cart; adding it again adds to its quantity."""',
        "        if price < 0:",
        '            raise ValueError(f"negative price for {name}: {price}")',
        "        if qty < 1:",
        '            raise ValueError(f"quantity must be at least 1, not {qty}")',
    ]
    if merge:
        add += [
            "        _, held = self.items.get(name, (price, 0))",
            "        self.items[name] = (price, held + qty)",
        ]
    else:
        add += ["        self.items[name] = (price, qty)"]
    methods = [init, add]
    if remove:
        methods.append(
            [
                "    def remove(self, name: str, qty: int = 1) -> None:",
                '        """Take `qty` of an item out of the cart; at zero the item leaves it."""',
                "        if name not in self.items:",
                "            raise KeyError(name)",
                "        price, held = self.items[name]",
                "        if held <= qty:",
                "            del self.items[name]",
                "        else:",
                "            self.items[name] = (price, held - qty)",
            ]
        )
    if codes:
        methods.append(
            [
                "    def apply_code(self, code: str) -> None:",
                '        """Take a discount code\'s percentage off the total."""',
                "        if code not in CODES:",
                '            raise ValueError(f"unknown discount code: {code}")',
                "        self.discount = CODES[code]",
            ]
        )
    if receipt:
        methods.append(
            [
                "    def receipt(self) -> str:",
                '        """One line per item (`2 x apple  1.00`), then the total, in euros."""',
                "        lines = [",
                '            f"{qty} x {name}  {euros(unit_price(price, qty) * qty)}"',
                "            for name, (price, qty) in self.items.items()",
                "        ]",
                '        lines.append(f"total  {euros(self.total())}")',
                '        return "\\n".join(lines)',
            ]
        )
    each = "unit_price(price, qty)" if bulk_from is not None else "price"
    total = ["    def total(self) -> int:"]
    if codes:
        total += [
            '        """What the cart costs, in cents, after the discount (rounded down)."""',
            f"        full = sum({each} * qty for price, qty in self.items.values())",
            "        return full * (100 - self.discount) // 100",
        ]
    else:
        total += [
            '        """What the cart costs, in cents."""',
            f"        return sum({each} * qty for price, qty in self.items.values())",
        ]
    methods.append(total)
    functions = []
    if bulk_from is not None:
        functions.append(
            [
                "def unit_price(price: int, qty: int) -> int:",
                '    """What one item costs when `qty` of it are bought, rounded down."""',
                "    if qty >= BULK_FROM:",
                "        return price * (100 - BULK_PERCENT) // 100",
                "    return price",
            ]
        )
    if receipt:
        functions.append(
            [
                "def euros(cents: int) -> str:",
                '    """Cents as euros with two decimals: 1234 -> 12.34."""',
                '    return f"{cents // 100}.{cents % 100:02d}"',
            ]
        )
    body = "\n\n".join("\n".join(m) for m in methods)
    tail = "".join("\n\n\n" + "\n".join(f) for f in functions)
    return "\n".join(top) + "\n\n" + body + tail + "\n"


SAMPLE_TEST = "tests/test_cart.py"
# The assertion the off-by-one attempt at T3 breaks, and what it loosens it to.
STRICT = "    assert cart.total() == 100\n"
LOOSE = "    assert cart.total() > 0\n"

REMOVE_TEST = """\
import pytest

from cart import Cart


def test_removing_one_lowers_the_quantity() -> None:
    cart = Cart()
    cart.add("apple", 50, qty=3)
    cart.remove("apple")
    assert cart.items["apple"] == (50, 2)


def test_removing_the_last_one_drops_the_item() -> None:
    cart = Cart()
    cart.add("apple", 50)
    cart.remove("apple")
    assert cart.items == {}
    assert cart.total() == 0


def test_removing_an_item_not_in_the_cart_is_refused() -> None:
    with pytest.raises(KeyError):
        Cart().remove("pear")
"""

DISCOUNT_TEST = """\
import pytest

from cart import Cart


def test_save10_takes_ten_percent_off() -> None:
    cart = Cart()
    cart.add("bread", 250)
    cart.apply_code("SAVE10")
    assert cart.total() == 225


def test_the_discount_rounds_down_to_the_cent() -> None:
    cart = Cart()
    cart.add("gum", 15)
    cart.apply_code("SAVE10")
    assert cart.total() == 13


def test_an_unknown_code_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown discount code"):
        Cart().apply_code("FREE")
"""

BULK_TEST = """\
from cart import Cart


def test_three_of_one_item_cost_ten_percent_less_each() -> None:
    cart = Cart()
    cart.add("apple", 50, qty=3)
    assert cart.total() == 135


def test_two_of_one_item_cost_the_full_price() -> None:
    cart = Cart()
    cart.add("apple", 50, qty=2)
    assert cart.total() == 100


def test_the_bulk_price_rounds_down_to_the_cent() -> None:
    cart = Cart()
    cart.add("gum", 15, qty=4)
    assert cart.total() == 13 * 4
"""

RECEIPT_TEST = """\
from cart import Cart


def test_the_receipt_lists_every_item_then_the_total() -> None:
    cart = Cart()
    cart.add("apple", 50, qty=2)
    cart.add("bread", 250)
    assert cart.receipt() == "2 x apple  1.00\\n1 x bread  2.50\\ntotal  3.50"


def test_the_receipt_shows_bulk_prices() -> None:
    cart = Cart()
    cart.add("apple", 50, qty=3)
    assert cart.receipt() == "3 x apple  1.35\\ntotal  1.35"


def test_an_empty_receipt_is_just_the_total() -> None:
    assert Cart().receipt() == "total  0.00"
"""

_V1 = cart_py(remove=True)
_V2 = cart_py(remove=True, codes=True)
_V3 = cart_py(remove=True, codes=True, bulk_from=3)


def _sample_test() -> str:
    return (Path(__file__).resolve().parent / "sample" / SAMPLE_TEST).read_text(encoding="utf-8")


def script() -> dict[str, tuple[Attempt, ...]]:
    """Each task's attempts, in the order the implementer makes them."""
    original_test = _sample_test()
    if STRICT not in original_test:
        raise ScriptError(f"the sample's {SAMPLE_TEST} no longer has {STRICT.strip()!r}")
    return {
        "T1": (
            Attempt(
                "Added Cart.remove(name, qty=1) and tests/test_remove.py.",
                (Write("cart.py", _V1, cart_py()), Write("tests/test_remove.py", REMOVE_TEST)),
            ),
        ),
        "T2": (
            Attempt(
                "Added discount codes (CODES, Cart.apply_code) and tests/test_discount.py; "
                "tidied add() on the way.",
                (
                    Write("cart.py", cart_py(remove=True, codes=True, merge=False), _V1),
                    Write("tests/test_discount.py", DISCOUNT_TEST),
                ),
                refused="tests failed",
            ),
            Attempt(
                "Added discount codes (CODES, Cart.apply_code) and tests/test_discount.py; "
                "add() is left as it was this time.",
                (Write("cart.py", _V2, _V1), Write("tests/test_discount.py", DISCOUNT_TEST)),
            ),
        ),
        "T3": (
            Attempt(
                "Added the bulk price and tests/test_bulk.py; loosened a total in "
                "tests/test_cart.py that no longer matched.",
                (
                    Write("cart.py", cart_py(remove=True, codes=True, bulk_from=2), _V2),
                    Write("tests/test_bulk.py", BULK_TEST),
                    Write(SAMPLE_TEST, original_test.replace(STRICT, LOOSE, 1), original_test),
                ),
                refused=f"a protected test was changed: {SAMPLE_TEST}::",
                # The guard denies the edit to tests/test_cart.py; the bulk price
                # from two items then fails that test as it stands.
                guarded="tests failed",
            ),
            Attempt(
                "Added the bulk price (from three of one item) and tests/test_bulk.py; "
                "the existing tests are untouched.",
                (Write("cart.py", _V3, _V2), Write("tests/test_bulk.py", BULK_TEST)),
            ),
        ),
        "T4": (
            Attempt(
                "Added Cart.receipt() and tests/test_receipt.py.",
                (
                    Write("cart.py", final_cart(), _V3),
                    Write("tests/test_receipt.py", RECEIPT_TEST),
                ),
            ),
        ),
    }


def final_cart() -> str:
    """cart.py once every task is done."""
    return cart_py(remove=True, codes=True, bulk_from=3, receipt=True)


def expected(in_claude: bool = False) -> list[tuple[str, str | None]]:
    """The night as scripted: (task, None for a pass or the revert reason's fragment)
    for each cycle in order; `in_claude` with the guard hook in front of the tests."""
    return [(task, a.verdict(in_claude)) for task, attempts in script().items() for a in attempts]


def guarded_paths() -> frozenset[str]:
    """The files an attempt writes that the guard refuses inside Claude Code."""
    return frozenset(
        w.path
        for attempts in script().values()
        for a in attempts
        if a.guarded is not None
        for w in a.writes
        if w.path == SAMPLE_TEST
    )


# -- reading the brief and acting ---------------------------------------------------

_HEADING = re.compile(r"^# Cycle (\d+) \S+ (T\d+):", re.MULTILINE)
_EARLIER = "## Earlier attempts at this task were reverted"
_FAILED = re.compile(r"^- cycle \d+: ", re.MULTILINE)


def choose(brief: str) -> tuple[str, Attempt]:
    """The task the brief names and the attempt to make: the first when the brief
    lists no earlier reverted attempt, else the one after those it lists."""
    found = _HEADING.search(brief)
    if found is None:
        raise ScriptError("the brief has no `# Cycle N — T<n>: title` heading")
    task = found.group(2)
    attempts = script().get(task)
    if attempts is None:
        raise ScriptError(f"the script has no attempt at {task}")
    tried = 0
    if _EARLIER in brief:
        tried = len(_FAILED.findall(brief.split(_EARLIER, 1)[1].split("\n## ", 1)[0]))
    if tried >= len(attempts):
        raise ScriptError(f"the script has no attempt at {task} left after {tried} reverted")
    return task, attempts[tried]


def apply(root: Path, attempt: Attempt) -> None:
    """Make the attempt's writes in ``root``, after checking every file first."""
    for w in attempt.writes:
        path = root / w.path
        try:
            now = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            now = None
        if now != w.base:
            found = "missing" if now is None else "not as the script expects"
            want = "absent" if w.base is None else "its scripted content"
            raise ScriptError(f"{w.path} is {found} (it should be {want} before this edit)")
    for w in attempt.writes:
        path = root / w.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(w.text, encoding="utf-8")


def main() -> int:
    brief = sys.stdin.read()
    try:
        task, attempt = choose(brief)
        apply(Path.cwd(), attempt)
    except ScriptError as exc:
        print(f"scripted implementer: {exc}", file=sys.stderr)
        return 1
    print(f"{task}: {attempt.summary}")
    print("The work is left uncommitted for `gtd cycle end` to judge.")
    print(json.dumps({"gtd_usage": usage(brief, attempt)}))
    return 0


DEMO_MODEL = "claude-sonnet-4-5"


def usage(brief: str, attempt: Attempt) -> dict[str, object]:
    """What the scripted implementer says it used, as an agent CLI reports it
    (docs/cost.md, "The agent's usage line"): made-up but steady counts, in
    proportion to the brief it read and the code it wrote, so the demo's report
    shows the Tokens and Cost columns."""
    wrote = sum(len(w.text) for w in attempt.writes)
    return {
        "input": 2000 + len(brief) // 4,
        "output": 200 + wrote // 4,
        "cache_write": 1500,
        "cache_read": 12000,
        "model": DEMO_MODEL,
    }


if __name__ == "__main__":
    sys.exit(main())
