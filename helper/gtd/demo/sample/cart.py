"""A shopping cart: items with unit prices in cents, and what they cost together."""

from __future__ import annotations


class Cart:
    def __init__(self) -> None:
        # item name -> (unit price in cents, quantity)
        self.items: dict[str, tuple[int, int]] = {}

    def add(self, name: str, price: int, qty: int = 1) -> None:
        """Put `qty` of an item in the cart; adding it again adds to its quantity."""
        if price < 0:
            raise ValueError(f"negative price for {name}: {price}")
        if qty < 1:
            raise ValueError(f"quantity must be at least 1, not {qty}")
        _, held = self.items.get(name, (price, 0))
        self.items[name] = (price, held + qty)

    def total(self) -> int:
        """What the cart costs, in cents."""
        return sum(price * qty for price, qty in self.items.values())
