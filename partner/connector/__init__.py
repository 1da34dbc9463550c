"""The connector: a partner's own order system told of its orders and answering them through our API."""
