"""Layer 5, the agent: ``react`` / ``areact`` and BM25 tool search.

Imports every layer below; sessions reach it only through the ``SessionLike`` protocol.
"""
