"""Image files to pixels: what each TIFF layout decodes to, PNG and JPEG as before, and the
files that must be refused (app/engine/image/image_file.py)."""

import io
import tracemalloc

import numpy as np
import pytest
import tifffile
from PIL import Image

from app.engine.image.channels import Multichannel
from app.engine.image.image_file import (
    ImageFileError,
    decode,
    decode_planes,
    file_format,
    read_header,
    stack_contents,
)


def tiff(array: np.ndarray, **options: object) -> bytes:
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, array, **options)  # type: ignore[arg-type]
    return buffer.getvalue()


def png(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


RNG = np.random.default_rng(7)
CYX16 = RNG.integers(0, 65_535, size=(4, 21, 34), dtype=np.uint16)


def test_formats_are_told_by_their_first_bytes() -> None:
    assert file_format(png(np.zeros((2, 2), np.uint8))) == "PNG"
    assert file_format(b"\xff\xd8\xff\xe0rest") == "JPEG"
    assert file_format(tiff(np.zeros((2, 2), np.uint8))) == "TIFF"
    assert file_format(tiff(np.zeros((2, 2), np.uint8), bigtiff=True)) == "TIFF"
    assert file_format(b"a,b\n1,2\n") is None


@pytest.mark.parametrize("compression", [None, "zlib", "lzw", "zstd", "packbits"])
def test_ome_tiff_channels_decode_exactly_with_their_names(compression: str | None) -> None:
    data = tiff(
        CYX16,
        ome=True,
        compression=compression,
        metadata={"axes": "CYX", "Channel": {"Name": ["DAPI", "GFP", "RFP", "Cy5"]}},
    )
    header = read_header(data)
    assert (header.format, header.width, header.height) == ("TIFF", 34, 21)
    assert (header.channels, header.dtype, header.photo) == (4, "uint16", False)
    assert header.channel_names == ("DAPI", "GFP", "RFP", "Cy5")
    assert header.mode == "4 x uint16"
    image = decode(data)
    assert isinstance(image, Multichannel)
    assert image.names == ("DAPI", "GFP", "RFP", "Cy5")
    np.testing.assert_array_equal(image.planes, CYX16)


def test_axes_of_length_one_are_dropped_and_channels_come_first() -> None:
    tczyx = CYX16[np.newaxis, :, np.newaxis]  # T=1, C=4, Z=1
    data = tiff(tczyx, ome=True, metadata={"axes": "TCZYX"})
    image = decode(data)
    assert isinstance(image, Multichannel)
    np.testing.assert_array_equal(image.planes, CYX16)
    assert image.names == tuple(f"channel {k}" for k in range(1, 5))


def test_imagej_hyperstack_channels() -> None:
    image = decode(tiff(CYX16, imagej=True, metadata={"axes": "CYX"}))
    assert isinstance(image, Multichannel)
    np.testing.assert_array_equal(image.planes, CYX16)


@pytest.mark.parametrize("planar", ["contig", "separate"])
def test_samples_as_channels_either_interleaved_or_planar(planar: str) -> None:
    yxs = np.moveaxis(CYX16[:3], 0, 2)
    data = tiff(
        yxs if planar == "contig" else CYX16[:3],
        photometric="rgb",
        planarconfig=planar,
    )
    image = decode(data)
    assert isinstance(image, Multichannel)  # 16-bit RGB: measured channels, scaled one by one
    np.testing.assert_array_equal(image.planes, CYX16[:3])


def test_an_8_bit_rgb_tiff_is_a_photo_and_alpha_is_dropped() -> None:
    rgba = RNG.integers(0, 255, size=(9, 11, 4), dtype=np.uint8)
    header = read_header(tiff(rgba, photometric="rgb", extrasamples=["unassalpha"]))
    assert (header.photo, header.channels, header.mode) == (True, 3, "RGB")
    pixels = decode(tiff(rgba, photometric="rgb", extrasamples=["unassalpha"]))
    assert isinstance(pixels, np.ndarray)
    np.testing.assert_array_equal(pixels, rgba[:, :, :3])


def test_an_8_bit_grey_tiff_is_a_photo_like_a_grey_png() -> None:
    grey = RNG.integers(0, 255, size=(9, 11), dtype=np.uint8)
    from_tiff, from_png = decode(tiff(grey)), decode(png(grey))
    assert isinstance(from_tiff, np.ndarray) and isinstance(from_png, np.ndarray)
    np.testing.assert_array_equal(from_tiff, grey)
    np.testing.assert_array_equal(from_png, grey)


def test_float_tiff_is_one_measured_channel() -> None:
    values = RNG.normal(size=(6, 7)).astype(np.float32)
    image = decode(tiff(values))
    assert isinstance(image, Multichannel)
    np.testing.assert_array_equal(image.planes[0], values)


def test_a_16_bit_png_keeps_its_16_bits() -> None:
    """Pillow's convert('L') used to clip every value above 255 to white."""
    values = (np.arange(30, dtype=np.uint16) * 2_000).reshape(5, 6)
    image = decode(png(values))
    assert isinstance(image, Multichannel)
    assert image.planes.dtype == np.uint16 and image.names == ("grey",)
    np.testing.assert_array_equal(image.planes[0], values)


def test_ome_names_that_repeat_fall_back_to_numbers() -> None:
    data = tiff(CYX16[:2], ome=True, metadata={"axes": "CYX", "Channel": {"Name": ["GFP", "GFP"]}})
    assert read_header(data).channel_names == ("channel 1", "channel 2")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (tiff(np.zeros((5, 8, 8), np.uint16)), ["stack of planes", "5 along Q"]),
        (tiff(np.zeros((2, 8, 8), np.uint16), metadata={"axes": "TYX"}), ["2 along T"]),
        (
            tiff(np.zeros((2, 8, 8, 3), np.uint8), metadata={"axes": "CYXS"}, photometric="rgb"),
            ["two channel axes"],
        ),
        (tiff(np.zeros((17, 8, 8), np.uint16), metadata={"axes": "CYX"}), ["17 channels"]),
        (tiff(np.zeros((8, 8), np.complex64)), ["complex64"]),
        (tiff(np.full((8, 8), np.inf, np.float32)), ["NaN or infinite"]),
        (tiff(CYX16, metadata={"axes": "CYX"})[:-300], ["truncated"]),
        (tiff(CYX16, metadata={"axes": "CYX"}, compression="zlib")[:-300], ["truncated"]),
        (tiff(CYX16)[:6], ["corrupt"]),
        (b"GIF89a....", ["not a PNG, JPEG or TIFF"]),
        (png(RNG.integers(0, 255, (40, 40), np.uint8))[:-200], ["truncated or corrupt"]),
    ],
)
def test_files_we_cannot_take_are_refused_with_the_reason(data: bytes, words: list[str]) -> None:
    with pytest.raises(ImageFileError) as caught:
        decode(data)
    for word in words:
        assert word in str(caught.value)


def test_several_images_in_one_file_are_a_collection_not_one_image() -> None:
    buffer = io.BytesIO()
    with tifffile.TiffWriter(buffer) as writer:
        writer.write(np.zeros((8, 8), np.uint16))
        writer.write(np.zeros((4, 4), np.uint16))
    with pytest.raises(ImageFileError, match="holds 2 images"):
        read_header(buffer.getvalue())


def test_the_header_is_read_without_decoding_the_pixels() -> None:
    """A deflated 8,000 x 8,000 image is a few kB: its size is known before it costs 64 MB."""
    data = tiff(np.zeros((8000, 8000), np.uint8), compression="zlib")
    assert len(data) < 1_000_000
    header = read_header(data)
    assert (header.width, header.height, header.decoded_bytes) == (8000, 8000, 64_000_000)


def test_a_stack_is_decoded_one_plane_at_a_time_in_the_order_its_headers_announce() -> None:
    """A 160 kB file holding 100 MB of zeros: taking its planes one by one never holds more than
    a few of them (before, the whole stack was decoded at once: +973 MB for a 1 MB file)."""
    planes = np.zeros((100, 1000, 1000), dtype=np.uint8)
    planes[:, 0, 0] = np.arange(100)  # each plane tells which it is
    data = tiff(planes, metadata={"axes": "ZYX"}, compression="zlib")
    assert len(data) < 2_000_000
    announced = stack_contents(data)
    assert [place for place, _ in announced] == [f"Z {k + 1}" for k in range(100)]
    assert {(header.width, header.height) for _, header in announced} == {(1000, 1000)}
    tracemalloc.start()
    try:
        seen = []
        for place, pixels in decode_planes(data):
            assert isinstance(pixels, np.ndarray)
            seen.append((place, int(pixels[0, 0])))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen == [(f"Z {k + 1}", k) for k in range(100)]
    assert peak < 10 * planes[0].nbytes, f"{peak:,} bytes held for planes of 1 MB"
