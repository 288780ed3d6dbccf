"""Image helpers: pixels or superpixels as items (continuity links, smoothness measures)."""

from app.engine.image.grid_links import grid_links, grid_neighbour_pairs, neighbour_disagreement
from app.engine.image.region_links import (
    region_adjacency,
    region_index,
    region_links,
    region_means,
)

__all__ = [
    "grid_links",
    "grid_neighbour_pairs",
    "neighbour_disagreement",
    "region_adjacency",
    "region_index",
    "region_links",
    "region_means",
]
