"""Engines the conformance suite can drive: icefloe itself, pyiceberg, and flawed variants
that must fail (negative controls)."""
