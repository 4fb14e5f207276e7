import pytest
from cart import Cart


def test_an_empty_cart_costs_nothing() -> None:
    assert Cart().total() == 0


def test_the_total_adds_up_every_item() -> None:
    cart = Cart()
    cart.add("apple", 50)
    cart.add("bread", 250)
    assert cart.total() == 300


def test_adding_an_item_again_adds_to_its_quantity() -> None:
    cart = Cart()
    cart.add("apple", 50)
    cart.add("apple", 50)
    assert cart.items["apple"] == (50, 2)
    assert cart.total() == 100


def test_a_negative_price_is_refused() -> None:
    with pytest.raises(ValueError, match="negative price"):
        Cart().add("apple", -1)


def test_a_quantity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Cart().add("apple", 50, qty=0)
