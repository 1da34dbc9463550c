"""The lender's panel session: the origin, checked once with the service, as a short-lived signed token.

The page reads the origin through the origin proxy, which calls the service and checks the
lender's credentials. That answer carries a panel session: who the lender is to us (partner
account and company), which product and which loan, signed with the deployment's secret key
(`SECRET_KEY`, rotated with `SECRET_KEY_FALLBACKS`) and good for `UI_PANEL_SESSION_SECONDS`. The
progress poll and the document download take it in the `X-Panel-Session` header instead of the
origin: they cost the service no call and need no secret of the lender's. The page renews it
with the origin (`refreshOrigin`, then the proxy again) before it runs out; an expired or forged
one is refused like an expired origin, and the page renews.

Nothing secret is inside (the token is signed, not encrypted): ids the page already knows.
"""

from dataclasses import asdict, dataclass

from django.conf import settings
from django.core import signing

from partner.ui.errors import PanelSessionInvalid

PANEL_SESSION_HEADER = "HTTP_X_PANEL_SESSION"
_SALT = "partner.ui.panel-session"
# A signed token of our own is a few hundred characters; anything far longer is not one.
_MAX_TOKEN_LENGTH = 2048


@dataclass(frozen=True)
class PanelSession:
    """Whose panel it is: what the origin proxy checked with the service."""

    origin_id: str
    product_name: str
    loan_number: str
    account_id: int | None
    company_id: int | None

    def lender(self) -> dict:
        """Whose orders it may see (the keywords of the UI's selectors)."""
        return {"product_name": self.product_name, "account_id": self.account_id, "company_id": self.company_id}


def panel_session_seconds() -> int:
    return int(settings.UI_PANEL_SESSION_SECONDS)


def panel_session_issue(session: PanelSession) -> str:
    """The signed token of `session` (timestamped: its age is checked when it comes back)."""
    return signing.dumps(asdict(session), salt=_SALT, compress=True)


def panel_session_read(token: str) -> PanelSession:
    """The session a token holds, when it is ours and younger than UI_PANEL_SESSION_SECONDS;
    PanelSessionInvalid otherwise."""
    if not token or len(token) > _MAX_TOKEN_LENGTH:
        raise PanelSessionInvalid("no panel session")
    try:
        data = signing.loads(token, salt=_SALT, max_age=panel_session_seconds())
    except signing.SignatureExpired as exc:
        raise PanelSessionInvalid("the panel session has expired") from exc
    except signing.BadSignature as exc:
        raise PanelSessionInvalid("not a panel session of ours") from exc
    try:
        return PanelSession(**data)
    except TypeError as exc:  # signed by us, but for an older shape: renew
        raise PanelSessionInvalid("a panel session of another shape") from exc
