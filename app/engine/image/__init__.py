"""Image helpers: pixels as items (grid links between neighbours, smoothness measures)."""

from app.engine.image.grid_links import grid_links, grid_neighbour_pairs, neighbour_disagreement

__all__ = ["grid_links", "grid_neighbour_pairs", "neighbour_disagreement"]
