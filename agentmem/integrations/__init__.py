"""Adapters that let other agent frameworks keep their memories in agentmem.

Each adapter depends only on agentmem's public API (the names in `agentmem.__all__`), its own
modules here, and its framework, which is an optional extra: `pip install 'agentmem[langgraph]'`
for `agentmem.integrations.langgraph` (with `langgraph_values` and `langgraph_index`).
"""
