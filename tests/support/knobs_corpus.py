"""A small corpus on which every search knob has a visible effect (see tests/api/test_search_knobs.py).

* CAR: ``parking.md`` has the query's words, ``engine.md`` its meaning: BM25 alone ranks parking
  first, the dense model alone engine;
* HARBOUR: ``tariffs.md`` makes several near-identical chunks (at 40 tokens a chunk) that crowd the
  top slots; ``ledger.md`` and ``pilots.md`` are the other answers;
* NOTICE: ``notice.md`` and ``notice-copy.md`` differ by one character;
* ``hafen.md`` (German) and ``port.md`` (French) answer HARBOUR in other languages: the language
  filter's test.
"""

from __future__ import annotations

CAR = "how to fix a car that will not start"
HARBOUR = "harbour tariff for cargo ships"
SECTION = (
    "The harbour tariff for cargo ships is charged per gross ton on arrival. Cargo ships pay the "
    "harbour tariff at the harbour master's office before they unload. Section {i}."
)
FILES = (
    ("t", "tariffs.md", "\n\n".join(SECTION.format(i=i) for i in range(4)).encode()),
    ("l", "ledger.md", b"Harbour fees for cargo vessels are entered in the port ledger every week."),
    ("p", "pilots.md", b"Pilots guide cargo ships into the harbour; their fee is a separate tariff."),
    ("x", "parking.md", b"Fix the car park sign. A car may start at the barrier; the car will not fix it."),
    ("y", "engine.md", b"If your automobile engine refuses to turn over, check the battery and ignition."),
    ("n1", "notice.md", b"Notice: the customs office closes at noon on Fridays during the winter season."),
    (
        "n2",
        "notice-copy.md",
        b"Notice: the customs office closes at noon on Fridays during the winter season!",
    ),
    (
        "de",
        "hafen.md",
        "Die Hafengeb\u00fchr f\u00fcr Frachtschiffe wird pro Bruttotonne bei der Ankunft berechnet und "
        "vor dem Entladen beim Hafenmeister bezahlt.".encode(),
    ),
    (
        "fr",
        "port.md",
        "La taxe portuaire des navires de commerce est pay\u00e9e \u00e0 la capitainerie avant le "
        "d\u00e9chargement de la cargaison.".encode(),
    ),
)
NOTICE = "when does the customs office close on Fridays"
