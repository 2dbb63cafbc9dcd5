"""Layer 6, the command line: ``mellea-ctx compact / stats / validate / demo``."""
