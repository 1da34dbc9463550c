"""Helpers of the fault drills (the `demo` data and the `service_calls` recorder are in tests/conftest.py)."""

from partner.sandbox.transactions import transaction_create


def order(seed, count: int) -> list[str]:
    return [
        transaction_create(
            product=seed.products["address-verification"], user=seed.users["lender.demo"], loan=seed.loans[2]
        ).id
        for _ in range(count)
    ]
