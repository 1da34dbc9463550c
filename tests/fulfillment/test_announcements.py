"""What the receivers of an announcing transaction may remember (`announcements.atomic`): for that
transaction only, in its own thread only."""

import threading

import pytest

from partner.fulfillment.orders import announcements

pytestmark = pytest.mark.django_db


def test_outside_an_announcing_transaction_a_receiver_remembers_nothing():
    assert announcements.remembered("receiver") is None


def test_a_receiver_s_memory_lasts_as_long_as_the_transaction():
    with announcements.atomic():
        announcements.remembered("receiver")["order"] = False
        assert announcements.remembered("receiver") == {"order": False}
        assert announcements.remembered("another") == {}
    assert announcements.remembered("receiver") is None


def test_a_nested_announcing_transaction_shares_the_outer_one_s_memory():
    # What a nested block learns or corrects (an acknowledgement's route) stays true for the outer one.
    with announcements.atomic():
        announcements.remembered("receiver")["order"] = False
        with announcements.atomic():
            assert announcements.remembered("receiver") == {"order": False}
            announcements.remembered("receiver")["order"] = True
        assert announcements.remembered("receiver") == {"order": True}


def test_another_thread_sees_none_of_a_transaction_s_memory():
    seen = []
    with announcements.atomic():
        announcements.remembered("receiver")["order"] = False
        thread = threading.Thread(target=lambda: seen.append(announcements.remembered("receiver")))
        thread.start()
        thread.join(timeout=10)
    assert seen == [None]
