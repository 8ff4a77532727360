"""The one reader of ``hf:`` specs, shared by the evaluator's adapter and the trainers."""

from __future__ import annotations

import json

import pytest

from colbench.errors import ConfigError
from colbench.models.hf_spec import HFSource, locate_weights, parse_hf_spec


def _full_model(path):
    path.mkdir()
    (path / "config.json").write_text("{}")
    return path


def _adapter(path, base="org/base-model"):
    path.mkdir()
    (path / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base}))
    return path


def test_a_hub_id_is_kept_and_options_pass_through():
    source = parse_hf_spec("hf:org/model?dtype=float32&temperature=0.5")
    assert source == HFSource(spec="hf:org/model?dtype=float32&temperature=0.5",
                              base="org/model", adapter=None,
                              options={"dtype": "float32", "temperature": "0.5"})
    assert not source.is_local


def test_an_adapter_only_directory_stands_for_its_base_with_the_adapter(tmp_path):
    adapter = _adapter(tmp_path / "lora", base="org/base-model")
    source = parse_hf_spec(f"hf:{adapter}")
    assert (source.base, source.adapter) == ("org/base-model", str(adapter))


def test_an_explicit_adapter_is_checked_and_kept(tmp_path):
    model = _full_model(tmp_path / "model")
    adapter = _adapter(tmp_path / "lora")
    assert locate_weights(str(model), str(adapter)) == (str(model), str(adapter))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="has no adapter_config.json"):
        locate_weights(str(model), str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="adapter path .* does not exist"):
        locate_weights(str(model), str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="is itself a PEFT adapter"):
        locate_weights(str(adapter), str(adapter))


@pytest.mark.parametrize("spec, needle", [
    ("openai:gpt-4o", "is not an hf: spec"),
    ("hf:", "path or hub id"),
    ("hf:./no/such/dir", "no model directory"),
])
def test_bad_specs_say_what_was_wrong(spec, needle):
    with pytest.raises(ConfigError, match=needle):
        parse_hf_spec(spec)


def test_an_adapter_that_names_no_base_is_refused_with_the_callers_label(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "adapter_config.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"^model spec 'x': .*names no base model"):
        parse_hf_spec(f"hf:{bad}", label="model spec 'x':")


def test_the_trainers_read_specs_through_the_core(tmp_path):
    from colbench.trainers import ModelSource, parse_model_spec

    adapter = _adapter(tmp_path / "lora", base="org/base-model")
    bare = parse_model_spec(str(adapter))
    assert isinstance(bare, ModelSource) and bare.spec == str(adapter)
    assert (bare.base, bare.adapter) == ("org/base-model", str(adapter))
    assert parse_model_spec(f"hf:{adapter}").base == "org/base-model"
    with pytest.raises(ConfigError, match="mean nothing to a trainer"):
        parse_model_spec(f"hf:{adapter}?temperature=1")
    with pytest.raises(ConfigError, match="no weights a trainer can update"):
        parse_model_spec("scripted:oracle")
