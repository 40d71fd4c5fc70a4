"""The store port (``base.VectorStore``) and its adapters.

``edge_store`` (Qdrant Edge, embedded) and ``qdrant_store`` (a Qdrant server via
qdrant-client) share the point layout in ``payload``, the search plan in
``search_plan``, the manifest handling in ``manifest_io`` and the index tuning
in ``tuning``; ``fusion_formula`` writes Qdrant's RRF out as pure functions.
Only ``bootstrap`` picks an adapter.
"""
