"""The Redis cache of runs that share a Redis database (the test runs and their workers): each clears
its own keys only."""

import pytest
from django.conf import settings

from partner.core.cache import PrefixedRedisCache


def test_a_prefixed_cache_clears_its_own_keys_only():
    location = settings.CACHES["default"]["LOCATION"]
    if not str(location).startswith("redis://"):
        pytest.skip("the cache is not Redis (CACHE_URL)")
    ours = PrefixedRedisCache(location, {"KEY_PREFIX": f"{settings.RUN_ID}-ours[*]"})  # glob characters too
    theirs = PrefixedRedisCache(location, {"KEY_PREFIX": f"{settings.RUN_ID}-ours-theirs"})
    try:
        ours.set("key", 1)
        ours.set("key", 2, version=2)
        theirs.set("key", 3)
        ours.clear()
        assert ours.get("key") is None and ours.get("key", version=2) is None
        assert theirs.get("key") == 3  # Django's RedisCache would have emptied the database (FLUSHDB)
    finally:
        theirs.clear()
