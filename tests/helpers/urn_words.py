"""The words of the service's URNs a test runs with (partner/platform/urns.py): the spec's, or a real
platform's own in each of the three places. `any_urn_words` runs a test with both: the `urn_words`
fixture (tests/conftest.py) sets them before the sandbox is seeded and the products are pulled."""

import pytest

SPEC_WORDS: dict[str, str] = {}  # the defaults: urn:svc, platform, host
OTHER_WORDS = {"SVC_URN_PREFIX": "urn:acme", "SVC_URN_PLATFORM": "lending", "SVC_URN_HOST": "desk"}

any_urn_words = pytest.mark.parametrize(
    "urn_words", [SPEC_WORDS, OTHER_WORDS], indirect=True, ids=["spec-urn-words", "other-urn-words"]
)


def spelled(words: dict[str, str]) -> tuple[str, str, str]:
    """(prefix, platform word, host word) of `words`, written out here rather than asked of the module
    under test (whose words the sandbox shares, so the two would agree whatever they were)."""
    return (
        words.get("SVC_URN_PREFIX", "urn:svc"),
        words.get("SVC_URN_PLATFORM", "platform"),
        words.get("SVC_URN_HOST", "host"),
    )
