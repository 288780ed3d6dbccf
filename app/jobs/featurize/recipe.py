"""The featurization recipe as an API parameter model: its JSON Schema is what
`GET /api/v1/featurization` publishes and what `POST /datasets/{id}/featurize` accepts.
The engine's `Recipe` checks the rest (e.g. odd windows) with a message naming the field."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.engine.image.featurize import MAX_BALANCE, MAX_ENERGY_WINDOW, Recipe

_DEFAULT = Recipe()
Sigma = Annotated[float, Field(gt=0, le=256, allow_inf_nan=False)]


class RecipeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    colour: Literal["lab", "rgb", "grey"] = Field(
        "lab", description="Channels of a colour image (a grey image always has one)"
    )
    filters: list[Literal["intensity", "edges", "texture"]] = Field(
        ["intensity", "edges", "texture"],
        max_length=3,
        json_schema_extra={"uniqueItems": True},
        description="Multiscale filters per channel (as scikit-image's multiscale_basic_features)",
    )
    sigmas: list[Sigma] = Field(
        list(_DEFAULT.sigmas),
        max_length=8,
        json_schema_extra={"uniqueItems": True},
        description="Gaussian scales of the filters, pixels",
    )

    @field_validator("filters", "sigmas", "channels")
    @classmethod
    def _no_repeats(cls, value: list[Any]) -> list[Any]:
        # The schema says uniqueItems; a repeat is refused here, with the field named.
        if len(set(value)) != len(value):
            raise ValueError(f"repeats a value: {value}")
        return value

    energy_window: float = Field(
        _DEFAULT.energy_window,
        ge=0,
        le=MAX_ENERGY_WINDOW,
        allow_inf_nan=False,
        description="0 keeps raw edge and texture responses; w > 0 replaces them by their local "
        "mean magnitude over about w * sigma pixels",
    )
    window: int = Field(
        _DEFAULT.window, ge=0, le=31, description="0 (off) or an odd w: the w x w colour window"
    )
    n_components: int = Field(
        _DEFAULT.n_components, ge=1, le=64, description="PCA components kept as features"
    )
    superpixels: Literal["auto", "never", "always"] = Field(
        "auto", description="'auto': SLIC superpixels as items above 512 x 512 pixels"
    )
    n_segments: int | None = Field(
        None, ge=1, le=1_000_000, description="Superpixels wanted; empty: one per 256 pixels"
    )
    compactness: float = Field(
        _DEFAULT.compactness, gt=0, le=1000, allow_inf_nan=False, description="SLIC compactness"
    )
    superpixel_std: bool = Field(
        _DEFAULT.superpixel_std, description="Superpixels get each map's standard deviation too"
    )

    family_balance: float = Field(
        _DEFAULT.family_balance,
        ge=0,
        le=MAX_BALANCE,
        allow_inf_nan=False,
        description="Before the PCA, each standardised map of a family (intensity; edges and "
        "texture; window) with n maps is divided by (n / n_smallest) ** (p / 2): 0 plain "
        "standardisation, 1 every family weighs the same",
    )

    channels: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        [],
        max_length=16,
        json_schema_extra={"uniqueItems": True},
        description="Measured channels featurized, by name in the image's order; empty: every "
        "channel (a photo's channels are chosen by `colour`)",
    )

    def recipe(self) -> Recipe:
        """The engine's recipe; ValueError names what the schema could not check."""
        return Recipe.from_dict(self.model_dump())
