"""StrictModel: the pydantic base of every model of values a user writes (a spec, an encoding's parameters).

Torch-free, as every module of core/.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

BOOLEAN_NUMBER = PydanticCustomError(
    "boolean_number", "a boolean (true or false) where a number is expected; write the number"
)


class StrictModel(BaseModel):
    """Unknown keys refused, NaN and inf refused (a non-finite input can only give non-finite results), and numbers
    are numbers: a boolean is never read as 1 or 0, as pydantic's lax mode would read `d_model: true`."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="wrap")
    @classmethod
    def _numbers_are_numbers(cls, data: Any, validate: ModelWrapValidatorHandler[StrictModel]) -> StrictModel:
        model = validate(data)
        if not isinstance(data, dict):
            return model
        for name, field in cls.model_fields.items():
            aliases = getattr(field.validation_alias, "choices", [field.validation_alias or field.alias])
            for key in [name, *(alias for alias in aliases if isinstance(alias, str))]:
                where = _boolean_read_as_number(data.get(key), getattr(model, name)) if key in data else None
                if where is not None:
                    error = InitErrorDetails(type=BOOLEAN_NUMBER, loc=(key, *where), input=True)
                    raise ValidationError.from_exception_data(cls.__name__, [error])
        return model


def _boolean_read_as_number(given: Any, kept: Any) -> tuple[int | str, ...] | None:
    """Where a boolean in `given` came out of validation as a number at the same place in `kept` (() for `given`
    itself, an index or key below it), or None."""
    if isinstance(given, bool):
        return () if isinstance(kept, int | float) and not isinstance(kept, bool) else None
    pairs: list[tuple[int | str, Any, Any]] = []
    if isinstance(given, list | tuple) and isinstance(kept, list | tuple) and len(given) == len(kept):
        pairs = [(index, g, k) for index, (g, k) in enumerate(zip(given, kept, strict=True))]
    elif isinstance(given, dict) and isinstance(kept, dict):
        pairs = [(key, value, kept[key]) for key, value in given.items() if key in kept]
    for at, inner_given, inner_kept in pairs:
        where = _boolean_read_as_number(inner_given, inner_kept)
        if where is not None:
            return (at, *where)
    return None
