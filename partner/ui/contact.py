"""How the lender reaches the partner: the name, phone and e-mail of the `respondingParty` every
response of ours carries (`partner_party`, from the PARTNER_* settings), so the panel's "contact the
partner" always says who and how. Public contact details only."""

from partner.fulfillment.automated.fulfillers.base import partner_party


def partner_contact() -> dict:
    """`{name, phone, email}` of the partner, as the responses name it (blank when a setting is)."""
    party = partner_party()
    return {"name": party.name, "phone": party.point_of_contact.phone, "email": party.point_of_contact.email}
