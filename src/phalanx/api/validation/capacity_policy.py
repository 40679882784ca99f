"""Device capacities and their ``requestPolicy`` (DRAConsumableCapacity, spec dra.md §1.5).

A policy is allowed only on a device with ``allowMultipleAllocations: true``; it has a ``default`` and at most one
of ``validValues`` (≤10, ascending, containing the default) or ``validRange`` (``min`` required, steps from
``min``). Quantities are compared exactly and echoed as written.
"""

from __future__ import annotations

from fractions import Fraction

from phalanx.api import dra
from phalanx.api import models as m
from phalanx.api.errors import FieldError
from phalanx.api.quantity import QuantityError, parse_quantity

__all__ = ["parsed", "validate_capacity"]

_MAX_VALID_VALUES = 10


def parsed(path: str, raw: m.Quantity, errs: list[FieldError]) -> Fraction | None:
    """``raw`` as an exact number, or None after adding kube-apiserver's parse error to ``errs``."""
    try:
        return parse_quantity(raw)
    except QuantityError as exc:
        errs.append(FieldError.invalid(path, str(raw), str(exc)))
        return None


def validate_capacity(path: str, capacity: dra.DeviceCapacity, multiple_allocations: bool) -> list[FieldError]:
    """One entry of a device's ``capacity`` (or a counter: a capacity without a policy)."""
    errs: list[FieldError] = []
    value = parsed(f"{path}.value", capacity.value, errs)
    policy = capacity.request_policy
    if policy is None:
        return errs
    at = f"{path}.requestPolicy"
    if not multiple_allocations:
        return [*errs, FieldError.forbidden(at, "allowMultipleAllocations must be true")]
    if policy.valid_values and policy.valid_range is not None:
        detail = 'exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time'
        return [*errs, FieldError.forbidden(at, detail)]
    if value is None:
        return errs
    if policy.valid_values:
        return errs + _validate_values(at, policy, value, str(capacity.value))
    if policy.valid_range is not None:
        return errs + _validate_range(at, policy, policy.valid_range, value, str(capacity.value))
    if policy.default is not None:
        parsed(f"{at}.default", policy.default, errs)
    return errs


def _validate_values(path: str, policy: dra.CapacityRequestPolicy, cap: Fraction, cap_text: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if policy.default is None:
        return [FieldError.required(f"{path}.default", "required when validValues is defined")]
    at = f"{path}.validValues"
    default = parsed(f"{path}.default", policy.default, errs)
    values = [parsed(f"{at}[{i}]", v, errs) for i, v in enumerate(policy.valid_values)]
    if errs or default is None:
        return errs
    numbers = [v for v in values if v is not None]
    for i in range(len(numbers) - 1):
        if numbers[i] > numbers[i + 1]:
            errs.append(
                FieldError.invalid(
                    f"{at}[{i + 1}]", str(policy.valid_values[i + 1]), "values must be sorted in ascending order"
                )
            )
    if len(numbers) > _MAX_VALID_VALUES:
        return [*errs, FieldError.too_many(at, len(numbers), _MAX_VALID_VALUES)]
    seen: set[Fraction] = set()
    for i, option in enumerate(numbers):
        if option > cap:
            detail = f"option is larger than capacity value: {cap_text}"
            errs.append(FieldError.invalid(f"{at}[{i}]", str(policy.valid_values[i]), detail))
    for i, option in enumerate(numbers):
        if option in seen:
            errs.append(FieldError.duplicate(f"{at}[{i}]", str(policy.valid_values[i])))
        seen.add(option)
    if default not in seen:
        errs.append(
            FieldError.invalid(at, str(policy.default), "default value is not valid according to the requestPolicy")
        )
    return errs


def _validate_range(
    path: str, policy: dra.CapacityRequestPolicy, rng: dra.CapacityRequestPolicyRange, cap: Fraction, cap_text: str
) -> list[FieldError]:
    at = f"{path}.validRange"
    if policy.default is None:
        return [FieldError.required(f"{path}.default", "required when validRange is defined")]
    if rng.min is None:
        return [FieldError.required(f"{at}.min", "required when validRange is defined")]
    errs: list[FieldError] = []
    default = parsed(f"{path}.default", policy.default, errs)
    low = parsed(f"{at}.min", rng.min, errs)
    high = parsed(f"{at}.max", rng.max, errs) if rng.max is not None else None
    step = parsed(f"{at}.step", rng.step, errs) if rng.step is not None else None
    if errs or default is None or low is None:
        return errs
    texts = {"default": str(policy.default), "min": str(rng.min), "max": str(rng.max), "step": str(rng.step)}
    if low > cap:
        errs.append(FieldError.invalid(f"{at}.min", texts["min"], f"min is larger than capacity value: {cap_text}"))
    if default < low:
        errs.append(FieldError.invalid(f"{at}.default", texts["default"], f"default is less than min: {texts['min']}"))
    if high is not None:
        if low > high:
            errs.append(FieldError.invalid(f"{at}.max", texts["min"], f"min is larger than max: {texts['max']}"))
        if high > cap:
            errs.append(FieldError.invalid(f"{at}.max", texts["max"], f"max is larger than capacity value: {cap_text}"))
        if default > high:
            errs.append(
                FieldError.invalid(f"{at}.default", texts["default"], f"default is more than max: {texts['max']}")
            )
    if step is not None:
        errs += _validate_step(f"{at}.step", texts, step, low, cap, cap_text, default, high)
    return errs


def _validate_step(
    path: str,
    texts: dict[str, str],
    step: Fraction,
    low: Fraction,
    cap: Fraction,
    cap_text: str,
    default: Fraction,
    high: Fraction | None,
) -> list[FieldError]:
    if step <= 0:
        return [FieldError.invalid(path, texts["step"], "must be greater than zero")]
    errs = []
    if low + step > cap:
        detail = f"one step {_number(low + step)} is larger than capacity value: {cap_text}"
        errs.append(FieldError.invalid(path, texts["step"], detail))
    for name, value in (("default", default), ("max", high)):
        if value is not None and (value - low) % step != 0:
            detail = f"value is not a multiple of a given step ({texts['step']}) from ({texts['min']})"
            errs.append(FieldError.invalid(path, texts[name], detail))
    return errs


def _number(value: Fraction) -> str:
    # kube-apiserver prints the sum as a canonical quantity (8Gi); phalanx prints the plain number.
    return str(value.numerator) if value.denominator == 1 else str(float(value))
