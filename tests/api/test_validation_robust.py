"""Property: validation never raises. Any well-typed object gets a list of field errors back (principle 5).

Objects are generated from the models' own type information, so every field is reached with awkward values:
empty strings, dashes, dots, slashes, percent signs, huge and negative numbers.
"""

from __future__ import annotations

from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api import dra
from phalanx.api import models as m
from phalanx.api import scheduling_v1alpha2 as v1alpha2
from phalanx.api.errors import FieldError
from phalanx.api.validation import validate_object

TEXT = st.one_of(
    st.sampled_from(["", "a", "worker-0", "Gi", "-", "a/b", "x.y/z", "1.5Gi", "-1", "50%", "Exists", "NoExecute"]),
    st.text(alphabet="aZ09-._/%: eEmKi", max_size=10),
)
NUMBER = st.integers(min_value=-(2**40), max_value=2**40)


def strategy(t: mi.Type, depth: int = 0) -> st.SearchStrategy[Any]:
    """A strategy for JSON-like values of msgspec type ``t``; recursive types (composite templates nest) stop at a
    depth deeper than the API allows."""
    if isinstance(t, mi.StructType):
        if depth > 12:
            return st.just({})
        fields = {f.encode_name: strategy(f.type, depth + 1) for f in t.fields}
        return st.fixed_dictionaries({}, optional=fields)
    if isinstance(t, mi.UnionType):
        return st.one_of([strategy(x, depth) for x in t.types])
    if isinstance(t, mi.ListType):
        return st.lists(strategy(t.item_type, depth), max_size=3)
    if isinstance(t, mi.DictType):
        return st.dictionaries(TEXT, strategy(t.value_type, depth), max_size=3)
    if isinstance(t, mi.StrType):
        return TEXT
    if isinstance(t, mi.IntType):
        return NUMBER
    if isinstance(t, mi.FloatType):
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(t, mi.BoolType):
        return st.booleans()
    if isinstance(t, mi.NoneType):
        return st.none()
    return st.none()  # datetimes and Any: leave unset


MODELS = [
    m.Pod,
    m.Node,
    m.PriorityClass,
    m.PodDisruptionBudget,
    m.Workload,
    m.PodGroup,
    m.CompositePodGroup,
    m.Job,
    v1alpha2.Workload,
    v1alpha2.PodGroup,
    dra.DeviceTaintRule,
]


@pytest.mark.parametrize("model", MODELS, ids=lambda t: f"{t.__module__.rsplit('.', 1)[-1]}.{t.__name__}")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_validation_never_raises(model: type[msgspec.Struct], data: st.DataObject) -> None:
    doc = data.draw(strategy(mi.type_info(model)))
    obj = msgspec.convert(doc, model)
    errors = validate_object(obj)
    assert all(isinstance(e, FieldError) and e.message for e in errors)
