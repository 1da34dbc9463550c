"""Named points in the code where a test may pause one actor while another acts.

Where several actors meet on one order (the sender, the service's callbacks, staff and API answers,
the connector's feed), the code marks the moments between which another actor may slip in with
`checkpoint("sender.patched")`. In production a checkpoint does nothing (one dictionary look-up);
a test installs a hook at a name (`checkpoint_install`) to hold the thread that reaches it until the
test has made the other actor act, so a race is reproduced every time, in the order the test names
(the shape of PostgreSQL's isolation tester), instead of one run in twenty.

The names, and where they are:
- `sender.fenced`: the sender confirmed its lease for a delivery's PATCH; the PATCH is not sent yet.
- `sender.patched`: the service accepted a delivery's PATCH; the sender has not recorded it yet.
- `run.looked`: an order's run sent everything it found waiting; it has not released the order yet.
- `callback.confirmed`: a "processed" callback confirmed a delivery; its transaction has not committed.
- `relay.published`: a relay (`partner.core.enqueue.rows_relay`) published its tasks; the rows it
  took are not committed yet.
- `events.next_chosen`: a send that delivered chose the next event due to hand its place to
  (`partner.connector.sending._place_hand_on`); it has not taken that event's lease yet.
- `events.next_taken`: it took that lease; its transaction (the delivered event's release with it)
  has not committed yet.
- `events.handed_on`: a send that delivered took the lease of the next event due for its own thread
  (`partner.connector.sending.events_send`); that event is not sent yet.
"""

from collections.abc import Callable

_hooks: dict[str, Callable[[], None]] = {}


def checkpoint(name: str) -> None:
    """Run the hook a test installed at `name`, if any (nothing otherwise)."""
    hook = _hooks.get(name)
    if hook is not None:
        hook()


def checkpoint_install(name: str, hook: Callable[[], None]) -> None:
    """Have every thread that reaches checkpoint `name` call `hook` there (a test's)."""
    _hooks[name] = hook


def checkpoint_remove(name: str) -> None:
    _hooks.pop(name, None)
