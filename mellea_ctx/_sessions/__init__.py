"""Layer 5, sessions: session memory over stores (memory, SQLite, Redis, PostgreSQL).

A sibling of the agent layer: neither imports the other.
"""
