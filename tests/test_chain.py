"""apply-chain against the workflow's own preprocessing of a small toyworld corpus.

The fixture runs the commands of rules/preprocess.smk (normalize | tokenize, clean, truecase train and
apply, joint BPE with the ISO 9 transliteration for en-ru, bpe apply) through the real sacremoses and
subword-nmt code; apply-chain on the raw valid/test text must then give the workflow's files byte
for byte, and the gold tokens run pre-tokenised must give the same lines.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from sacremoses import MosesTokenizer

from nmtvariants.cli import main as cli_main
from nmtvariants.corpora.toyworld import generate
from nmtvariants.errors import InputError, MissingResourceError
from nmtvariants.fileio import write_lines
from nmtvariants.syntax.conllu import read_conllu
from nmtvariants.text.chain import ChainSettings, TrainedChain, load_settings
from nmtvariants.text.subword_map import HYPHEN, words

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = load_settings(ROOT / "config.yaml", "toyworld")
MERGES = 300


def _run(*args: str) -> None:
    assert cli_main(list(args)) == 0, args


def workflow_preprocess(data: Path, pair: str, settings: ChainSettings) -> Path:
    """rules/preprocess.smk for one pair, command by command (data = data/<corpus>)."""
    src, tgt = pair.split("-")
    flags = ["-a"] if settings.aggressive_hyphen else []
    flags += [] if settings.escape else ["--no-escape"]
    for split in ("train", "valid", "test"):
        for lang in (src, tgt):
            tok = data / "tok" / f"{split}.{lang}"
            if not tok.exists():
                norm = data / "norm" / f"{split}.{lang}"
                norm.parent.mkdir(parents=True, exist_ok=True)
                _run("normalize", "-l", lang, str(data / "raw" / f"{split}.{lang}"), "-o", str(norm))
                _run("tokenize", "-l", lang, *flags, str(norm), "-o", str(tok))
    folder = data / pair
    clean = folder / "clean"
    _run(
        "clean",
        "--src-in",
        str(data / "tok" / f"train.{src}"),
        "--tgt-in",
        str(data / "tok" / f"train.{tgt}"),
        "--src-out",
        str(clean / f"train.{src}"),
        "--tgt-out",
        str(clean / f"train.{tgt}"),
        "--min",
        "1",
        "--max",
        "80",
        "--ratio",
        "9",
        "--report",
        str(clean / "drops.json"),
    )
    translit = [lang for lang in settings.translit if lang in (src, tgt)]
    for lang in (src, tgt):
        model = folder / "truecase" / f"model.{lang}"
        _run("truecase", "train", "--model", str(model), str(clean / f"train.{lang}"))
        for split in ("train", "valid", "test"):
            text = clean / f"train.{lang}" if split == "train" else data / "tok" / f"{split}.{lang}"
            _run(
                "truecase",
                "apply",
                "--model",
                str(model),
                "-o",
                str(folder / "tc" / f"{split}.{lang}"),
                str(text),
            )
    codes = folder / "bpe" / "codes"
    _run(
        "bpe",
        "learn",
        "--input",
        f"{src}={folder / 'tc' / f'train.{src}'}",
        "--input",
        f"{tgt}={folder / 'tc' / f'train.{tgt}'}",
        "-s",
        str(MERGES),
        "--codes",
        str(codes),
        "--vocab-dir",
        str(folder / "bpe"),
        *(f"--translit={lang}" for lang in translit),
    )
    for lang in (src, tgt):
        lang_codes = codes if not translit or lang in translit else Path(f"{codes}.latin")
        for split in ("valid", "test"):
            _run(
                "bpe",
                "apply",
                "--codes",
                str(lang_codes),
                "--vocab",
                str(folder / "bpe" / f"vocab.{lang}"),
                "--threshold",
                str(settings.threshold),
                "-o",
                str(folder / "bpe" / f"{split}.{lang}"),
                str(folder / "tc" / f"{split}.{lang}"),
            )
    return folder


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("chain") / "toyworld"
    generate(data, seed=5, train=400, valid=30, test=30, image_size=8, contrawsd=5)
    for pair in ("en-de", "en-ru"):
        workflow_preprocess(data, pair, SETTINGS)
    return data


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_settings_defaults_are_the_schema_defaults() -> None:
    schema = yaml.safe_load((ROOT / "schemas/config.schema.yaml").read_text(encoding="utf-8"))
    props = schema["$defs"]["preprocess"]["properties"]
    defaults = ChainSettings.from_preprocess({})
    assert defaults.lowercase == props["lowercase"]["default"]
    assert defaults.aggressive_hyphen == props["aggressive_hyphen"]["default"]
    assert defaults.escape == props["escape"]["default"]
    assert defaults.truecase == props["truecase"]["default"]
    assert defaults.threshold == props["bpe"]["properties"]["threshold"]["default"]
    assert list(defaults.translit) == props["bpe"]["properties"]["translit"]["default"]
    assert SETTINGS.aggressive_hyphen and SETTINGS.translit == ("ru",)


@pytest.mark.parametrize("pair", ["en-de", "en-ru"])
def test_apply_chain_reproduces_the_workflow_files(toy: Path, pair: str, tmp_path: Path) -> None:
    for lang in pair.split("-"):
        for split in ("valid", "test"):
            out = tmp_path / f"{split}.{lang}"
            _run(
                "apply-chain",
                "--corpus-dir",
                str(toy / pair),
                "-l",
                lang,
                "--config",
                str(ROOT / "config.yaml"),
                str(toy / "raw" / f"{split}.{lang}"),
                "-o",
                str(out),
            )
            expected = (toy / pair / "bpe" / f"{split}.{lang}").read_bytes()
            assert out.read_bytes() == expected, (pair, split, lang)
    assert any("@@" in line for line in _lines(toy / pair / "bpe" / "test.en"))


def test_pretokenized_gold_tokens_give_the_same_lines_and_counts(toy: Path, tmp_path: Path) -> None:
    """Given tokens run pre-tokenised equal the raw text's chain output, word for word: the English
    CoNLL-U forms, and sacremoses' German tokens without hyphen splitting (compounds like Holz-Ball)."""
    sentences = read_conllu(toy / "raw/test.en.conllu")
    moses = MosesTokenizer("de")
    given = {
        "en": [s.forms for s in sentences],
        "de": [moses.tokenize(line, escape=False) for line in _lines(toy / "raw/test.de")],
    }
    hyphenated = 0
    for lang, tokens in given.items():
        gold = tmp_path / f"gold.{lang}"
        gold.write_text("".join(" ".join(t) + "\n" for t in tokens), encoding="utf-8")  # type: ignore[arg-type]
        out = tmp_path / f"gold.bpe.{lang}"
        _run(
            "apply-chain",
            "--corpus-dir",
            str(toy / "en-de"),
            "-l",
            lang,
            "--config",
            str(ROOT / "config.yaml"),
            "--pretokenized",
            str(gold),
            "-o",
            str(out),
        )
        lines = _lines(out)
        assert lines == _lines(toy / f"en-de/bpe/test.{lang}")
        for line, words_given in zip(lines, tokens, strict=True):
            assert len(words(line.split(), hyphen=HYPHEN)) == len(words_given)  # type: ignore[arg-type]
            hyphenated += HYPHEN in line
    assert hyphenated, "no hyphenated word in the sample: the -a path is untested"


def test_pretokenized_text_is_not_resplit(toy: Path) -> None:
    chain = TrainedChain.from_corpus_dir(toy / "en-de", "en", SETTINGS)
    assert chain.tokenize("don't stop", pretokenized=True) == "don't stop"
    assert chain.tokenize("don't stop") == "don 't stop"
    assert chain.tokenize("dark-blue ball", pretokenized=True) == "dark @-@ blue ball"
    assert list(chain.apply(["dark-blue ball ."], "x", pretokenized=True))


def test_a_count_mismatch_names_the_file_and_line(
    toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chain = TrainedChain.from_corpus_dir(toy / "en-de", "en", SETTINGS)
    # per-token normalisation puts a space before "(": one given token becomes two words
    with pytest.raises(
        InputError, match=r"gold\.txt:2: the chain gives 3 words but the line has 2 given tokens"
    ):
        list(chain.apply(["the ball", "x(y ."], "gold.txt", pretokenized=True))
    bad = tmp_path / "bad.en"
    bad.write_text("the ball\nx(y .\n", encoding="utf-8")
    code = cli_main(
        [
            "apply-chain",
            "--corpus-dir",
            str(toy / "en-de"),
            "-l",
            "en",
            "--config",
            str(ROOT / "config.yaml"),
            "--pretokenized",
            str(bad),
            "-o",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2 and f"{bad}:2:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_missing_files_and_unknown_corpus_are_clean_errors(toy: Path, tmp_path: Path) -> None:
    assert (
        cli_main(
            [
                "apply-chain",
                "--corpus-dir",
                str(tmp_path / "x" / "en-de"),
                "-l",
                "en",
                "--config",
                str(ROOT / "config.yaml"),
                "--corpus",
                "toyworld",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert (
        cli_main(
            [
                "apply-chain",
                "--corpus-dir",
                str(toy / "en-de"),
                "-l",
                "fr",
                "--config",
                str(ROOT / "config.yaml"),
                str(tmp_path),
            ]
        )
        == 2
    )
    assert (
        cli_main(
            [
                "apply-chain",
                "--corpus-dir",
                str(toy / "en-de"),
                "-l",
                "en",
                "--corpus",
                "nope",
                "--config",
                str(ROOT / "config.yaml"),
                str(tmp_path),
            ]
        )
        == 2
    )


def test_a_corpus_without_truecasing_needs_no_model_and_keeps_the_case(toy: Path, tmp_path: Path) -> None:
    """`truecase: false`: the workflow's tc/ files are the tokenised text, so the chain replaying it
    is tokenise -> BPE, and a pair folder without a truecase model is complete."""
    folder = tmp_path / "toyworld" / "en-de"
    shutil.copytree(toy / "en-de", folder, ignore=shutil.ignore_patterns("truecase"))
    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    config["corpora"]["toyworld"]["preprocess"]["truecase"] = False
    (tmp_path / "plain.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    settings = load_settings(tmp_path / "plain.yaml", "toyworld")
    assert not settings.truecase
    with pytest.raises(MissingResourceError, match="truecase model not found"):
        TrainedChain.from_corpus_dir(folder, "en", SETTINGS)
    # rule bpe_apply on the tokenised test text (what rule truecase_apply leaves unchanged)
    expected = tmp_path / "expected.en"
    _run(
        "bpe",
        "apply",
        "--codes",
        str(folder / "bpe" / "codes"),
        "--vocab",
        str(folder / "bpe" / "vocab.en"),
        "--threshold",
        str(settings.threshold),
        "-o",
        str(expected),
        str(toy / "tok" / "test.en"),
    )
    out = tmp_path / "chain.en"
    config_args = ["--config", str(tmp_path / "plain.yaml"), "--corpus", "toyworld"]
    _run(
        "apply-chain",
        "--corpus-dir",
        str(folder),
        "-l",
        "en",
        *config_args,
        "-o",
        str(out),
        str(toy / "raw" / "test.en"),
    )
    assert _lines(out) == _lines(expected)
    assert _lines(out) != _lines(toy / "en-de" / "bpe" / "test.en")  # the truecased chain differs


@pytest.mark.parametrize("pair", ["en-de", "en-ru"])
def test_gold_annotations_line_up_with_the_workflow_bpe_files(toy: Path, pair: str) -> None:
    """The files the model reads (after -a and BPE): per line, as many words as gold tree words,
    gold alignment links within both sides' words, one target POS tag per target word."""
    tgt = pair.split("-")[1]
    for split in ("valid", "test"):
        source = [words(line.split()) for line in _lines(toy / pair / "bpe" / f"{split}.en")]
        target = [words(line.split()) for line in _lines(toy / pair / "bpe" / f"{split}.{tgt}")]
        trees = read_conllu(toy / "raw" / f"{split}.en.conllu")
        tags = [line.split() for line in _lines(toy / "raw" / f"{split}.{tgt}.pos")]
        aligns = _lines(toy / "raw" / f"{split}.en-{tgt}.align")
        for src, trg, tree, pos, links in zip(source, target, trees, tags, aligns, strict=True):
            assert len(src) == len(tree.words) and len(trg) == len(pos)
            pairs = [tuple(map(int, link.split("-"))) for link in links.split()]
            assert pairs and all(0 <= i < len(src) and 0 <= j < len(trg) for i, j in pairs)


def _roundtrip(toy: Path, pair: str, lang: str, out: Path, *flags: str, **files: Path) -> dict:
    """`nmtvariants roundtrip` as rule roundtrip runs it on the test split (``files`` replace one)."""
    paths = {
        "raw": toy / "raw" / f"test.{lang}",
        "tok": toy / "tok" / f"test.{lang}",
        "tc": toy / pair / "tc" / f"test.{lang}",
        "bpe": toy / pair / "bpe" / f"test.{lang}",
        **files,
    }
    _run("roundtrip", "-l", lang, *flags, *(f"--{k}={v}" for k, v in paths.items()), "--json", str(out))
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("pair", "lang"), [("en-de", "de"), ("en-de", "en"), ("en-ru", "ru")])
def test_roundtrip_measures_the_workflow_files(toy: Path, pair: str, lang: str, tmp_path: Path) -> None:
    """The report counts, line by line, what `postprocess` makes of the workflow's own BPE file
    against `normalize` of the raw line: both computed here by the commands the workflow runs."""
    report = _roundtrip(toy, pair, lang, tmp_path / "rt.json", "--truecased")
    _run("normalize", "-l", lang, str(toy / "raw" / f"test.{lang}"), "-o", str(tmp_path / "norm"))
    bpe = toy / pair / "bpe" / f"test.{lang}"
    _run("postprocess", "-l", lang, "--truecased", str(bpe), "-o", str(tmp_path / "post"))
    raw, norm, post = (
        _lines(p) for p in (toy / "raw" / f"test.{lang}", tmp_path / "norm", tmp_path / "post")
    )
    assert report["lines"] == len(raw) == 30
    assert report["inverse"]["identical"] == sum(a == b for a, b in zip(norm, post, strict=True))
    assert report["end_to_end"]["identical"] == sum(a == b for a, b in zip(raw, post, strict=True))
    assert report["files"]["bpe"] == str(bpe)
    assert report["bpe_lines_not_reversible"] == 0
    assert report["inverse"]["identical_fraction"] >= 0.9, report["inverse"]["classes"]


def test_roundtrip_attributes_a_change_in_a_stage_file_to_that_stage(toy: Path, tmp_path: Path) -> None:
    """Edit line 3 of the BPE file (a word replaced) and line 5 of the truecased file (lower-cased):
    the report must see the files the workflow wrote, not a chain of its own."""
    base = _roundtrip(toy, "en-de", "de", tmp_path / "base.json", "--truecased")
    assert base["inverse"]["identical"] == base["lines"]
    bpe = _lines(toy / "en-de" / "bpe" / "test.de")
    bpe[2] = bpe[2].replace(bpe[2].split()[-2], "XYZ", 1)
    write_lines(tmp_path / "bpe", bpe)
    edited = _roundtrip(toy, "en-de", "de", tmp_path / "bpe.json", "--truecased", bpe=tmp_path / "bpe")
    assert edited["inverse"]["mismatches"] == 1 and edited["inverse"]["stages"] == {"bpe": 1}
    assert next(iter(edited["inverse"]["examples"].values()))[0]["line"] == 3
    assert edited["bpe_lines_not_reversible"] == 1  # the BPE file no longer segments the truecased one

    tc = _lines(toy / "en-de" / "tc" / "test.de")
    tc[4] = tc[4].lower()
    write_lines(tmp_path / "tc", tc)
    bpe = _lines(toy / "en-de" / "bpe" / "test.de")
    bpe[4] = bpe[4].lower()
    write_lines(tmp_path / "bpe5", bpe)
    edited = _roundtrip(
        toy, "en-de", "de", tmp_path / "tc.json", "--truecased", tc=tmp_path / "tc", bpe=tmp_path / "bpe5"
    )
    assert edited["inverse"]["stages"] == {"truecase": 1}
    assert edited["inverse"]["examples"]["case"][0]["line"] == 5


def test_roundtrip_follows_the_chain_settings(toy: Path, tmp_path: Path) -> None:
    """Without --truecased (``truecase: false``) nothing detruecases, as in rule postprocess: lines
    whose first word the truecaser lower-cased stay lower-case; --lowercase compares lower-case."""
    truecased = _roundtrip(toy, "en-de", "de", tmp_path / "a.json", "--truecased")
    plain = _roundtrip(toy, "en-de", "de", tmp_path / "b.json")
    lowercase = _roundtrip(toy, "en-de", "de", tmp_path / "c.json", "--lowercase")
    assert plain["settings"] == {"lowercase": False, "detruecase": False, "bpe": True}
    raw, bpe = toy / "raw" / "test.de", toy / "en-de" / "bpe" / "test.de"
    _run("normalize", "-l", "de", str(raw), "-o", str(tmp_path / "norm"))
    _run("normalize", "-l", "de", "--lowercase", str(raw), "-o", str(tmp_path / "norm.lc"))
    _run("postprocess", "-l", "de", str(bpe), "-o", str(tmp_path / "post"))
    post = _lines(tmp_path / "post")

    def same(reference: str) -> int:
        return sum(a == b for a, b in zip(_lines(tmp_path / reference), post, strict=True))

    assert plain["inverse"]["identical"] == same("norm") < truecased["inverse"]["identical"]
    assert plain["inverse"]["stages"] == {"truecase": plain["inverse"]["mismatches"]}
    assert lowercase["inverse"]["identical"] == same("norm.lc") < plain["inverse"]["identical"]


def test_roundtrip_files_of_different_lengths_are_an_input_error(
    toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_lines(tmp_path / "short", _lines(toy / "en-de" / "bpe" / "test.de")[:-1])
    args = [
        "roundtrip",
        "-l",
        "de",
        "--raw",
        str(toy / "raw" / "test.de"),
        "--tok",
        str(toy / "tok" / "test.de"),
    ]
    args += ["--tc", str(toy / "en-de" / "tc" / "test.de"), "--bpe", str(tmp_path / "short")]
    assert cli_main([*args, "--json", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'short'} has 29" in err and "rerun the preprocessing" in err
    assert not (tmp_path / "x.json").exists()
