"""Slow fault-injection suites (docs/reliability.md); marked `reliability`."""
