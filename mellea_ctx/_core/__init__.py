"""Layer 1, the core: immutable components, token counting, the context, boundaries and pins.

Imports nothing else from the package. The interfaces the layers above
implement (``Backend``, ``Compactor``, ``InlineCompactor``) are declared here
because the context calls them.
"""
