"""Joint BPE: byte-identical to the subword-nmt command-line tools, and Emelin et al.'s Russian procedure
reproduced with the real tools (`translit` from liblingua-translit-perl + `subword-nmt`)."""

from __future__ import annotations

import gzip
import multiprocessing
import pickle
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.cli import main
from nmtvariants.data.vocab import SPECIALS, Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.text.bpe import (
    BPESegmenter,
    apply_bpe,
    build_network_vocab,
    codes_path_for,
    learn_joint_bpe,
    undo_bpe,
)
from nmtvariants.text.translit import ISO9, ISO9_RULES, iso9_to_latin

SUBWORD_NMT = Path(sys.executable).with_name("subword-nmt")
CYRILLIC = re.compile("[А-яЁё]")


def subword_nmt(*args: str, stdin: Path | None = None, stdout: Path | None = None) -> None:
    """Run the real `subword-nmt` CLI of this interpreter's environment."""
    assert SUBWORD_NMT.exists(), f"subword-nmt CLI not found beside {sys.executable}"
    with (
        open(stdin, "rb") if stdin else open("/dev/null", "rb") as source,
        open(stdout, "wb") if stdout else open("/dev/null", "wb") as target,
    ):
        subprocess.run(
            [str(SUBWORD_NMT), *args], stdin=source, stdout=target, stderr=subprocess.DEVNULL, check=True
        )


def translit_cli(*args: str, stdin: Path, stdout: Path) -> None:
    tool = shutil.which("translit")
    assert tool, "Lingua::Translit CLI not found: apt-get install -y liblingua-translit-perl"
    with open(stdin, "rb") as source, open(stdout, "wb") as target:
        subprocess.run([tool, "-t", "ISO 9", *args], stdin=source, stdout=target, check=True)


@pytest.fixture(scope="module")
def multi30k(real_data: RealData, tmp_path_factory) -> dict[str, Path]:
    """2,000 real training lines of Multi30k EN and DE."""
    folder = tmp_path_factory.mktemp("multi30k")
    files = {}
    for lang in ("en", "de"):
        with gzip.open(
            real_data.file(f"multi30k/task1/raw/train.{lang}.gz"), "rt", encoding="utf-8"
        ) as handle:
            lines = [next(handle) for _ in range(2000)]
        files[lang] = folder / f"train.{lang}"
        files[lang].write_text("".join(lines), encoding="utf-8")
    return files


@pytest.fixture(scope="module")
def learned(multi30k, tmp_path_factory):
    folder = tmp_path_factory.mktemp("learned")
    result = learn_joint_bpe(multi30k, 1000, folder / "codes", folder / "vocab")
    return folder, result


def test_learn_is_byte_identical_to_subword_nmt_cli(multi30k, learned, tmp_path):
    folder, result = learned
    subword_nmt(
        "learn-joint-bpe-and-vocab",
        "--input",
        str(multi30k["en"]),
        str(multi30k["de"]),
        "-s",
        "1000",
        "-o",
        str(tmp_path / "codes"),
        "--write-vocabulary",
        str(tmp_path / "vocab.en"),
        str(tmp_path / "vocab.de"),
    )
    assert (folder / "codes").read_bytes() == (tmp_path / "codes").read_bytes()
    assert len((folder / "codes").read_text().splitlines()) == 1001
    for lang in ("en", "de"):
        assert result.codes[lang] == folder / "codes"
        assert result.vocab[lang].read_bytes() == (tmp_path / f"vocab.{lang}").read_bytes()
    assert not list((folder / "vocab").glob(".*")), "no temporary files left behind"


@pytest.mark.parametrize("threshold", [50, None])
def test_apply_is_byte_identical_to_subword_nmt_cli(multi30k, learned, tmp_path, threshold):
    folder, result = learned
    for lang in ("en", "de"):
        ours, theirs = tmp_path / f"ours.{lang}", tmp_path / f"theirs.{lang}"
        vocab_args = ["--vocabulary", str(result.vocab[lang]), "--vocabulary-threshold", "50"]
        subword_nmt(
            "apply-bpe",
            "-c",
            str(folder / "codes"),
            *(vocab_args if threshold else []),
            stdin=multi30k[lang],
            stdout=theirs,
        )
        count = apply_bpe(
            folder / "codes", result.vocab[lang] if threshold else None, threshold, multi30k[lang], ours
        )
        assert count == 2000
        assert ours.read_bytes() == theirs.read_bytes()
    # the threshold really changes something on 2,000 lines (rare German sub-words are split further)
    assert (tmp_path / "ours.de").read_text() != multi30k["de"].read_text()


def test_apply_keeps_empty_lines_and_undo_restores_tokens(learned, tmp_path):
    folder, result = learned
    lines = ["Zwei junge weiße Männer sind im Freien.", "", "  ", "Ein Mann schläft .", ""]
    source = tmp_path / "in.de"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert apply_bpe(folder / "codes", result.vocab["de"], 50, source, tmp_path / "out.de") == len(lines)
    out = (tmp_path / "out.de").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(out) == len(lines)
    assert out[1] == "" and out[4] == ""
    assert "@@ " in out[0]
    assert [undo_bpe(line) for line in out] == lines
    assert undo_bpe("a@@ b@@") == "ab"


def test_segmenter_is_picklable_and_runs_in_a_process_pool(multi30k, learned):
    folder, result = learned
    segmenter = BPESegmenter(folder / "codes", result.vocab["de"], 50)
    lines = multi30k["de"].read_text(encoding="utf-8").splitlines()[:400]
    sequential = [segmenter(line) for line in lines]
    assert len(pickle.dumps(segmenter)) < 1000, "only paths and settings are pickled"
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        parallel = pool.map(segmenter, lines, chunksize=50)
    assert parallel == sequential


def test_a_bounded_memo_changes_no_segmentation_and_stays_bounded(multi30k, learned, tmp_path):
    """subword-nmt's CLI (unbounded memo) is the reference; a memo of 3 words segments most words anew."""
    folder, result = learned
    lines = multi30k["de"].read_text(encoding="utf-8").splitlines()[:300]
    source = tmp_path / "in.de"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    subword_nmt(
        "apply-bpe", "-c", str(folder / "codes"), "--vocabulary", str(result.vocab["de"]),
        "--vocabulary-threshold", "50", stdin=source, stdout=tmp_path / "theirs",
    )  # fmt: skip
    segmenter = BPESegmenter(folder / "codes", result.vocab["de"], 50, memo_words=3)
    ours, sizes = [], []
    for line in lines:
        ours.append(segmenter(line))
        sizes.append(len(segmenter._bpe.cache))
    assert "".join(line + "\n" for line in ours) == (tmp_path / "theirs").read_text(encoding="utf-8")
    assert max(sizes) == 3
    types = {word for line in lines for word in line.split()}
    assert len(types) > 1000, "the bound was exercised"


def test_unicode_line_breaks_inside_a_line_match_the_cli(learned, tmp_path):
    """subword-nmt reads with `codecs`, which splits at U+2028 etc.; the output must still be identical."""
    folder, _ = learned
    source = tmp_path / "odd.en"
    source.write_text("A man\u2028sleeps in a boat.\nTwo dogs\x85run .\n", encoding="utf-8")
    subword_nmt("apply-bpe", "-c", str(folder / "codes"), stdin=source, stdout=tmp_path / "theirs")
    apply_bpe(folder / "codes", None, None, source, tmp_path / "ours")
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "theirs").read_bytes()


def test_build_network_vocab_counts_every_subword(learned, multi30k, tmp_path):
    _, result = learned
    segmented = []
    for lang in ("en", "de"):
        segmented.append(tmp_path / f"train.bpe.{lang}")
        apply_bpe(result.codes[lang], result.vocab[lang], 50, multi30k[lang], segmented[-1])
    vocabulary = build_network_vocab(segmented, tmp_path / "vocab.txt")
    counts = Counter(
        token for path in segmented for line in path.read_text().splitlines() for token in line.split()
    )
    assert vocabulary.itos[:4] == list(SPECIALS)
    assert set(vocabulary.itos[4:]) == set(counts)
    frequencies = [counts[token] for token in vocabulary.itos[4:]]
    assert frequencies == sorted(frequencies, reverse=True)
    assert Vocabulary.load(tmp_path / "vocab.txt").itos == vocabulary.itos


def test_bad_inputs_are_reported_with_file_and_line(learned, tmp_path):
    folder, _ = learned
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\nt h\nthis is bad\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"codes:3: not a BPE merge"):
        BPESegmenter(codes)("the")
    vocab = tmp_path / "vocab"
    vocab.write_text("the 12\nbroken\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"vocab:2: not a 'subword count' line"):
        BPESegmenter(folder / "codes", vocab, 50)("the")
    latin1 = tmp_path / "train.de"
    latin1.write_bytes("gut\nsch\xf6n\n".encode("latin-1"))
    english = tmp_path / "train.en"
    english.write_text("good\nnice\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"train.de:2: invalid UTF-8"):
        learn_joint_bpe({"en": english, "de": latin1}, 10, tmp_path / "c", tmp_path / "v")
    with pytest.raises(InputError, match="not found"):
        learn_joint_bpe({"en": tmp_path / "missing"}, 10, tmp_path / "c", tmp_path / "v")
    with pytest.raises(InputError, match="--translit"):
        learn_joint_bpe({"en": english}, 10, tmp_path / "c", tmp_path / "v", {"ru": ISO9})


@pytest.fixture(scope="module")
def flores_en_ru(real_data: RealData, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("flores")
    files = {"en": folder / "train.en", "ru": folder / "train.ru"}
    shutil.copy(real_data.file("flores200-devtest/eng_Latn.devtest"), files["en"])
    shutil.copy(real_data.file("flores200-devtest/rus_Cyrl.devtest"), files["ru"])
    return files


RU_MERGES = 1000


@pytest.fixture(scope="module")
def russian(flores_en_ru, tmp_path_factory):
    """Our Russian procedure on FLORES devtest EN + RU (1,012 lines each)."""
    folder = tmp_path_factory.mktemp("ours")
    return folder, learn_joint_bpe(flores_en_ru, RU_MERGES, folder / "codes", folder, translit={"ru": ISO9})


def words(line: str) -> list[str]:
    return [word for word in line.split(" ") if word]


def test_russian_procedure_matches_the_authors_script_run_with_the_real_tools(
    flores_en_ru, russian, tmp_path
):
    """scripts/preprocess.sh of Emelin et al., step by step with translit + subword-nmt CLIs."""
    en, ru = flores_en_ru["en"], flores_en_ru["ru"]
    ref = tmp_path / "ref"
    ref.mkdir()
    translit_cli(stdin=ru, stdout=ref / "ru.latin")
    subword_nmt(
        "learn-joint-bpe-and-vocab",
        "-i",
        str(en),
        str(ref / "ru.latin"),
        "-o",
        str(ref / "codes.latin"),
        "-s",
        str(RU_MERGES),
        "--write-vocabulary",
        str(ref / "vocab.en"),
        str(ref / "vocab.ru.latin"),
    )
    version, *merges = (ref / "codes.latin").read_text(encoding="utf-8").splitlines(keepends=True)
    (ref / "minus").write_text("".join(merges), encoding="utf-8")
    translit_cli("-r", stdin=ref / "minus", stdout=ref / "cyrillic")
    (ref / "codes").write_text(
        version + (ref / "cyrillic").read_text(encoding="utf-8") + "".join(merges), encoding="utf-8"
    )
    subword_nmt("apply-bpe", "-c", str(ref / "codes"), stdin=ru, stdout=ref / "tmp")
    subword_nmt("get-vocab", stdin=ref / "tmp", stdout=ref / "vocab.ru")
    subword_nmt(
        "apply-bpe",
        "-c",
        str(ref / "codes"),
        "--vocabulary",
        str(ref / "vocab.ru"),
        "--vocabulary-threshold",
        "50",
        stdin=ru,
        stdout=ref / "bpe.ru",
    )
    subword_nmt(
        "apply-bpe",
        "-c",
        str(ref / "codes.latin"),
        "--vocabulary",
        str(ref / "vocab.en"),
        "--vocabulary-threshold",
        "50",
        stdin=en,
        stdout=ref / "bpe.en",
    )

    ours, result = russian
    assert result.codes == {"ru": ours / "codes", "en": ours / "codes.latin"}
    assert result.codes["en"] == codes_path_for(ours / "codes", "en", ["ru"])
    for name in ("codes", "codes.latin", "vocab.en", "vocab.ru", "vocab.ru.latin"):
        assert (ours / name).read_bytes() == (ref / name).read_bytes(), name
    for lang in ("en", "ru"):
        apply_bpe(result.codes[lang], result.vocab[lang], 50, flores_en_ru[lang], tmp_path / f"bpe.{lang}")
        assert (tmp_path / f"bpe.{lang}").read_bytes() == (ref / f"bpe.{lang}").read_bytes()

    # Russian is segmented, never rewritten: removing the separators gives the input back, in Cyrillic
    source = ru.read_text(encoding="utf-8").splitlines()
    segmented = (tmp_path / "bpe.ru").read_text(encoding="utf-8").splitlines()
    assert len(segmented) == len(source) == 1012
    assert [words(undo_bpe(line)) for line in segmented] == [words(line) for line in source]
    assert sum(line.count("@@ ") for line in segmented) > 10000
    latin_only = {char for rule in ISO9_RULES for char in rule.latin} - set("".join(source))
    assert not set("".join(segmented)) & latin_only, "no transliteration character reaches the model"


def test_merges_learned_on_transliteration_apply_in_cyrillic(flores_en_ru, russian):
    """The Cyrillic half is the Latin half mapped back, and it does the segmenting of Russian text."""
    folder, result = russian
    version, *codes = (folder / "codes").read_text(encoding="utf-8").splitlines()
    assert version.startswith("#version:") and len(codes) == 2 * RU_MERGES
    cyrillic, latin = codes[:RU_MERGES], codes[RU_MERGES:]
    assert latin == (folder / "codes.latin").read_text(encoding="utf-8").splitlines()[1:]
    russian = [index for index, merge in enumerate(cyrillic) if CYRILLIC.search(merge)]
    # every Cyrillic merge transliterates back to the Latin merge it came from
    assert all(iso9_to_latin(cyrillic[index]) == latin[index] for index in russian)
    # count the merges that fire while segmenting the Russian text (no vocabulary filter)
    segmenter = BPESegmenter(result.codes["ru"], None, None)
    lines = flores_en_ru["ru"].read_text(encoding="utf-8").splitlines()
    bpe = (segmenter(""), segmenter._bpe)[1]
    used = set()
    for line in lines:
        for token in segmenter(line).split():
            unit = token[:-2] if token.endswith("@@") else token + "</w>"
            if unit in bpe.bpe_codes_reverse:
                used.add(bpe.bpe_codes_reverse[unit])
    used_cyrillic = {
        pair for pair in used if bpe.bpe_codes[pair] < RU_MERGES and CYRILLIC.search("".join(pair))
    }
    assert len(used_cyrillic) > 750  # measured: 809 of the 1000 mapped-back merges segment Russian words
    # the segmentation has the structure learned on the transliteration: segmenting the Latin form
    # with the Latin codes gives the transliterated Cyrillic segmentation (measured: 1010 of 1012 lines;
    # the two others hide a Latin homoglyph inside a Russian word, "cлучаях", "aнтичных")
    latin_segmenter = BPESegmenter(result.codes["en"], None, None)
    same = sum(latin_segmenter(iso9_to_latin(line)) == iso9_to_latin(segmenter(line)) for line in lines)
    assert same >= 1000


def test_cli_end_to_end(multi30k, tmp_path):
    folder = tmp_path / "cli"
    assert (
        main(
            [
                "bpe",
                "learn",
                "--input",
                f"en={multi30k['en']}",
                "--input",
                f"de={multi30k['de']}",
                "-s",
                "300",
                "--codes",
                str(folder / "codes"),
                "--vocab-dir",
                str(folder),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "bpe",
                "apply",
                "--codes",
                str(folder / "codes"),
                "--vocab",
                str(folder / "vocab.de"),
                "--threshold",
                "50",
                str(multi30k["de"]),
                "-o",
                str(folder / "bpe.de"),
            ]
        )
        == 0
    )
    assert main(["bpe", "undo", str(folder / "bpe.de"), "-o", str(folder / "undone.de")]) == 0
    undone = (folder / "undone.de").read_text().splitlines()
    original = multi30k["de"].read_text().splitlines()
    assert [words(line) for line in undone] == [words(line) for line in original]
    assert main(["vocab", str(folder / "bpe.de"), "-o", str(folder / "vocab.txt")]) == 0
    assert Vocabulary.load(folder / "vocab.txt").itos[:4] == list(SPECIALS)
    # stdin -> stdout through the installed entry point
    run = subprocess.run(
        [sys.executable, "-m", "nmtvariants", "translit"],
        input="Съешь ОБЪЕКТ\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout == "Sʺešʹ OBʺEKT\n"
    run = subprocess.run(
        [sys.executable, "-m", "nmtvariants", "translit", "-r"],
        input=run.stdout,
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout == "СЪешь ОБЪЕКТ\n"
    assert main(["bpe", "learn", "--input", "en", "-s", "10", "--codes", "c", "--vocab-dir", "d"]) == 2


def test_gzip_training_files_give_the_same_codes(multi30k, tmp_path):
    compressed = {}
    for lang, path in multi30k.items():
        compressed[lang] = tmp_path / f"train.{lang}.gz"
        with gzip.open(compressed[lang], "wb") as out:
            out.write(path.read_bytes())
    plain = learn_joint_bpe(multi30k, 200, tmp_path / "plain" / "codes", tmp_path / "plain")
    packed = learn_joint_bpe(compressed, 200, tmp_path / "packed" / "codes", tmp_path / "packed")
    assert plain.codes["en"].read_bytes() == packed.codes["en"].read_bytes()
    assert plain.vocab["de"].read_bytes() == packed.vocab["de"].read_bytes()
