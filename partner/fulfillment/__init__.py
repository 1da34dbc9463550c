"""Trackers and the Celery pipeline that fulfills each transaction."""
