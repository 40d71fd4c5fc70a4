"""The documents of the vision benchmark and their questions, each answered only in a picture.

Fourteen files from an imagined logistics company (Northwind Logistics), five kinds:

* ``vector-docx``: flowcharts drawn as Word shapes (labels in text boxes, connector arrows);
* ``raster-docx``: a flowchart or an org chart pasted into a .docx as a picture;
* ``pdf-figure``: PDFs with a text layer and a chart, table or diagram image whose labels and
  values are only pixels;
* ``pptx-picture``: slide decks whose content slides are pictures;
* ``scanned-pdf``: filled-in forms scanned to image-only PDFs.

Each document's own text introduces the picture but never holds a question's answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import drawing as d
from .drawing import Edge, Node
from .flows import vector_flow
from .ooxml import picture_docx, shapes_docx
from .pdf import Figure, Page, scan_pdf, text_pdf
from .slides import Slide, picture_pptx


@dataclass(frozen=True)
class Question:
    question: str
    answer: str  # a substring of the passage that answers it


@dataclass(frozen=True)
class Spec:
    name: str
    kind: str  # vector-docx | raster-docx | pdf-figure | pptx-picture | scanned-pdf
    build: Callable[[], bytes]
    questions: tuple[Question, ...]


def _purchase_orders() -> bytes:
    nodes = [
        Node("s", ("Employee submits", "purchase request"), 1, 0, "terminal"),
        Node("n1", ("Form PR-1 on", "the intranet"), 0, 0, "note"),
        Node("m", ("Line manager checks", "the business need"), 1, 1),
        Node("n2", ("Budget code", "required"), 0, 1, "note"),
        Node("n3", ("Within 2", "working days"), 2, 1, "note"),
        Node("v", ("Over", "10,000 EUR?"), 1, 2, "decision"),
        Node("b", ("Budget holder", "approves"), 0, 3),
        Node("f", ("Head of Finance", "approves"), 2, 3),
        Node("w", ("Over", "250,000 EUR?"), 2, 4, "decision"),
        Node("c", ("CFO co-signs", "the request"), 2, 5),
        Node("q", ("Procurement issues the", "PO in SAP Ariba"), 1, 6),
        Node("n4", ("Approvals expire", "after 60 days"), 0, 6, "note"),
        Node("n5", ("Preferred suppliers", "are asked first"), 2, 6, "note"),
        Node("g", ("Warehouse Team confirms", "goods receipt"), 1, 7),
        Node("a", ("Accounts Payable pays", "within 30 days"), 2, 7, "terminal"),
    ]
    edges = [Edge("s", "m"), Edge("m", "v"), Edge("v", "f", "Yes"), Edge("v", "b", "No"), Edge("f", "w"),
             Edge("w", "c", "Yes"), Edge("w", "q", "No"), Edge("c", "q"), Edge("b", "q"), Edge("q", "g"),
             Edge("g", "a")]  # fmt: skip
    shapes, arrows = vector_flow(nodes, edges)
    intro = [
        ("h1", "Procurement policy PR-04: purchase approval route"),
        ("p", "Every purchase of goods or services follows the route on the next page."),
    ]
    return shapes_docx(intro, shapes, arrows)


def _change_management() -> bytes:
    nodes = [
        Node("r", ("Requester logs the", "change in ServiceNow"), 1, 0, "terminal"),
        Node("n1", ("Lead time:", "10 working days"), 2, 0, "note"),
        Node("a", ("Change Manager", "assesses the risk"), 1, 1),
        Node("n2", ("Risk matrix", "RM-2"), 0, 1, "note"),
        Node("n3", ("CISO signs off", "high-risk changes"), 2, 1, "note"),
        Node("k", ("Type of", "change?"), 1, 2, "decision"),
        Node("s", ("Standard change:", "pre-approved"), 0, 3),
        Node("n", ("Normal change: CAB", "meets every Tuesday"), 1, 3),
        Node("e", ("Emergency change: ECAB", "decides within 4 hours"), 2, 3),
        Node("t", ("Test in staging with", "a rollback plan"), 1, 4),
        Node("n4", ("Evidence attached", "to the ticket"), 2, 4, "note"),
        Node("i", ("Implement in the window", "Saturday 22:00-02:00"), 1, 5),
        Node("n5", ("Notify the", "service desk"), 0, 5, "note"),
        Node("n6", ("Change freeze:", "15 Dec to 5 Jan"), 2, 5, "note"),
        Node("ok", ("Successful?",), 1, 6, "decision"),
        Node("n7", ("Checked by the", "service owner"), 2, 6, "note"),
        Node("back", ("Roll back and", "raise an incident"), 0, 7),
        Node("p", ("Post-implementation", "review after 5 days"), 1, 7, "terminal"),
    ]
    edges = [Edge("r", "a"), Edge("a", "k"), Edge("k", "s"), Edge("k", "n"), Edge("k", "e"), Edge("s", "i"),
             Edge("n", "t"), Edge("e", "t"), Edge("t", "i"), Edge("i", "ok"), Edge("ok", "back", "No"),
             Edge("ok", "p", "Yes")]  # fmt: skip
    shapes, arrows = vector_flow(nodes, edges)
    intro = [
        ("h1", "IT change management procedure"),
        ("p", "Changes to production systems follow the flow on the next page."),
    ]
    return shapes_docx(intro, shapes, arrows)


def _incident_response() -> bytes:
    nodes = [
        Node("a", ("Alert raised by a", "Datadog monitor"), 0, 0, "terminal"),
        Node("k", ("On-call engineer acks", "within 15 minutes"), 0, 1),
        Node("c", ("Customers", "affected?"), 0, 2, "decision"),
        Node("s1", ("Declare SEV-1, page the", "Incident Commander"), 1, 2),
        Node("s3", ("Handle as SEV-3", "in normal hours"), 0, 3),
        Node("u", ("Status page updated", "every 30 minutes"), 2, 2),
        Node("r", ("Resolve and", "monitor for 1 hour"), 1, 3),
        Node("p", ("Blameless postmortem", "within 5 business days"), 1, 4, "terminal"),
    ]
    edges = [Edge("a", "k"), Edge("k", "c"), Edge("c", "s1", "Yes"), Edge("c", "s3", "No"),
             Edge("s1", "u"), Edge("s1", "r"), Edge("s3", "r"), Edge("r", "p")]  # fmt: skip
    shapes, arrows = vector_flow(nodes, edges)
    intro = [
        ("h1", "Incident response runbook"),
        ("p", "This runbook is for engineers on the platform on-call rota. It covers production incidents "
              "of the customer portal, the tracking API and the warehouse scanners. Security incidents "
              "follow the separate security incident procedure."),
        ("p", "Keep the incident channel as the single record of decisions. The response flow is on the "
              "next page."),
    ]  # fmt: skip
    return shapes_docx(intro, shapes, arrows)


def _org_chart() -> bytes:
    nodes = [
        Node("cfo", ("Maria Jensen", "Chief Financial Officer"), 1, 0),
        Node("fc", ("Tom Becker", "Financial Controller"), 0, 1),
        Node("tr", ("Aisha Rahman", "Head of Treasury"), 1, 1),
        Node("tx", ("Luis Ortega", "Head of Tax"), 2, 1),
        Node("ap", ("Nina Petrova", "Accounts Payable Lead"), 0, 2),
        Node("py", ("Samuel Okafor", "Payroll Manager"), 1, 2),
    ]
    edges = [Edge("cfo", "fc"), Edge("cfo", "tr"), Edge("cfo", "tx"), Edge("fc", "ap"), Edge("fc", "py")]
    chart = d.diagram(nodes, edges, title="Finance department", elbow=True)
    return picture_docx([
        ("h1", "Finance department: who is who"),
        ("p", "The chart below shows the reporting lines of the finance department as of 1 March 2026. "
              "It is updated by HR after every change of role; the intranet phone book follows within "
              "a week."),
        ("png", d.png(chart)),
        ("p", "For invoice queries, contact the accounts payable mailbox rather than a person."),
    ])  # fmt: skip


def _onboarding() -> bytes:
    nodes = [
        Node("o", ("Offer signed", "by the new hire"), 0, 0, "terminal"),
        Node("it", ("IT prepares laptop", "and badge (day -5)"), 1, 0),
        Node("w", ("Welcome session with", "HR at 09:30 (day 1)"), 2, 0),
        Node("b", ("Buddy assigned", "from the team"), 2, 1),
        Node("s", ("Security awareness", "training in week 1"), 1, 1),
        Node("c", ("Check-in with the", "manager on day 30"), 0, 1),
        Node("p", ("Probation review", "on day 90"), 0, 2, "terminal"),
    ]
    edges = [Edge("o", "it"), Edge("it", "w"), Edge("w", "b"), Edge("b", "s"), Edge("s", "c"), Edge("c", "p")]
    chart = d.diagram(nodes, edges, title="Onboarding journey")
    return picture_docx([
        ("h1", "Employee onboarding guide for managers"),
        ("p", "A good first quarter decides whether a new colleague stays. This guide tells hiring managers "
              "what happens between the signed offer and the end of probation, and who does what."),
        ("png", d.png(chart)),
        ("p", "Questions about contracts and pay go to HR; questions about equipment go to the service "
              "desk."),
    ])  # fmt: skip


def _returns() -> bytes:
    nodes = [
        Node("r", ("Customer requests", "a return online"), 0, 0, "terminal"),
        Node("t", ("Bought less than", "60 days ago?"), 0, 1, "decision"),
        Node("x", ("Return rejected,", "customer informed"), 1, 1),
        Node("l", ("Prepaid DHL label", "e-mailed"), 0, 2),
        Node("q", ("Quality Inspector", "grades the item"), 0, 3),
        Node("g", ("Grade A: back", "to stock in Tilburg"), 1, 3),
        Node("c", ("Grade C: sold to", "Reuse Partners BV"), 2, 3),
    ]
    edges = [Edge("r", "t"), Edge("t", "x", "No"), Edge("t", "l", "Yes"), Edge("l", "q"),
             Edge("q", "g"), Edge("q", "c")]  # fmt: skip
    chart = d.diagram(nodes, edges, title="Customer returns")
    return picture_docx([
        ("h1", "Warehouse returns handling"),
        ("p", "Returned goods arrive at the returns bay of each warehouse. This note explains how a return "
              "is accepted, shipped back, checked and either restocked or sold on."),
        ("png", d.png(chart)),
    ])  # fmt: skip


def _quarterly_report() -> bytes:
    revenue = d.bar_chart(
        "Revenue by quarter, 2026",
        "million EUR",
        [("Q1", "38.2", 38.2), ("Q2", "41.5", 41.5), ("Q3", "47.9", 47.9), ("Q4 (fc)", "52.6", 52.6)],
    )
    headcount = d.bar_chart(
        "Headcount by region",
        "employees",
        [("EMEA", "412", 412), ("Americas", "288", 288), ("APAC", "153", 153)],
    )
    return text_pdf([
        Page([("h", "Quarterly business review, fiscal year 2026"),
              ("p", "Revenue grew in every region this year, driven by the new cold-chain contracts and by "
                    "higher volumes on the Rotterdam-Warsaw corridor. Margins held despite higher fuel "
                    "costs. The chart below shows revenue by quarter, the last quarter as a forecast."),
              Figure(revenue)]),
        Page([("h", "People"),
              ("p", "Hiring focused on drivers and warehouse staff. Attrition fell for the third year in a "
                    "row. Regional headcount at the end of the third quarter:"),
              Figure(headcount, 380)]),
    ])  # fmt: skip


def _support_kpis() -> bytes:
    tickets = d.bar_chart("Service desk tickets by category, Q3", "tickets",
                          [("Password", "1,284", 1284), ("VPN", "596", 596), ("Printer", "211", 211),
                           ("Laptop", "407", 407)])  # fmt: skip
    sla = d.table("Service level targets", [("Priority", "First response", "Resolution"),
                                             ("P1 critical", "15 minutes", "4 hours"),
                                             ("P2 high", "1 hour", "1 business day"),
                                             ("P3 normal", "4 hours", "5 business days")],
                  [300, 320, 340])  # fmt: skip
    return text_pdf([
        Page([("h", "IT service desk report, third quarter"),
              ("p", "The service desk handled more tickets than in any quarter before, mostly because of the "
                    "move to the new identity provider in August. The breakdown by category:"),
              Figure(tickets)]),
        Page([("h", "Targets"),
              ("p", "Targets are agreed with the business every year and apply to tickets raised through the "
                    "portal or by phone. They are:"),
              Figure(sla, 420)]),
    ])  # fmt: skip


def _network() -> bytes:
    nodes = [
        Node("i", ("Internet", "(two ISPs)"), 1, 0, "terminal"),
        Node("f", ("Firewall", "FortiGate 100F"), 1, 1),
        Node("c", ("Core switch", "Aruba 6300M"), 1, 2),
        Node("s", ("Servers", "VLAN 20"), 0, 3),
        Node("o", ("Office clients", "VLAN 10"), 1, 3),
        Node("g", ("Guest Wi-Fi", "VLAN 30"), 2, 3),
    ]
    edges = [Edge("i", "f"), Edge("f", "c"), Edge("c", "s"), Edge("c", "o"), Edge("c", "g")]
    return text_pdf([
        Page([("h", "Leeds office: site network design"),
              ("p", "The Leeds office opened in 2025 with 140 desks and a small server room. This document "
                    "records the network as built; changes follow the IT change management procedure. "
                    "Cabling is Cat 6A throughout and every floor has its own access switch."),
              Figure(d.diagram(nodes, edges, title="Leeds network, logical view"), 420)]),
    ])  # fmt: skip


def _retention() -> bytes:
    matrix = d.table("Retention schedule", [("Record", "Kept for", "Owner"),
                                             ("Customer invoices", "10 years", "Finance"),
                                             ("CVs of rejected applicants", "6 months", "HR"),
                                             ("CCTV footage", "30 days", "Facilities"),
                                             ("Driver tachograph data", "2 years", "Fleet")],
                     [520, 240, 240])  # fmt: skip
    return text_pdf([
        Page([("h", "Records retention policy"),
              ("p", "Northwind Logistics keeps records only as long as the law or the business needs them. "
                    "When a period ends, the owner deletes the record or has it destroyed by the approved "
                    "shredding contractor. Legal holds suspend deletion."),
              Figure(matrix, 440)]),
    ])  # fmt: skip


def _all_hands() -> bytes:
    roadmap = d.table("Product roadmap", [("When", "What"), ("Q4 2026", "Mobile driver app 2.0"),
                                           ("Q1 2027", "EU data centre in Frankfurt"),
                                           ("Q2 2027", "Single sign-on for all customers")],
                      [260, 640])  # fmt: skip
    sales = d.diagram(
        [Node("h", ("Head of Sales", "Peter Lindgren"), 1, 0), Node("d", ("DACH", "Jonas Weber"), 0, 1),
         Node("n", ("Nordics", "Emma Lindberg"), 1, 1), Node("u", ("UK and Ireland", "Oliver Grant"), 2, 1)],
        [Edge("h", "d"), Edge("h", "n"), Edge("h", "u")], title="Regional sales leads", elbow=True,
    )  # fmt: skip
    return picture_pptx([
        Slide("All-hands meeting, October 2026", ("Results of the third quarter", "Roadmap", "Sales team",
                                                    "Questions and answers")),
        Slide("Roadmap", picture=d.png(roadmap)),
        Slide("Our sales team", picture=d.png(sales)),
    ])  # fmt: skip


def _phishing_training() -> bytes:
    nodes = [Node("s", ("Suspicious", "e-mail?"), 0, 0, "decision"),
             Node("b", ("Click the", "Report Phish button"), 1, 0),
             Node("o", ("SOC reviews it", "within 1 hour"), 2, 0, "terminal")]  # fmt: skip
    flow = d.diagram(nodes, [Edge("s", "b", "Yes"), Edge("b", "o")], title="Reporting a phishing e-mail")
    clicks = d.bar_chart(
        "Phishing simulation click rate",
        "share of staff who clicked",
        [("Jan", "14%", 14), ("Apr", "9%", 9), ("Jul", "6%", 6), ("Oct", "3.5%", 3.5)],
    )
    return picture_pptx([
        Slide("Security awareness 2026", ("Why phishing still works", "How to report it",
                                            "How we are doing")),
        Slide("How to report", picture=d.png(flow)),
        Slide("How we are doing", picture=d.png(clicks)),
    ])  # fmt: skip


def _expense_claim() -> bytes:
    form = d.scanned_form("Travel expense claim", [
        ("Employee name", "Daniel Moreau"), ("Department", "Key Accounts"), ("Cost centre", "CC-4410"),
        ("Purpose of trip", "Customer visit, Lyon"), ("Dates", "14-16 May 2026"),
        ("Total claimed", "642.80 EUR"), ("Approved by", "Tom Becker"),
    ], "Attach all receipts. Claims older than 90 days are not reimbursed.", seed=7)  # fmt: skip
    return scan_pdf([d.jpeg(form)], form.size)


def _vendor_form() -> bytes:
    first = d.scanned_form("Supplier registration form", [
        ("Company name", "Baltic Timber Supplies"), ("Country", "Latvia"),
        ("VAT number", "LV40003567812"), ("Contact", "Ilze Kalnina"),
        ("Goods supplied", "Pallets and crates"),
    ], "Page 1 of 2", seed=11)  # fmt: skip
    second = d.scanned_form("Supplier registration form (bank details)", [
        ("Bank", "Swedbank AS"), ("Payment terms", "Net 45"), ("Currency", "EUR"),
        ("Checked by", "Nina Petrova"),
    ], "Page 2 of 2", seed=12)  # fmt: skip
    return scan_pdf([d.jpeg(first), d.jpeg(second)], first.size)


Q = Question
SPECS: tuple[Spec, ...] = (
    Spec("purchase-order-approval.docx", "vector-docx", _purchase_orders, (
        Q("Who approves purchase orders over 10,000 EUR?", "Head of Finance"),
        Q("In which system does procurement issue the purchase order?", "SAP Ariba"),
        Q("Who confirms the goods receipt for a purchase order?", "Warehouse Team"),
        Q("How long is a purchase approval valid?", "60 days"),
    )),
    Spec("it-change-management.docx", "vector-docx", _change_management, (
        Q("When does the change advisory board (CAB) meet?", "every Tuesday"),
        Q("How quickly does the ECAB decide on an emergency change?", "within 4 hours"),
        Q("What is the maintenance window for implementing changes?", "Saturday 22:00"),
        Q("Who signs off high-risk changes?", "CISO"),
    )),
    Spec("incident-response-runbook.docx", "vector-docx", _incident_response, (
        Q("How quickly must the on-call engineer acknowledge an alert?", "within 15 minutes"),
        Q("Who is paged when a SEV-1 is declared?", "Incident Commander"),
        Q("Within how many days is the blameless postmortem written?", "5 business days"),
    )),
    Spec("finance-org-chart.docx", "raster-docx", _org_chart, (
        Q("Who is the Chief Financial Officer?", "Maria Jensen"),
        Q("Who is the Head of Treasury?", "Aisha Rahman"),
        Q("Who is the payroll manager in the finance department?", "Samuel Okafor"),
    )),
    Spec("employee-onboarding.docx", "raster-docx", _onboarding, (
        Q("At what time is the HR welcome session on the first day?", "09:30"),
        Q("On which day is the probation review?", "day 90"),
        Q("What does IT prepare for a new hire before the start?", "laptop"),
    )),
    Spec("warehouse-returns.docx", "raster-docx", _returns, (
        Q("Within how many days of purchase can a customer return an item?", "60 days"),
        Q("Who grades returned items?", "Quality Inspector"),
        Q("Who buys grade C returns?", "Reuse Partners"),
    )),
    Spec("quarterly-business-review.pdf", "pdf-figure", _quarterly_report, (
        Q("What was the revenue in the third quarter of 2026 (Q3)?", "47.9"),
        Q("What revenue is forecast for Q4 2026?", "52.6"),
        Q("How many employees work in the APAC region?", "153"),
    )),
    Spec("service-desk-report.pdf", "pdf-figure", _support_kpis, (
        Q("How many password tickets did the service desk handle in Q3?", "1,284"),
        Q("What is the resolution target for a P1 critical ticket?", "4 hours"),
        Q("What is the first response target for P2 high tickets?", "1 hour"),
    )),
    Spec("leeds-network-design.pdf", "pdf-figure", _network, (
        Q("Which firewall protects the Leeds office network?", "FortiGate 100F"),
        Q("Which VLAN is the guest Wi-Fi on in Leeds?", "VLAN 30"),
        Q("What is the core switch model in the Leeds office?", "Aruba 6300M"),
    )),
    Spec("records-retention-policy.pdf", "pdf-figure", _retention, (
        Q("How long is CCTV footage kept?", "30 days"),
        Q("How long are CVs of rejected applicants kept?", "6 months"),
    )),
    Spec("all-hands-october-2026.pptx", "pptx-picture", _all_hands, (
        Q("Where will the new EU data centre be?", "Frankfurt"),
        Q("When is the mobile driver app 2.0 planned?", "Q4 2026"),
        Q("Who leads sales in the Nordics?", "Emma Lindberg"),
    )),
    Spec("security-awareness-2026.pptx", "pptx-picture", _phishing_training, (
        Q("Which button do staff click to report a phishing e-mail?", "Report Phish"),
        Q("What was the phishing simulation click rate in October?", "3.5%"),
    )),
    Spec("travel-expense-claim-scan.pdf", "scanned-pdf", _expense_claim, (
        Q("What total did Daniel Moreau claim for the Lyon trip?", "642.80"),
        Q("Which cost centre is the Lyon customer visit charged to?", "CC-4410"),
    )),
    Spec("supplier-registration-scan.pdf", "scanned-pdf", _vendor_form, (
        Q("What are the payment terms of Baltic Timber Supplies?", "Net 45"),
        Q("What goods does Baltic Timber Supplies deliver?", "Pallets and crates"),
    )),
)  # fmt: skip
KINDS = ("vector-docx", "raster-docx", "pdf-figure", "pptx-picture", "scanned-pdf")
