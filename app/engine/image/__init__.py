"""Images as items: featurization (pixels or superpixels), scribble strokes onto items,
continuity links (pixel grid or superpixel adjacency), label masks and their scores."""

from app.engine.image.channels import Multichannel
from app.engine.image.featurize import (
    Featurization,
    FittedReduction,
    Recipe,
    apply_featurization,
    featurize,
)
from app.engine.image.grid_links import grid_links, grid_neighbour_pairs, neighbour_disagreement
from app.engine.image.image_file import ImageFileError, decode, decode_planes, read_header
from app.engine.image.item_regions import ANSWER_RADIUS, ItemRegion, item_regions
from app.engine.image.masks import decode_index_png, encode_png, item_labels_to_mask, mean_iou
from app.engine.image.region_links import region_adjacency, region_links
from app.engine.image.strokes import items_under, rasterize_strokes

__all__ = [
    "ANSWER_RADIUS",
    "Featurization",
    "FittedReduction",
    "ImageFileError",
    "ItemRegion",
    "Multichannel",
    "Recipe",
    "apply_featurization",
    "decode",
    "decode_index_png",
    "decode_planes",
    "encode_png",
    "featurize",
    "grid_links",
    "grid_neighbour_pairs",
    "item_labels_to_mask",
    "item_regions",
    "items_under",
    "mean_iou",
    "neighbour_disagreement",
    "rasterize_strokes",
    "read_header",
    "region_adjacency",
    "region_links",
]
