"""Admin of the catalog: products kept in step with the service, and partner companies and accounts.

Django's autodiscovery imports this package; each module registers its pages.
Secrets are write-only everywhere: a signing secret, a password or a secret
company value is typed in, stored encrypted or hashed, and only ever shown as "set".
"""

from . import accounts, products  # noqa: F401  (importing registers the pages)
