#!/usr/bin/env python3
"""A terminal screen as a PNG: the text tmux captured with its escapes
(capture-pane -e), laid out on a grid of cells and drawn with Pillow in
DejaVu Sans Mono (Debian's python3-pil and fonts-dejavu-core). Only SGR
is understood (colours, bold, dim, italic, underline, reverse); that is
all capture-pane -e writes.

usage: screenshot.py IN.ansi OUT.png [COLUMNS]
"""
import re
import sys
import unicodedata

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = "/usr/share/fonts/truetype/dejavu/"
BG = (30, 30, 36)
FG = (220, 220, 220)
PALETTE = [(60, 60, 60), (224, 108, 117), (152, 195, 121), (229, 192, 123), (97, 175, 239), (198, 120, 221),
           (86, 182, 194), (220, 220, 220)]
BRIGHT = [(120, 120, 120), (255, 130, 140), (180, 225, 150), (250, 215, 150), (130, 195, 255), (220, 150, 240),
          (120, 210, 220), (255, 255, 255)]


SUBST = {"⎿": "└", "⎘": "+", "⏎": "↵", "⏻": "o"}


def xterm256(n):
    if n < 8:
        return PALETTE[n]
    if n < 16:
        return BRIGHT[n - 8]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return (v, v, v)


def width(ch):
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 2
    if unicodedata.combining(ch):
        return 0
    return 1


def parse(text, cols):
    """Rows of cells: (char, fg, bg, bold, dim, italic, underline)."""
    rows = []
    st = {"fg": None, "bg": None, "bold": False, "dim": False, "ital": False, "under": False, "rev": False}
    for line in text.split("\n"):
        row = []
        i = 0
        while i < len(line):
            m = re.match(r"\x1b\[([0-9;:]*)m", line[i:])
            if m:
                ps = [int(p) if p else 0 for p in re.split("[;:]", m.group(1))] if m.group(1) else [0]
                k = 0
                while k < len(ps):
                    p = ps[k]
                    if p == 0:
                        st.update(fg=None, bg=None, bold=False, dim=False, ital=False, under=False, rev=False)
                    elif p == 1:
                        st["bold"] = True
                    elif p == 2:
                        st["dim"] = True
                    elif p == 3:
                        st["ital"] = True
                    elif p == 4:
                        st["under"] = True
                    elif p == 7:
                        st["rev"] = True
                    elif p == 22:
                        st["bold"] = st["dim"] = False
                    elif p == 23:
                        st["ital"] = False
                    elif p == 24:
                        st["under"] = False
                    elif p == 27:
                        st["rev"] = False
                    elif 30 <= p <= 37:
                        st["fg"] = PALETTE[p - 30]
                    elif p == 39:
                        st["fg"] = None
                    elif 40 <= p <= 47:
                        st["bg"] = PALETTE[p - 40]
                    elif p == 49:
                        st["bg"] = None
                    elif 90 <= p <= 97:
                        st["fg"] = BRIGHT[p - 90]
                    elif p in (38, 48) and k + 2 < len(ps) and ps[k + 1] == 5:
                        st["fg" if p == 38 else "bg"] = xterm256(ps[k + 2])
                        k += 2
                    elif p in (38, 48) and k + 4 < len(ps) and ps[k + 1] == 2:
                        st["fg" if p == 38 else "bg"] = tuple(ps[k + 2:k + 5])
                        k += 4
                    k += 1
                i += m.end()
                continue
            if line[i] == "\x1b":   # another escape: not drawn
                i += 1
                continue
            ch = line[i]
            fg, bg = st["fg"] or FG, st["bg"]
            if st["rev"]:
                fg, bg = bg or BG, fg
            row.append((ch, fg, bg, st["bold"], st["dim"], st["ital"], st["under"]))
            if width(ch) == 2:
                row.append(None)
            i += 1
        rows.append(row[:cols])
    while rows and not rows[-1]:
        rows.pop()
    return rows


def main():
    src, out = sys.argv[1], sys.argv[2]
    cols = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    rows = parse(open(src, encoding="utf-8", errors="replace").read(), cols)
    size = 15
    fonts = {}
    for key, name in (("r", "DejaVuSansMono.ttf"), ("b", "DejaVuSansMono-Bold.ttf"), ("i", "DejaVuSansMono-Oblique.ttf")):
        try:
            fonts[key] = ImageFont.truetype(FONT_DIR + name, size)
        except OSError:
            fonts[key] = fonts.get("r") or ImageFont.load_default()
    try:
        fallback = ImageFont.truetype(FONT_DIR + "DejaVuSans.ttf", size)
    except OSError:
        fallback = fonts["r"]
    notdef = bytes(fonts["r"].getmask("\uffff"))
    notdef_fb = bytes(fallback.getmask("\uffff"))
    cw = int(fonts["r"].getlength("M") + 0.5)
    ch = size + 5
    pad = 14
    img = Image.new("RGB", (pad * 2 + cw * cols, pad * 2 + ch * max(len(rows), 1)), BG)
    d = ImageDraw.Draw(img)
    for y, row in enumerate(rows):
        for x, cell in enumerate(row):
            if cell is None:
                continue
            c, fg, bg, bold, dim, ital, under = cell
            px, py = pad + x * cw, pad + y * ch
            w = width(c)
            if bg:
                d.rectangle([px, py, px + cw * w - 1, py + ch - 1], fill=bg)
            if dim:
                fg = tuple(int(v * 0.6 + b * 0.4) for v, b in zip(fg, BG))
            font = fonts["b"] if bold else fonts["i"] if ital else fonts["r"]
            # The session's marks that the monospace face lacks: another
            # face's, or the nearest of its own.
            if c.strip() and bytes(font.getmask(c)) == notdef:
                font = fallback if bytes(fallback.getmask(c)) != notdef_fb else font
                c = SUBST.get(c, c) if font is not fallback else c
            d.text((px, py + 2), c, font=font, fill=fg)
            if under:
                d.line([px, py + ch - 3, px + cw * w - 1, py + ch - 3], fill=fg)
    img.save(out, optimize=True)


if __name__ == "__main__":
    main()
