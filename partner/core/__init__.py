"""Pieces every app shares: base model, errors, API error handler, logging, framing, health."""
