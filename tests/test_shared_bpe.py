"""One joint BPE shared by a pair and named further languages (``preprocess.bpe.shared_with``): the merges
are learned on every language, each further language gets its own vocabulary filter, its units join the
network vocabulary, and the workflow plans exactly that (real subword-nmt, real Snakemake dry-runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from test_bpe import subword_nmt
from workflow_configs import default_config_with, dry_run_jobs, snakemake, write_config

from nmtvariants.cli import main
from nmtvariants.config import shared_bpe_languages
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError
from nmtvariants.text.translit import iso9_to_latin

FRENCH_WORD = "pamplemousse"  # a word only the further language has


def toy_corpus(folder: Path) -> dict[str, Path]:
    """Tiny line-parallel EN, DE and FR training text; FR repeats a word the pair never has."""
    lines = {
        "en": ["the dog sees the cat", "a red ball", "the cat eats"] * 20,
        "de": ["der Hund sieht die Katze", "ein roter Ball", "die Katze frisst"] * 20,
        "fr": [f"le chien voit le {FRENCH_WORD}", f"un {FRENCH_WORD} rouge", "le chat mange"] * 20,
    }
    files = {}
    for lang, text in lines.items():
        files[lang] = folder / f"train.{lang}"
        files[lang].write_text("\n".join(text) + "\n", encoding="utf-8")
    return files


def learn(files: dict[str, Path], folder: Path, *, shared: bool) -> None:
    argv = ["bpe", "learn", "--input", f"en={files['en']}", "--input", f"de={files['de']}", "-s", "60"]
    argv += ["--codes", str(folder / "codes"), "--vocab-dir", str(folder)]
    if shared:
        argv += ["--shared", f"fr={files['fr']}"]
    folder.mkdir()
    assert main(argv) == 0


def segment(folder: Path, text: Path, vocab: Path, out: Path) -> list[list[str]]:
    argv = ["bpe", "apply", "--codes", str(folder / "codes"), "--vocab", str(vocab), "--threshold", "5"]
    assert main([*argv, "-o", str(out), str(text)]) == 0
    return [line.split() for line in out.read_text(encoding="utf-8").splitlines()]


def test_shared_codes_merge_a_frequent_french_only_word_that_pair_codes_cut_into_characters(tmp_path):
    files = toy_corpus(tmp_path)
    learn(files, tmp_path / "pair", shared=False)
    learn(files, tmp_path / "shared", shared=True)
    assert not (tmp_path / "shared" / "vocab.fr").exists()  # `bpe count` writes it (its own job)
    assert main(["bpe", "count", "--codes", str(tmp_path / "shared" / "codes"), "-o",
                 str(tmp_path / "shared" / "vocab.fr"), str(files["fr"])]) == 0  # fmt: skip
    shared = segment(tmp_path / "shared", files["fr"], tmp_path / "shared" / "vocab.fr", tmp_path / "s.fr")
    assert shared[1] == ["un", FRENCH_WORD, "rouge"]
    # the pair's codes never saw French: the word stays in pieces (the old path's input), and so
    # does "rouge" (the pair's "roter" shares only "ro")
    with_pair = segment(tmp_path / "pair", files["fr"], tmp_path / "pair" / "vocab.en", tmp_path / "p.fr")
    assert len(with_pair[1]) > 6 and "".join(with_pair[1]).replace("@@", "") == f"un{FRENCH_WORD}rouge"


def test_shared_learning_equals_subword_nmt_on_all_three_files(tmp_path):
    """`--shared fr=F` learns the merges of subword-nmt's own `learn-joint-bpe-and-vocab --input EN DE
    FR`, and `bpe count` writes the vocab.fr that subword-nmt writes there (byte for byte)."""
    files = toy_corpus(tmp_path)
    learn(files, tmp_path / "ours", shared=True)
    ours = tmp_path / "ours"
    assert main(["bpe", "count", "--codes", str(ours / "codes"), "-o", str(ours / "vocab.fr"),
                 str(files["fr"])]) == 0  # fmt: skip
    reference = tmp_path / "reference"
    reference.mkdir()
    vocabs = [str(reference / f"vocab.{lang}") for lang in ("en", "de", "fr")]
    subword_nmt(
        "learn-joint-bpe-and-vocab", "--input", str(files["en"]), str(files["de"]), str(files["fr"]),
        "-s", "60", "-o", str(reference / "codes"), "--write-vocabulary", *vocabs,
    )  # fmt: skip
    for name in ("codes", "vocab.en", "vocab.de", "vocab.fr"):
        assert (ours / name).read_bytes() == (reference / name).read_bytes(), name


def test_a_further_language_of_a_transliterated_pair_is_counted_with_the_latin_merges(tmp_path):
    """EN-RU learns on ISO 9 Russian (Emelin et al.); a further FR is learned on as it is, segmented with
    the Latin merges (`codes.latin`, as the pair's English), and counted as subword-nmt counts it when
    learning on EN, Latin RU and FR."""
    files = toy_corpus(tmp_path)
    files["ru"] = tmp_path / "train.ru"
    files["ru"].write_text("собака видит кошку\nкрасный мяч\nкошка ест\n" * 20, encoding="utf-8")
    ours = tmp_path / "ours"
    argv = ["bpe", "learn", "--input", f"en={files['en']}", "--input", f"ru={files['ru']}"]
    argv += ["--translit", "ru", "--shared", f"fr={files['fr']}", "-s", "60"]
    argv += ["--codes", str(ours / "codes"), "--vocab-dir", str(ours)]
    assert main(argv) == 0
    assert not (ours / "vocab.fr").exists()
    assert main(["bpe", "count", "--codes", str(ours / "codes.latin"), "-o", str(ours / "vocab.fr"),
                 str(files["fr"])]) == 0  # fmt: skip
    latin = tmp_path / "train.ru.latin"
    latin.write_text(
        "".join(iso9_to_latin(line) + "\n" for line in files["ru"].read_text(encoding="utf-8").splitlines()),
        encoding="utf-8",
    )
    reference = tmp_path / "reference"
    reference.mkdir()
    vocabs = [str(reference / f"vocab.{lang}") for lang in ("en", "ru", "fr")]
    subword_nmt(
        "learn-joint-bpe-and-vocab", "--input", str(files["en"]), str(latin), str(files["fr"]),
        "-s", "60", "-o", str(reference / "codes"), "--write-vocabulary", *vocabs,
    )  # fmt: skip
    assert (ours / "codes.latin").read_bytes() == (reference / "codes").read_bytes()
    assert (ours / "vocab.fr").read_bytes() == (reference / "vocab.fr").read_bytes()


def test_network_vocabulary_holds_every_unit_of_the_further_language(tmp_path):
    files = toy_corpus(tmp_path)
    folder = tmp_path / "shared"
    learn(files, folder, shared=True)
    assert main(["bpe", "count", "--codes", str(folder / "codes"), "-o", str(folder / "vocab.fr"),
                 str(files["fr"])]) == 0  # fmt: skip
    segmented = {}
    for lang in ("en", "de", "fr"):
        segmented[lang] = tmp_path / f"bpe.{lang}"
        segment(folder, files[lang], folder / f"vocab.{lang}", segmented[lang])
    assert main(["vocab", *map(str, segmented.values()), "-o", str(tmp_path / "vocab.txt")]) == 0
    vocab = Vocabulary.load(tmp_path / "vocab.txt")
    french = set(segmented["fr"].read_text(encoding="utf-8").split())
    assert FRENCH_WORD in french and french <= set(vocab.itos)


def test_follow_clean_keeps_the_lines_the_pair_kept(tmp_path):
    text = tmp_path / "train.fr"
    text.write_text("".join(f"ligne {i}\n" for i in range(1, 8)), encoding="utf-8")
    kept = tmp_path / "train.kept"
    kept.write_text("1\n3\n4\n7\n", encoding="utf-8")
    out = tmp_path / "clean.fr"
    assert main(["follow-clean", "--kept", str(kept), "-o", str(out), str(text)]) == 0
    lines = text.read_text(encoding="utf-8").splitlines()
    expected = [lines[int(n) - 1] for n in kept.read_text(encoding="utf-8").split()]  # a naive lookup
    assert out.read_text(encoding="utf-8").splitlines() == expected


def test_follow_clean_of_a_shorter_file_names_it(tmp_path, capsys):
    text = tmp_path / "train.fr"
    text.write_text("a\nb\n", encoding="utf-8")
    kept = tmp_path / "train.kept"
    kept.write_text("1\n3\n", encoding="utf-8")
    assert main(["follow-clean", "--kept", str(kept), "-o", str(tmp_path / "o"), str(text)]) == 2
    assert f"{text}: has 2 lines, but line 3 was kept" in capsys.readouterr().err


# --- the settings ---------------------------------------------------------------------------------------


def corpus(shared_with: dict) -> dict:
    return {
        "pairs": ["en-de", "en-cs"],
        "preprocess": {"bpe": {"merges": 10, "shared_with": shared_with}},
    }


def test_shared_languages_per_pair():
    got = shared_bpe_languages({"m": corpus({"en-cs": ["de", "fr"]}), "t": corpus({})})
    assert got == {("m", "en-cs"): ["de", "fr"]}


@pytest.mark.parametrize(
    ("shared_with", "message"),
    [
        ({"en-fr": ["de"]}, "corpora.m.preprocess.bpe.shared_with.en-fr: not among the corpus's pairs"),
        ({"en-cs": ["cs", "fr"]}, "shared_with.en-cs: cs is a language of the pair itself"),
    ],
)
def test_bad_shared_languages_name_the_key(shared_with, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        shared_bpe_languages({"m": corpus(shared_with)})


# --- the workflow ---------------------------------------------------------------------------------------


def plan(*args: str) -> list[dict[str, str]]:
    result = snakemake("-n", "-p", "--forceall", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return dry_run_jobs(result.stdout)


def test_default_workflow_learns_en_de_bpe_on_french_too():
    """config.yaml: toyworld's en-de BPE is shared with fr (the two-source runs' further language): the
    French training text follows en-de's chain into bpe_learn and the network vocabulary; en-ru is
    untouched."""
    jobs = plan("data/toyworld/en-de/bpe/vocab.txt", "data/toyworld/en-ru/bpe/vocab.txt")
    learn_jobs = {job["output"].split("/")[2]: job for job in jobs if job["rule"] == "bpe_learn"}
    assert "--shared fr=data/toyworld/en-de/tc/train.fr" in learn_jobs["en-de"]["shell"]
    assert "--shared" not in learn_jobs["en-ru"]["shell"]
    (network,) = [job for job in jobs if job["rule"] == "network_vocab" and "/en-de/" in job["output"]]
    assert network["input"].split(", ") == [
        f"data/toyworld/en-de/bpe/train.{lang}" for lang in ("en", "de", "fr")
    ]
    by_output = {job["output"]: job for job in jobs}
    assert by_output["data/toyworld/en-de/clean/train.fr"]["rule"] == "clean_shared"
    assert (
        "--kept data/toyworld/en-de/clean/train.kept"
        in by_output["data/toyworld/en-de/clean/train.fr"]["shell"]
    )
    assert by_output["data/toyworld/en-de/truecase/model.fr"]["rule"] == "truecase_train"  # its own truecaser
    assert by_output["data/toyworld/en-de/bpe/vocab.fr"]["rule"] == "bpe_vocab_shared"
    assert by_output["data/toyworld/en-de/bpe/train.fr"]["input"].endswith("data/toyworld/en-de/bpe/vocab.fr")


def test_a_further_source_without_shared_bpe_stops_at_start_up(tmp_path):
    settings = default_config_with({})
    del settings["corpora"]["toyworld"]["preprocess"]["bpe"]["shared_with"]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    result = snakemake("-n", "--configfile", str(config))
    output = result.stdout + result.stderr
    # one line, as the CLI reports a refused input, and no frames of the study's rules file
    assert result.returncode == 2 and "Traceback" not in output and 'File "' not in output, output
    assert re.search(
        r"experiments\.libovicky2018_multisource\.inputs\.\w+\.sources: src_fr needs the BPE of en-de "
        r"learned on fr too; add `shared_with: \{en-de: \[fr\]\}`",
        output,
    ), output


def test_a_shared_pair_outside_the_corpus_stops_at_start_up(tmp_path):
    config = write_config(
        tmp_path / "config.yaml",
        {"corpora": {"toyworld": {"preprocess": {"bpe": {"shared_with": {"en-fr": ["de"]}}}}}},
    )
    result = snakemake("-n", "--configfile", str(config))
    assert result.returncode != 0
    assert "corpora.toyworld.preprocess.bpe.shared_with.en-fr: not among the corpus's pairs" in (
        result.stdout + result.stderr
    )
