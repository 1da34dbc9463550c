"""The Redis cache of runs that share a Redis database (the test runs and their workers): each clears
its own keys only."""

import pytest
from django.conf import settings

from partner.core.cache import PrefixedRedisCache, RedisCache


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


def test_the_redis_cache_makes_its_redis_client_once_not_per_operation(monkeypatch):
    """Django's Redis cache makes a redis-py client per operation (about 100 µs of CPU each, half of a
    read: the token read before every call to the service); ours keeps the one it made, and a
    CACHE_URL of Redis uses it (issue 38)."""
    import redis
    from django.core.cache import caches

    location = settings.CACHES["default"]["LOCATION"]
    if not str(location).startswith("redis://"):
        pytest.skip("the cache is not Redis (CACHE_URL)")
    assert isinstance(caches["default"], RedisCache)
    made = []
    init = redis.Redis.__init__
    monkeypatch.setattr(redis.Redis, "__init__", lambda self, *a, **k: made.append(1) or init(self, *a, **k))
    cache = PrefixedRedisCache(location, {"KEY_PREFIX": f"{settings.RUN_ID}-kept"})
    try:
        for number in range(5):
            cache.set("key", number)
            assert cache.get("key") == number
        assert cache.get_many(["key", "other"]) == {"key": 4}
        assert len(made) == 1
    finally:
        cache.clear()
