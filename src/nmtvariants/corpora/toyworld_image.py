"""Render a toyworld scene as a small PNG: coloured shapes placed as the sentence's relations say.

The picture stands in for Multi30k's photographs in the multimodal study, so it must carry some of
the sentence's content (shapes, colours, sizes, left/right/above/below/near) and be byte-identical
for the same seed: positions come from the caller's ``random.Random`` and the PNG is written without
timestamps or other metadata.
"""

from __future__ import annotations

import io
import math
import random
from collections.abc import Sequence

from PIL import Image, ImageDraw

from nmtvariants.corpora.toyworld_lexicon import COLOURS_RGB, MATERIAL_RGB
from nmtvariants.corpora.toyworld_plan import NP

BACKGROUND = (236, 234, 224)
_SIZE_RADIUS = {"small": 0.08, "big": 0.15, "huge": 0.19}
_OFFSET = {"left": (-1.0, 0.0), "right": (1.0, 0.0), "above": (0.0, -1.0), "below": (0.0, 1.0)}


def layout(
    objects: Sequence[NP], relations: Sequence[tuple[int, str, int]], rng: random.Random
) -> list[tuple[float, float, float]]:
    """(x, y, radius) in [0, 1] for every object; a figure is placed after its ground, per its relation."""
    placed: dict[int, tuple[float, float, float]] = {}
    constraint = {figure: (kind, ground) for figure, kind, ground in relations if figure != ground}
    pending = list(range(len(objects)))
    while pending:
        progress = False
        for index in list(pending):
            radius = _SIZE_RADIUS.get(objects[index].size or "", 0.11)
            kind, ground = constraint.get(index, ("", -1))
            if ground in placed:
                gx, gy, gr = placed[ground]
                dist = gr + radius + 0.06 + 0.1 * rng.random()
                if kind in _OFFSET:
                    dx, dy = _OFFSET[kind]
                    jitter = 0.06 * (rng.random() - 0.5)
                    x, y = gx + dx * dist + dy * jitter, gy + dy * dist + dx * jitter
                else:
                    angle = rng.random() * 2 * math.pi
                    x, y = gx + math.cos(angle) * dist, gy + math.sin(angle) * dist
            elif ground == -1 or ground not in pending:
                x, y = 0.3 + 0.4 * rng.random(), 0.3 + 0.4 * rng.random()
            else:
                continue
            placed[index] = (min(max(x, radius), 1 - radius), min(max(y, radius), 1 - radius), radius)
            pending.remove(index)
            progress = True
        if not progress:  # a cycle of constraints: place the rest freely
            for index in pending:
                placed[index] = (0.3 + 0.4 * rng.random(), 0.3 + 0.4 * rng.random(), 0.11)
            pending = []
    return [placed[i] for i in range(len(objects))]


def _fill(np: NP) -> tuple[int, int, int]:
    if np.colour:
        return COLOURS_RGB[np.colour]
    if np.material:
        return MATERIAL_RGB[np.material]
    return (150, 140, 130)


def _draw(
    draw: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, r: float, fill: tuple[int, int, int]
) -> None:
    dark = tuple(max(0, c - 70) for c in fill)
    box = (cx - r, cy - r, cx + r, cy + r)
    if shape == "circle":
        draw.ellipse(box, fill=fill, outline=dark)
    elif shape == "ring":
        draw.ellipse(box, outline=fill, width=max(1, int(r / 3)))
    elif shape in ("square", "block"):
        h = r if shape == "square" else r * 0.55
        draw.rectangle((cx - r, cy - h, cx + r, cy + h), fill=fill, outline=dark)
    elif shape == "cube":
        draw.rectangle((cx - r, cy - r * 0.6, cx + r * 0.6, cy + r), fill=fill, outline=dark)
        draw.polygon(
            [(cx - r, cy - r * 0.6), (cx - r * 0.6, cy - r), (cx + r, cy - r), (cx + r * 0.6, cy - r * 0.6)],
            fill=dark,
        )
    elif shape == "star":
        points = [
            (
                cx + (r if k % 2 == 0 else r * 0.45) * math.sin(k * math.pi / 5),
                cy - (r if k % 2 == 0 else r * 0.45) * math.cos(k * math.pi / 5),
            )
            for k in range(10)
        ]
        draw.polygon(points, fill=fill, outline=dark)
    elif shape in ("triangle", "lamp"):
        draw.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=fill, outline=dark)
        if shape == "lamp":
            draw.ellipse((cx - r * 0.25, cy + r * 0.2, cx + r * 0.25, cy + r * 0.7), fill=(255, 240, 150))
    elif shape == "bottle":
        draw.rectangle((cx - r * 0.45, cy - r * 0.3, cx + r * 0.45, cy + r), fill=fill, outline=dark)
        draw.rectangle((cx - r * 0.15, cy - r, cx + r * 0.15, cy - r * 0.3), fill=dark)
    elif shape == "cup":
        draw.polygon(
            [(cx - r, cy - r * 0.6), (cx + r, cy - r * 0.6), (cx + r * 0.6, cy + r), (cx - r * 0.6, cy + r)],
            fill=fill,
            outline=dark,
        )
    elif shape in ("egg", "seal"):
        draw.ellipse(
            (cx - r * 0.75, cy - r, cx + r * 0.75, cy + r)
            if shape == "egg"
            else (cx - r, cy - r * 0.5, cx + r, cy + r * 0.5),
            fill=fill,
            outline=dark,
        )
    elif shape == "disc":
        draw.ellipse((cx - r, cy - r * 0.4, cx + r, cy + r * 0.4), fill=fill, outline=dark)
    elif shape in ("bat", "bird"):
        draw.polygon(
            [(cx - r, cy - r * 0.5), (cx, cy + r * 0.3), (cx + r, cy - r * 0.5), (cx, cy - r * 0.1)],
            fill=fill,
            outline=dark,
        )
    elif shape == "animal":
        draw.ellipse((cx - r, cy - r * 0.5, cx + r * 0.5, cy + r * 0.5), fill=fill, outline=dark)
        draw.ellipse((cx + r * 0.3, cy - r * 0.8, cx + r, cy - r * 0.1), fill=fill, outline=dark)
    elif shape in ("bank", "house", "crane"):
        if shape == "bank":
            draw.polygon(
                [(cx - r, cy + r), (cx + r, cy + r), (cx + r, cy - r * 0.2)], fill=fill, outline=dark
            )
            draw.rectangle((cx - r, cy + r * 0.7, cx + r, cy + r), fill=(70, 130, 200))
        elif shape == "house":
            draw.rectangle((cx - r, cy - r * 0.3, cx + r, cy + r), fill=fill, outline=dark)
            draw.polygon([(cx - r, cy - r * 0.3), (cx, cy - r), (cx + r, cy - r * 0.3)], fill=dark)
        else:
            draw.line(
                (cx - r * 0.5, cy + r, cx - r * 0.5, cy - r, cx + r, cy - r),
                fill=fill,
                width=max(1, int(r / 4)),
            )
            draw.line((cx + r * 0.8, cy - r, cx + r * 0.8, cy), fill=dark)
    else:
        draw.polygon([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)], fill=fill, outline=dark)


def render_png(
    objects: Sequence[NP], relations: Sequence[tuple[int, str, int]], rng: random.Random, size: int = 64
) -> bytes:
    """PNG bytes of the scene (RGB, no metadata chunks); counted objects are drawn side by side."""
    image = Image.new("RGB", (size, size), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for np, (x, y, radius) in zip(objects, layout(objects, relations, rng), strict=True):
        r = radius * size
        copies = max(1, np.count)
        step = 2.1 * r * (0.6 if copies > 1 else 0)
        for k in range(copies):
            cx = x * size + (k - (copies - 1) / 2) * step
            _draw(draw, np.entry.shape, cx, y * size, r * (0.6 if copies > 1 else 1), _fill(np))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()
