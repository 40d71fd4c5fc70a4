"""The Model Context Protocol face of ragd: the knowledge tools for agents (docs/mcp.md).

A delivery layer like ``cli`` and ``api``: :mod:`ragd.mcp.server` serves the tools of
:mod:`ragd.mcp.tools` on stdio (``ragd mcp``) and on streamable HTTP (``/mcp`` of ``ragd serve``);
every tool calls a use-case.  The ``mcp`` SDK is imported only in this package.
"""
