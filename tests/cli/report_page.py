"""report_page.py - reads a kctl report.html the way the tests check it.

structure(text) parses the page with Python's HTML parser and returns what
its shape is made of, independent of the machine's figures: the sections in
order, per plot (<svg data-plot=NAME>) how many of each element it holds
and how many points of each class, the tables' header rows, and the links.
hazards(text) lists what must never be in a report: a script, an event
handler attribute, anything that would be fetched (src, a URL that is not a
relative path or a fragment, CSS url()), markup the parser had to guess.
"""
import html.parser
import re

# Everything a report may contain; anything else is a hazard.
TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p", "code",
    "nav", "a", "section", "div", "b", "span", "table", "tr", "th", "td", "pre", "details",
    "summary", "ul", "li", "footer",
    # inline SVG
    "svg", "g", "line", "path", "text", "circle", "rect",
}
VOID = {"meta", "line", "path", "circle", "rect"}


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections, self.plots, self.links, self.hazards = [], {}, [], []
        self.tables, self.stack, self.plot = [], [], None
        self.in_th, self.row = False, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag not in TAGS:
            self.hazards.append(f"element <{tag}>")
        for k, v in attrs:
            if k.startswith("on"):
                self.hazards.append(f"event handler {k} on <{tag}>")
            if k in ("src", "srcset", "poster", "data", "action", "formaction", "xlink:href"):
                self.hazards.append(f"{k}= on <{tag}>")
            if k == "href" and v and re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//", v):
                self.hazards.append(f"href to {v!r}")
            if k == "style":
                self.hazards.append(f"style attribute on <{tag}>")
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "svg":
            self.plot = self.plots.setdefault(a.get("data-plot"), {"elements": {}, "points": {}})
        elif self.plot is not None:
            el = self.plot["elements"]
            el[tag] = el.get(tag, 0) + 1
            cls = (a.get("class") or "").split()
            if "pt" in cls or "node" in cls:
                key = " ".join(c for c in cls if c.startswith(("s-", "o-")))
                self.plot["points"][key] = self.plot["points"].get(key, 0) + 1
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "tr":
            self.row = []
        if tag == "th":
            self.in_th = True
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag == "svg":
            self.plot = None
        if tag == "th":
            self.in_th = False
        if tag == "tr" and self.row:
            self.tables.append(self.row)
        if tag == "tr":
            self.row = None
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.hazards.append(f"</{tag}> does not close <{self.stack[-1] if self.stack else ''}>")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data):
        if self.in_th and self.row is not None:
            self.row.append(data.strip())

    def handle_comment(self, data):
        self.hazards.append("a comment")

    def handle_style(self, css):
        pass


def _parse(text):
    p = _Page()
    p.feed(text)
    p.close()
    if p.stack:
        p.hazards.append(f"unclosed {p.stack}")
    for m in re.finditer(r"url\(|@import", text):
        p.hazards.append(f"CSS {m.group(0)} at {m.start()}")
    return p


def structure(text):
    """The page's shape: {sections, plots: {name: {elements, points}}, tables, links}."""
    p = _parse(text)
    return {"sections": p.sections, "plots": p.plots, "tables": p.tables, "links": p.links}


def hazards(text):
    """What must never be in a report, as readable strings; [] for a sound page."""
    return _parse(text).hazards


def points(text, plot):
    """How many points (class pt or node) the plot draws, all classes together."""
    return sum(structure(text)["plots"].get(plot, {}).get("points", {}).values())
