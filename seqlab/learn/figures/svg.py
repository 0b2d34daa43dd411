"""A small SVG builder for the lessons' figures: boxes, circles, arrows and labels on a grid.

    d = Drawing(320, 120)
    d.box(10, 40, 60, 40, "h₁")
    d.arrow(70, 60, 120, 60, "W_h")
    svg = d.svg(title="The state passes to the next step")

Coordinates are pixels from the top left. Colours follow the explorer's palette; text is escaped.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

INK, MUTED, ACCENT, SOFT, WARN = "#1f2933", "#7b8794", "#2563eb", "#dbeafe", "#dc2626"
FONT = "font-family=\"'Noto Sans', 'Noto Sans CJK SC', sans-serif\""


def number(value: float, places: int = 6) -> str:
    """A number as the lessons print it: at most ``places`` decimals, trailing zeros dropped (1, 0.5,
    0.669762), no "-0", and a minus sign that is one (−0.25)."""
    text = f"{float(value):.{places}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "0") else text.replace("-", "−")


class Drawing:
    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self.parts: list[str] = []
        self._markers: set[str] = set()

    def text(self, x: float, y: float, label: str, *, size: int = 13, color: str = INK, anchor: str = "middle",
             bold: bool = False, italic: bool = False) -> None:
        weight = ' font-weight="600"' if bold else ""
        style = ' font-style="italic"' if italic else ""
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{color}" text-anchor="{anchor}" '
                          f'dominant-baseline="middle" {FONT}{weight}{style}>{escape(label)}</text>')

    def box(self, x: float, y: float, w: float, h: float, label: str = "", *, fill: str = SOFT, stroke: str = ACCENT,
            size: int = 13, radius: float = 6, dashed: bool = False) -> None:
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{radius}" '
                          f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"{dash}/>')
        if label:
            self.text(x + w / 2, y + h / 2, label, size=size)

    def circle(self, cx: float, cy: float, r: float, label: str = "", *, fill: str = "#ffffff",
               stroke: str = INK, size: int = 13) -> None:
        self.parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="{fill}" stroke="{stroke}" '
                          f'stroke-width="1.5"/>')
        if label:
            self.text(cx, cy, label, size=size)

    def line(self, x1: float, y1: float, x2: float, y2: float, *, color: str = INK, width: float = 1.5,
             dashed: bool = False) -> None:
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
                          f'stroke-width="{width}"{dash}/>')

    def arrow(self, x1: float, y1: float, x2: float, y2: float, label: str = "", *, color: str = INK,
              width: float = 1.5, dashed: bool = False, size: int = 12, offset: float = 9) -> None:
        """A straight arrow from (x1, y1) to (x2, y2), its label ``offset`` px beside the middle (above a
        left-to-right arrow; a negative offset puts it on the other side)."""
        marker = "arrow-" + color.lstrip("#")
        self._markers.add(color)
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
                          f'stroke-width="{width}"{dash} marker-end="url(#{marker})"/>')
        if label:
            mx, my = (x1 + x2) / 2, (y1 + y2) / 2
            length = math.hypot(x2 - x1, y2 - y1) or 1.0
            nx, ny = (y1 - y2) / length, (x2 - x1) / length       # the left-hand normal
            self.text(mx - nx * offset, my - ny * offset, label, size=size, color=color)

    def curve(self, x1: float, y1: float, x2: float, y2: float, bend: float, label: str = "", *,
              color: str = INK, dashed: bool = False, size: int = 12) -> None:
        """A quadratic arrow bent ``bend`` px to the left of the straight line."""
        marker = "arrow-" + color.lstrip("#")
        self._markers.add(color)
        mx, my = (x1 + x2) / 2, (y1 + y2) / 2
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        nx, ny = (y1 - y2) / length, (x2 - x1) / length
        cx, cy = mx + nx * bend, my + ny * bend
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        self.parts.append(f'<path d="M {x1:.1f} {y1:.1f} Q {cx:.1f} {cy:.1f} {x2:.1f} {y2:.1f}" fill="none" '
                          f'stroke="{color}" stroke-width="1.5"{dash} marker-end="url(#{marker})"/>')
        if label:
            self.text(mx + nx * (bend / 2 + 10), my + ny * (bend / 2 + 10), label, size=size, color=color)

    def svg(self, title: str = "") -> str:
        markers = "".join(
            f'<marker id="arrow-{c.lstrip("#")}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{c}"/></marker>'
            for c in sorted(self._markers))
        head = f"<title>{escape(title)}</title>" if title else ""
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" '
                f'width="{self.width}" height="{self.height}" role="img">{head}<defs>{markers}</defs>'
                + "".join(self.parts) + "</svg>")
