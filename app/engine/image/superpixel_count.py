"""How many superpixels an image gets when its recipe leaves ``n_segments`` empty.

A superpixel is the smallest thing a scribble can label and a run can segment, so it should be
small beside the objects experts mark: nuclei 24 to 56 pixels across in bench_collection's
fluorescence fields. There, superpixels of about 256 pixels (the rule until 2026-11-30) cap any
labelling at mIoU 0.921 (the forest's score is 0.919) and of about 64 pixels at 0.96, and PPC's
defaults applied to 100 images scored 0.917 and 0.938. Each run's cost grows with its items,
though, so the count stops growing at ``MOST_FINE`` (where the expert's loop stays interactive)
until the image is large enough for one per ``COARSE_PIXELS``, the old rule, which whole slides
keep (a 20,000^2 slide: 1.56 million superpixels, not 6.25 million; its memory target is set
by that count):

* up to 4.2 megapixels: one per ``FINE_PIXELS`` (64);
* 4.2 to 16.8 megapixels: ``MOST_FINE`` (65,536), growing from 64 to 256 pixels each;
* beyond: one per ``COARSE_PIXELS`` (256).
"""

FINE_PIXELS = 64
COARSE_PIXELS = 256
MOST_FINE = 65_536


def default_superpixels(pixels: int) -> int:
    """The superpixel count of an image of ``pixels`` pixels (module docstring), at least 1."""
    if pixels < 1:
        raise ValueError(f"an image has at least one pixel, got {pixels}")
    fine = min(round(pixels / FINE_PIXELS), MOST_FINE)
    return max(1, fine, round(pixels / COARSE_PIXELS))
