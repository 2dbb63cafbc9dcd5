"""Layer 3, backends: the SDK backends, the offline extractive default, ``ScriptedBackend``.

Also the blocking bridge and the mapping of provider errors. Imports the core
and the formats (to build requests); never the compaction layer above.
"""
