"""Layer 4, compaction: the compactors, the summary engine, prompts, records and events.

Imports the core, the formats and the backends.
"""
