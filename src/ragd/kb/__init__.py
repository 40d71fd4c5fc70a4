"""Knowledge bases: tenants' datasets, their files and sources, and the jobs that fill them.

Use-cases over the catalog ports (``ragd.catalog``), the source readers
(``ragd.sources``), the ingest use-case and the store.  Every function takes
the request's :class:`ragd.kb_types.Principal`; the tenant and the datasets a
request may touch come from it, never from names the caller sends.
"""
