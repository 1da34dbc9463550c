"""partner.ui: the embedded pages and the origin proxy."""

from .environment import env

# partner.ui: the embedded pages and the origin proxy
# ------------------------------------------------------------------------------
# partner/ui/__init__.py
# The page renews its origin with the service this often (seconds; an origin lives 300 s).
UI_ORIGIN_REFRESH_AFTER = env.int("UI_ORIGIN_REFRESH_AFTER", default=240)
# While an automated order runs, the lender's open panel asks for news this often (seconds); while a
# staff-worked order is with staff (hours or days), this often.
UI_PROGRESS_POLL_SECONDS = env.int("UI_PROGRESS_POLL_SECONDS", default=3)
UI_STAFF_POLL_SECONDS = env.int("UI_STAFF_POLL_SECONDS", default=15)
# The panel session (partner/ui/panel_sessions.py): once the origin proxy checked the origin with the
# service, the panel's polls and downloads show this signed token instead, for this many seconds.
UI_PANEL_SESSION_SECONDS = env.int("UI_PANEL_SESSION_SECONDS", default=300)
