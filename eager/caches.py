"""Bounded caches: the one helper by which eager's fast paths keep what they learned.

Call-key checks (`dispatch`), structure ids (`autograd.record`), backward plans and programs
(`autograd.plans`, `autograd.programs`) are dicts keyed by what a call looks like; a key with a
Python number that changes every call makes a new entry each time, so each dict is bounded:
when full, its oldest entry goes (dicts keep insertion order), never the whole dict at once.
Imports nothing.
"""

from __future__ import annotations


def remember(cache: dict, key, value, limit: int):
    """`cache[key] = value`, first dropping the oldest entry when `cache` holds `limit`
    entries; returns `value`."""
    if len(cache) >= limit and key not in cache:
        del cache[next(iter(cache))]
    cache[key] = value
    return value
