"""Webhook intake: every notification the service sends, stored before it is answered."""
