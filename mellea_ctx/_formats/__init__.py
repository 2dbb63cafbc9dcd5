"""Layer 2, wire formats: lossless conversion between components and each provider's JSON.

Also the transcript files (JSON, JSONL), the stores' record format, and each
provider's history validator and repair. Imports only the core.
"""
