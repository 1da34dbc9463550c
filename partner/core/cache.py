"""A Redis cache that shares its Redis database: every key under its KEY_PREFIX, and a clear() that
deletes those keys only, where Django's RedisCache empties the whole database (FLUSHDB). And what
the cache raises when its Redis cannot be reached (`CACHE_UNREACHABLE`)."""

import re

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# The cache's Redis is down or does not answer (refused, reset, timed out): Django's Redis cache lets
# redis-py's errors through.
CACHE_UNREACHABLE = (RedisConnectionError, RedisTimeoutError)

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


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
