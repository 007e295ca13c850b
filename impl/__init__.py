"""icefloe.impl: the real implementation of the Iceberg v2 commit protocol.

spec/PROTOCOL.md is the contract; this package never imports icefloe.model
(tests/packaging checks the import direction).
"""
