"""Vision: reading what a document shows, not only the text it holds (docs/formats.md#vision-engines).

An OpenAI-compatible multimodal model (``RAGD_VISION__*``) reads page images and pictures:

    client.py    one image per call, budgets (budget.py), answers cached by image hash (cache.py)
    profiles.py  what the model is asked (diagram, general, ocr, diagram-topology, figure)
    vision_llm.py      engine ``vision-llm``: PDF, Office (office_pdf) and image pages to Markdown
    hybrid.py          engine ``hybrid-diagram``: a .docx's own text (docx_text.py) + the drawn graph
    detect.py    the ``auto`` router's signals on a .docx; figures.py: pictures inside PDFs, slides
    routing.py   how the engines join the type router (auto, pinned engines, figures, fail-open)

The engines implement :class:`ragd.extract.base.Extractor` and run in the extraction worker
processes like every reader.
"""
