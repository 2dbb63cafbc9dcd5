"""Adapters for the agent frameworks users already run: one module per framework.

Each module is an optional extra that imports its framework when it is
imported itself, never before, so ``import mellea_ctx`` needs none of them::

    pip install '.[langchain]'      # mellea_ctx.integrations.langchain
    pip install '.[pydantic-ai]'    # mellea_ctx.integrations.pydantic_ai
    pip install '.[openai-agents]'  # mellea_ctx.integrations.openai_agents

Every adapter works the same way: it turns the framework's messages into
components, runs any of our compactors on them, and hands back the
framework's own message objects for everything the compactor kept (the very
same objects), plus new ones only for what the compactor wrote (a checkpoint,
a cleared tool result). So nothing a compactor did not choose to change is
ever rebuilt, and no tool pair is ever split.
"""
