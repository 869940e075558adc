"""Adapters that let other agent frameworks keep their memories in agentmem.

Each module depends only on agentmem's public API (the names in `agentmem.__all__`) and on its
framework, which is an optional extra: `pip install 'agentmem[langgraph]'` for
`agentmem.integrations.langgraph`.
"""
