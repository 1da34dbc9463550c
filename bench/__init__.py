"""Benchmarks and long fault drills of the partner application (`make bench`)."""
