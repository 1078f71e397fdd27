"""The structured-config schemas survive the trip to a job process.

The local launcher sends Hydra's config store to each job's process with cloudpickle. A
schema class pickled by value arrives without its dataclass fields, and a nested
optional node (``feedback.flips``) then refuses its own keys: the quickstart's
``confidence_noisy`` job failed that way. Every generated schema must pickle by name and
keep its fields.
"""

from __future__ import annotations

import dataclasses

import cloudpickle
import pytest
from hydra.core.config_store import ConfigStore

import experiments.schema as schema


def generated() -> list[type]:
    return [
        v
        for v in vars(schema).values()
        if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == schema.__name__
    ]


def test_every_group_schema_is_an_attribute_of_the_schema_module():
    names = {cls.__name__ for cls in generated()}
    for expected in ("FeedbackConf", "LabelFlipsConf", "SPRTGateConf", "SPRTGateCostGateConf"):
        assert expected in names


@pytest.mark.parametrize("cls", generated(), ids=lambda c: c.__name__)
def test_a_schema_pickles_by_name_with_its_fields(cls):
    back = cloudpickle.loads(cloudpickle.dumps(cls))
    assert back is cls
    assert [f.name for f in dataclasses.fields(back)] == [f.name for f in dataclasses.fields(cls)]


def test_the_config_store_keeps_the_nested_feedback_fields_through_pickle():
    store = cloudpickle.loads(cloudpickle.dumps(ConfigStore.instance().repo))
    node = store["feedback"]["feedback_schema.yaml"].node
    flips = node._get_node("flips")._metadata.ref_type
    assert [f.name for f in dataclasses.fields(flips)] == ["false_negative", "false_positive"]
