"""How the catalog admin shows a write-only value: whether one is stored, never the value itself."""

SET = "set (hidden)"
NOT_SET = "not set"
