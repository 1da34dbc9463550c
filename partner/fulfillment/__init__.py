"""Trackers and the Celery pipeline that fulfils each transaction."""
