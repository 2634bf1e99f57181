"""Shields-style SVG badges: a grey label, a coloured value, 20 px high, for READMEs.

Text widths are estimated for Verdana 11 px (the font shields.io measures with) and each text
carries a textLength, so the badge keeps its shape in whatever font the viewer substitutes.
"""

from __future__ import annotations

import re
from html import escape

LABEL_COLOR = "#555"
# shields.io's named colours
COLORS = {
    "up": "#4c1",
    "down": "#e05d44",
    "partial": "#dfb317",
    "maintenance": "#007ec6",
    "ok": "#4c1",
    "minor": "#dfb317",
    "major": "#fe7d37",
    "bad": "#e05d44",
}
GREY = "#9f9f9f"  # paused, new, no data
PADDING_PX = 6
MAX_LABEL_CHARS = 40

# characters XML 1.0 forbids even when escaped: one in a name (stored before names were checked)
# would make the whole SVG unreadable
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

_NARROW = set("iIl.,:;'|!`")
_SLIM = set("fjrt()[]{}/\\- ")
_WIDE = set("mwMW%@")


def _char_px(ch: str) -> float:
    if ch in _NARROW:
        return 3.6
    if ch in _SLIM:
        return 4.6
    if ch in _WIDE:
        return 11.0
    if ch.isupper():
        return 7.6
    if ord(ch) > 0x2E7F:  # CJK and other wide scripts
        return 11.0
    return 7.0


def text_px(text: str) -> float:
    """Estimated width of `text` in Verdana 11 px."""
    return sum(_char_px(ch) for ch in text)


def badge_svg(label: str, value: str, color: str) -> str:
    """One badge. `label` and `value` are plain text (escaped here); `color` a CSS colour."""
    label, value = _NOT_XML.sub("\ufffd", label), _NOT_XML.sub("\ufffd", value)
    if len(label) > MAX_LABEL_CHARS:
        label = label[: MAX_LABEL_CHARS - 1] + "…"
    label_text, value_text = text_px(label), text_px(value)
    label_w = round(label_text + 2 * PADDING_PX)
    value_w = round(value_text + 2 * PADDING_PX)
    width = label_w + value_w
    title = escape(f"{label}: {value}")
    label_e, value_e, color_e = escape(label), escape(value), escape(color)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        '<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{label_w}" height="20" fill="{LABEL_COLOR}"/>'
        f'<rect x="{label_w}" width="{value_w}" height="20" fill="{color_e}"/>'
        f'<rect width="{width}" height="20" fill="url(#s)"/></g>'
        '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">'
        f"{_text(label_w / 2, label_text, label_e)}{_text(label_w + value_w / 2, value_text, value_e)}"
        "</g></svg>\n"
    )


def _text(x: float, length: float, escaped: str) -> str:
    """A shadowed text, as shields draws it."""
    attributes = f'x="{x:.1f}" textLength="{length:.1f}" lengthAdjust="spacingAndGlyphs"'
    return (
        f'<text {attributes} y="15" fill="#010101" fill-opacity=".3" aria-hidden="true">{escaped}</text>'
        f'<text {attributes} y="14">{escaped}</text>'
    )


def state_color(state: str) -> str:
    return COLORS.get(state, GREY)


def level_color(level: str) -> str:
    return COLORS.get(level, GREY)
