"""Layer 5, sessions: session memory over stores (memory, SQLite, Redis).

A sibling of the agent layer: neither imports the other.
"""
