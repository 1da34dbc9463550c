"""Django's Redis cache as every process uses it (`RedisCache`: its redis-py client made once, not
per operation); a Redis cache that shares its Redis database (`PrefixedRedisCache`: every key under
its KEY_PREFIX, and a clear() that deletes those keys only, where Django's RedisCache empties the
whole database with FLUSHDB). And what the cache raises when its Redis cannot be reached
(`CACHE_UNREACHABLE`)."""

import logging
import re

from django.core.cache.backends import redis as django_redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# The cache's Redis is down or does not answer (refused, reset, timed out): Django's Redis cache lets
# redis-py's errors through.
CACHE_UNREACHABLE = (RedisConnectionError, RedisTimeoutError)

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


class _ClientKept(django_redis.RedisCacheClient):
    """Django's client of the Redis cache, which makes a new `redis.Redis` around the same connection
    pool for every operation: about 100 µs of CPU each, half of a `cache.get` (the OAuth token read
    before every call to the service, the catalog read per order). This one keeps the client it made
    for each pool: a redis-py client takes a connection from its pool per command, so threads share
    it safely, as they share the pool."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = super().get_client(key, write=write)
        return client


class RedisCache(django_redis.RedisCache):
    """Django's Redis cache, its redis-py clients kept (`_ClientKept`); CACHE_URL=redis://... uses it
    (config/settings/framework.py)."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _ClientKept


class PrefixedRedisCache(RedisCache):
    """Django's Redis cache, whose clear() removes only the keys made with its KEY_PREFIX (every
    version of each): a cache beside others in one Redis database (the test runs and their workers,
    config/settings/test.py) never erases theirs."""

    batch = 500

    def clear(self):
        if not self.key_prefix:
            return super().clear()
        client = self._cache.get_client(None, write=True)
        pattern = _GLOB_SPECIAL.sub(r"\\\1", self.key_prefix) + ":*"
        keys = []
        for key in client.scan_iter(match=pattern, count=self.batch):
            keys.append(key)
            if len(keys) >= self.batch:
                client.delete(*keys)
                keys = []
        if keys:
            client.delete(*keys)
        return True


class CacheFailures:
    """What reads its data through the shared cache and falls back on the database when the cache
    fails: each failure of a run of them logged once (its type, never the data), until the cache
    answers again. `topic` starts the line, `what` names the data (the catalog's products, the
    staff's permissions)."""

    def __init__(self, logger: logging.Logger, topic: str, what: str):
        self.logger, self.topic, self.what, self.failing = logger, topic, what, False

    def failed(self, action: str, exc: Exception) -> None:
        if not self.failing:
            self.failing = True
            self.logger.warning(
                "%s: the shared cache failed to %s %s (%s); the database serves them meanwhile",
                self.topic,
                action,
                self.what,
                type(exc).__name__,
            )

    def answered(self) -> None:
        self.failing = False
