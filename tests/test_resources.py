"""The start-up check of external resources: one test per resource, each hidden by pointing its config
path at an empty folder, and a real workflow run that stops before its first job with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toy_workflow import run_snakemake, workflow_copy
from workflow_configs import default_config_with

from nmtvariants.evaluation.meteor_ribes import WORDNET_FILES
from nmtvariants.resources import missing_resources, missing_resources_message

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def no_prepared_wordnet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A user's prepared WordNet copy (~/.cache) must not stand in for the folder under test."""
    monkeypatch.setenv("NMTVARIANTS_NLTK_DATA", str(tmp_path / "nltk_data"))


def fake_wordnet(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in WORDNET_FILES:
        (folder / name).write_text("", encoding="utf-8")
    return folder


def complete(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    """The default config with every resource it reads present (a fake WordNet folder)."""
    return default_config_with({"meteor": {"wordnet": str(fake_wordnet(tmp_path / "wordnet"))}, **overrides})


def multi30k_images(tmp_path: Path, weights: str, images: Path) -> dict[str, Any]:
    config = complete(tmp_path, image_features={"weights": weights, "images": str(images)})
    config["corpora"]["multi30k"] = {"source": "multi30k", "pairs": ["en-de"]}
    config["experiments"]["libovicky2018_mmt"]["corpus"] = "multi30k"
    return config


def test_nothing_missing_when_every_resource_is_there(tmp_path: Path) -> None:
    assert missing_resources(complete(tmp_path)) == []
    assert missing_resources_message(complete(tmp_path)) is None


def test_wordnet_hidden(tmp_path: Path) -> None:
    config = default_config_with({"meteor": {"wordnet": str(tmp_path / "empty")}})
    (missing,) = missing_resources(config)
    assert missing.what == f"WordNet 3.0 files in {tmp_path / 'empty'} for METEOR (NLTK)"
    assert missing.needed_by == ("libovicky2018_mmt", "libovicky2018_multisource")
    assert "apt-get install wordnet-base wordnet-sense-index" in missing.fix


def test_wordnet_is_not_needed_without_meteor(tmp_path: Path) -> None:
    config = default_config_with({"meteor": {"wordnet": str(tmp_path / "empty")}})
    config["experiments"] = {"baseline": config["experiments"]["baseline"]}
    assert missing_resources(config) == []


def test_meteor_15_release_hidden_replaces_the_wordnet_check(tmp_path: Path) -> None:
    config = default_config_with({"meteor": {"home": str(tmp_path / "meteor-1.5"), "wordnet": "/nowhere"}})
    (missing,) = missing_resources(config)
    assert missing.what.startswith("Meteor 1.5 release (")
    assert str(tmp_path / "meteor-1.5" / "meteor-1.5.jar") in missing.what
    assert str(tmp_path / "meteor-1.5" / "data" / "paraphrase-de.gz") in missing.what
    assert "meteor.home" in missing.fix


def test_imagenet_weights_hidden(tmp_path: Path) -> None:
    weights = tmp_path / "empty" / "resnet50.pth"
    (missing,) = missing_resources(complete(tmp_path, image_features={"weights": str(weights)}))
    assert missing.what == f"ImageNet ResNet weights {weights} (image_features.weights)"
    assert missing.needed_by == ("libovicky2018_mmt",)  # the multi-source experiment reads no images


def test_random_weights_and_toyworld_images_need_nothing(tmp_path: Path) -> None:
    config = complete(tmp_path, image_features={"weights": "random", "images": str(tmp_path / "empty")})
    assert missing_resources(config) == []


def test_corpus_images_hidden(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (missing,) = missing_resources(multi30k_images(tmp_path, "random", tmp_path / "empty"))
    assert missing.what == f"the corpus images in {tmp_path / 'empty'} (image_features.images)"
    assert "Flickr30k" in missing.fix


def test_stanza_models_hidden(tmp_path: Path) -> None:
    config = complete(tmp_path)
    config["corpora"]["wmt18_entr"] = {"source": "wmt18", "pairs": ["tr-en"]}
    study = config["experiments"]["bugliarello2020"]
    config["experiments"]["bugliarello2020"] = {**study, "corpus": "wmt18_entr", "pairs": ["tr-en"]}
    config["studies"]["bugliarello2020"]["parser_models"] = str(tmp_path / "empty")
    (missing,) = missing_resources(config)
    expected = [tmp_path / "empty" / "tr_tagger.pt", tmp_path / "empty" / "tr_parser.pt"]
    assert missing.what == f"Stanza models {', '.join(map(str, expected))}"
    assert missing.needed_by == ("bugliarello2020",)
    # English is trained by the workflow on UD EWT: never a missing resource
    config["experiments"]["bugliarello2020"]["pairs"] = ["en-de"]
    assert missing_resources(config) == []


def test_mirror_hidden(tmp_path: Path) -> None:
    config = complete(tmp_path, mirror=str(tmp_path / "no-mirror"))
    assert missing_resources(config) == []  # toyworld is generated, nothing is downloaded
    config["corpora"]["multi30k"] = {"source": "multi30k", "pairs": ["en-de"]}
    (missing,) = missing_resources(config)
    assert missing.what == f"the mirror folder {tmp_path / 'no-mirror'}"
    assert missing.needed_by == ("corpora.multi30k",)
    assert missing_resources({**config, "mirror": "https://example.org/mirror"}) == []


def test_every_missing_resource_goes_into_one_line(tmp_path: Path) -> None:
    config = complete(tmp_path, image_features={"weights": str(tmp_path / "w.pth")})
    config["meteor"]["wordnet"] = str(tmp_path / "empty")
    message = missing_resources_message(config)
    assert message is not None and "\n" not in message
    assert message.startswith("missing external resources: WordNet")
    assert "; ImageNet ResNet weights" in message


def test_the_workflow_stops_before_its_first_job(tmp_path: Path) -> None:
    """A real run with WordNet hidden: exit 2, the last line names it, and no job ran (no data/)."""
    root = tmp_path / "workflow"
    root.mkdir()
    workflow_copy(root, default_config_with({"meteor": {"wordnet": str(tmp_path / "empty")}}))
    result = run_snakemake(root, timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("nmtvariants: missing external resources: WordNet 3.0 files in")
    assert "Traceback" not in result.stderr
    assert not (root / "data").exists() and not (root / "results").exists()


def test_the_command_checks_a_config_file_in_seconds(tmp_path: Path) -> None:
    """`make demo` runs this before Snakemake builds its DAG: one line, exit 2."""
    import subprocess
    import sys

    import yaml

    config = default_config_with({"meteor": {"wordnet": str(tmp_path / "empty")}})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [sys.executable, "-m", "nmtvariants", "check-resources", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2
    assert result.stderr.startswith("nmtvariants check-resources: error: missing external resources: WordNet")
    assert len(result.stderr.strip().splitlines()) == 1
    path.write_text(yaml.safe_dump(complete(tmp_path)), encoding="utf-8")
    assert subprocess.run(command, capture_output=True, text=True, cwd=REPO).returncode == 0
