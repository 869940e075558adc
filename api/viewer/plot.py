"""A small horizontal bar chart as inline SVG, drawn on the server (no JavaScript)."""

from __future__ import annotations

from api.viewer.html import Safe, fmt, join

COLOURS = ("#0b5cad", "#1b7a3a", "#b35c00", "#6b3fa0", "#a4262c", "#00707a", "#5a5a5a")


def bars(title: str, counts: dict[str, int], *, width: int = 420, row: int = 22) -> Safe:
    """One bar per key, scaled to the largest count; each bar has a <title> for screen readers and hover."""
    if not counts:
        return fmt('<p class="muted">{t}: nothing yet</p>', t=title)
    label_w, gap = 110, 6
    top = max(counts.values()) or 1
    height = row * len(counts) + gap
    rows = []
    for i, (name, n) in enumerate(counts.items()):
        y = i * row + gap
        w = max(1, round((width - label_w - 60) * n / top))
        rows.append(
            fmt(
                '<g><title>{name}: {n}</title><text x="{lx}" y="{ty}" text-anchor="end" font-size="13" '
                'fill="currentColor">{name}</text><rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{c}"/>'
                '<text x="{nx}" y="{ty}" font-size="13" fill="currentColor">{n}</text></g>',
                name=name,
                n=n,
                lx=label_w - 6,
                ty=y + row - 10,
                x=label_w,
                y=y,
                w=w,
                h=row - gap,
                c=COLOURS[i % len(COLOURS)],
                nx=label_w + w + 4,
            )
        )
    return fmt(
        '<figure><svg role="img" aria-label="{t}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'xmlns="http://www.w3.org/2000/svg">{rows}</svg><figcaption>{t}</figcaption></figure>',
        t=title,
        w=width,
        h=height,
        rows=join(rows),
    )
