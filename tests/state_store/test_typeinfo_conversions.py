"""TypeInformation's PyFlink conversion calls: records stay Python objects here, so nothing
converts (as PyFlink's base TypeInformation); there is no Java type behind a type."""

from __future__ import annotations

import datetime

import pytest
from pyspark_datastream import GraphBuildError, Row, Types


@pytest.mark.parametrize("type_info,value", [
    (Types.INT(), 3),
    (Types.ROW_NAMED(["a"], [Types.STRING()]), Row(a="x")),
    (Types.SQL_DATE(), datetime.date(2024, 1, 2)),
])
def test_values_pass_through_unconverted(type_info, value):
    assert type_info.need_conversion() is False
    assert type_info.to_internal_type(value) is value
    assert type_info.from_internal_type(value) is value


def test_there_is_no_java_type():
    with pytest.raises(GraphBuildError, match="get_java_type_info"):
        Types.LONG().get_java_type_info()
