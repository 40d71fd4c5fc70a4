"""The web UI's files (``static/``): served by :mod:`ragd.api.routes.ui`; no Python lives here."""
