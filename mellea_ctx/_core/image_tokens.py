"""What an image costs in tokens, by each provider's published formula.

OpenAI (https://platform.openai.com/docs/guides/images-vision, "Calculating
costs"), for the GPT-4o family: at ``detail="low"`` an image costs 85 tokens.
Otherwise it is scaled to fit in a 2048 x 2048 square, then scaled so that
its shortest side is 768 px (images are only scaled down), and costs 85
tokens plus 170 per 512 px tile needed to cover it. The largest possible
cost is 8 tiles: 1445 tokens.

Anthropic (https://docs.anthropic.com/en/docs/build-with-claude/vision,
"Evaluate image size"): about ``width * height / 750`` tokens; an image whose
long edge exceeds 1568 px is scaled down first, and the API scales down any
image above about 1600 tokens, which is therefore the most one costs.

When the size is not known, each provider's largest cost is charged: a
bound, so that a context is never thought smaller than it is.
"""

from __future__ import annotations

import math
from typing import Final, Literal

#: Which provider's formula prices an image.
ImageFormula = Literal["openai", "anthropic"]

_OPENAI_BASE: Final = 85
_OPENAI_TILE: Final = 170
#: The most an OpenAI image costs: 2 x 4 tiles of 512 px after the documented resizing.
OPENAI_IMAGE_BOUND: Final = _OPENAI_BASE + 8 * _OPENAI_TILE
#: The most an Anthropic image costs: the API scales larger images down to about this.
ANTHROPIC_IMAGE_BOUND: Final = 1600


def openai_image_tokens(width: int, height: int, detail: str | None = None) -> int:
    """Return what OpenAI bills for a ``width`` x ``height`` image at ``detail``.

    Examples:
        >>> openai_image_tokens(1024, 1024)  # 768 x 768 after resizing: 4 tiles
        765
        >>> openai_image_tokens(2048, 4096)  # 1024 x 2048, then 768 x 1536: 6 tiles
        1105
        >>> openai_image_tokens(4000, 3000, detail="low")
        85
    """
    if detail == "low":
        return _OPENAI_BASE
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return _OPENAI_BASE + _OPENAI_TILE * tiles


def anthropic_image_tokens(width: int, height: int) -> int:
    """Return about what Anthropic bills for a ``width`` x ``height`` image.

    Examples:
        >>> anthropic_image_tokens(200, 200)
        54
        >>> anthropic_image_tokens(1000, 1000)
        1334
        >>> anthropic_image_tokens(4000, 3000)  # scaled down by the API
        1600
    """
    w, h = float(width), float(height)
    if max(w, h) > 1568:
        scale = 1568 / max(w, h)
        w, h = w * scale, h * scale
    return min(math.ceil(w * h / 750), ANTHROPIC_IMAGE_BOUND)


def image_tokens(
    width: int | None,
    height: int | None,
    detail: str | None,
    formula: ImageFormula,
    unknown: int | None = None,
) -> int:
    """Return an image's cost under ``formula``; ``unknown`` (or the bound) when its size is not.

    Examples:
        >>> image_tokens(None, None, None, "openai"), image_tokens(None, None, None, "anthropic")
        (1445, 1600)
        >>> image_tokens(512, 512, None, "openai")
        255
    """
    if formula == "openai" and detail == "low":
        return _OPENAI_BASE
    if width is None or height is None:
        if unknown is not None:
            return unknown
        return OPENAI_IMAGE_BOUND if formula == "openai" else ANTHROPIC_IMAGE_BOUND
    if formula == "openai":
        return openai_image_tokens(width, height, detail)
    return anthropic_image_tokens(width, height)
