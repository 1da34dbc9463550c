"""The staff's work on the orders that need people: rules, admin pages, forms, e-mails to staff."""
