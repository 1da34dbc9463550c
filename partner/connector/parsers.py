"""The connector API's JSON parser: a body nested deeper than JSON_MAX_DEPTH is refused (400),
never a RecursionError (a 500) in the parser or in what walks the data after it."""

from rest_framework import exceptions
from rest_framework.parsers import JSONParser

JSON_MAX_DEPTH = 32  # nesting of a request's JSON body: our bodies need 4; deeper is refused (400)


def _depth_exceeds(data, limit: int) -> bool:
    """Whether `data` nests deeper than `limit` (walked without recursion: the depth is the sender's)."""
    pending = [(data, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


class BoundedJSONParser(JSONParser):
    """JSON bodies nested at most JSON_MAX_DEPTH deep: a deeper one is a 400 problem, never a
    RecursionError (500) in the parser or in what walks the data after it."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the body is nested too deeply.") from None
        if _depth_exceeds(data, JSON_MAX_DEPTH):
            raise exceptions.ParseError(f"JSON parse error - the body is nested deeper than {JSON_MAX_DEPTH}.")
        return data
