"""icefloe.model: the commit protocol of spec/PROTOCOL.md as a pure, deterministic
transition system, its properties (spec/PROPERTIES.md) as check functions, and an
exhaustive explorer. No I/O, no clock, no randomness: every id is derived from the
writer, its operation index and its attempt number, so a run replays exactly.
"""
