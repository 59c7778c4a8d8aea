"""The catalogue: every corpus the four studies use, where it lives upstream and in the mirror.

A :class:`Corpus` names the files to fetch (:class:`RemoteFile`: upstream URLs, the path of the same
bytes in a mirror laid out like ``shared/data``, sha256 or md5 pins, or a registration gate) and how to
turn them into ``{split}.{lang}`` text files (:class:`Extract`: archive member, format, column).
Some corpora are mirrored in a different form than upstream ships them (WMT test sets as extracted
plain text instead of SGML tarballs; ContraWSD and KFTT as single files): those carry a second
recipe, ``mirror_recipe``, that is tried first when a mirror is configured.

Sources of the entries: ``shared/data/README.md`` (mirror layout, snapshot commits, sha256 of every
mirrored file), the seed brief's §5 (canonical WMT URLs), sacreBLEU's own test-set registry (URLs,
md5 and SGML member names of every ``wmtYY`` set, read at import time so the two never disagree),
and the archive layouts that TFDS's WMT builder documents for the training corpora.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from nmtvariants.corpora import multi30k
from nmtvariants.errors import ConfigError


@dataclass(frozen=True)
class RemoteFile:
    """One file to obtain, stored under ``name`` in the corpus's download folder.

    ``sha256``/``md5`` pin the bytes as fetched (the same bytes upstream and at ``mirror``).
    ``gate`` is set for data behind a registration: it says where to get the file by hand.
    """

    name: str
    urls: tuple[str, ...] = ()
    mirror: str | None = None
    sha256: str | None = None
    md5: str | None = None
    gate: str | None = None


@dataclass(frozen=True)
class Extract:
    """Lines for one output file: ``member`` of ``file`` read as ``fmt``.

    Several extracts with the same ``output`` are concatenated in catalogue order (training corpora
    made of several sub-corpora). ``member`` may be a glob (sorted matches are concatenated); a
    member or file ending in ``.gz`` is decompressed. ``fmt`` is a :mod:`formats` name; ``column``
    selects a TSV/`` ||| `` column, ``field`` a WMT-XML field, ``lang`` a TMX side.
    """

    output: str
    file: str
    member: str | None = None
    fmt: str = "text"
    column: int = 0
    field: str = "src"
    lang: str = ""


@dataclass(frozen=True)
class Recipe:
    files: tuple[RemoteFile, ...]
    extracts: tuple[Extract, ...]

    def file(self, name: str) -> RemoteFile:
        for remote in self.files:
            if remote.name == name:
                return remote
        raise KeyError(name)


@dataclass(frozen=True)
class Corpus:
    """A corpus as the pipeline sees it: what to fetch and which ``{split}.{lang}`` files it gives."""

    name: str
    description: str
    recipe: Recipe
    mirror_recipe: Recipe | None = None
    lines: Mapping[str, int] = field(default_factory=dict)  # published line counts, checked
    studies: tuple[str, ...] = ()
    licence: str = ""

    @property
    def gated(self) -> bool:
        return any(remote.gate for remote in self.recipe.files)

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(extract.output for extract in self.recipe.extracts))


# sha256 of the mirrored files as stored in shared/data (first) and of their uncompressed content
# (second, .gz only; equal to a fresh upstream download of a file that was recompressed there).
MIRROR_SHA256: Mapping[str, tuple[str, str | None]] = MappingProxyType(
    {
        "alignments/en-fr-hansards-naacl2003/crossalign.enfr.talp": (
            "055a75c9ed0137d84e24bb8929098c1bb753df17c92c5197bd80329494b320f6",
            None,
        ),
        "alignments/en-fr-hansards-naacl2003/crossalign.test.en-fr": (
            "19d56c3de3634ab8420d553df4d9dfd849502b18225f1599382e98a6de9cfc72",
            None,
        ),
        "alignments/en-fr-hansards-naacl2003/test.align": (
            "fef8b42322bbd7434d2adb25d9b642d09ddae1d50c73ac31883cf22523e383cb",
            None,
        ),
        "alignments/en-fr-hansards-naacl2003/test.e": (
            "87c2ea4b70fb3a86e78403546591b5f53c9971705e57ce0790bdfd7f5ec24932",
            None,
        ),
        "alignments/en-fr-hansards-naacl2003/test.f": (
            "774dda1b7cedf756236d39d95a81d7542115a16bea131198abf31138bd3aa1cb",
            None,
        ),
        "alignments/en-fr-hansards-naacl2003/trial.align": (
            "1bfcf3340bba6153153ef9c515d70f6acd2547e207cffc74ab63dc17ded1ce39",
            None,
        ),
        "alignments/en-fr-hansards-naacl2003/trial.e": (
            "bb5fb2ed59d535df2ec022d7a0b466f1315df7a3fe3261b2552158aca209d522",
            None,
        ),
        "alignments/en-fr-hansards-naacl2003/trial.f": (
            "b4fc275ae7b5f4cd4996e34be44d352d8478cf2cf493ba7e61ad1775d736945a",
            None,
        ),
        "alignments/ja-en-kftt/jaen.talp": (
            "721cd0f9cedfd3aa6c71f482634777fc7261ff8c0159c651a3173088b13cfe3b",
            None,
        ),
        "alignments/ja-en-kftt/test.ja-en": (
            "16e447e6f354c5e7f5c7f2f97ca148675b0687d513eaf919183fc804a5c29a64",
            None,
        ),
        "ud-ewt/en_ewt-ud-train.conllu.gz": (
            "bd47e08c9e18ec12d319e84df2ccdb272ff6de1d0dba5761117d3caf8b358f7b",
            "3fb78e2b55482c8ee00caa653af436c88c9e5bc9a73ce26e4ae3ddc79d2b7e7b",
        ),
        "ud-ewt/en_ewt-ud-dev.conllu.gz": (
            "41086e3afc9ae572f899c9123f874d6d04a52e374a3d2ac7a6667ce48e3bf3e3",
            "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6",
        ),
        "ud-ewt/en_ewt-ud-test.conllu.gz": (
            "29c151eee8846d3f3ef7806c126ecac9932af2317c008c6d6b076c5e14950dbe",
            "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd",
        ),
        "contrawsd/testsuite_wmt18/de-en.wsd.task.de.gz": (
            "4af19011e122fde7ab813493e0db9c23bcad7d1d62848e62bfac89b98d8c7649",
            "b7a5be40754dc6fa03051aca497709dee3633b4b7e2ef9c4b97df5c2a6d4a161",
        ),
        "contrawsd/testsuite_wmt18/de-en.wsd.task.doc_ids.de.gz": (
            "d07da4fe151944a51dc7c736f23215f1f65318d6031fef68ac992257732846cd",
            "4eb37249ed25f140ef427d590708b914a9eb2e71abc98a76dc060b9ac171d08e",
        ),
        "contrawsd/testsuite_wmt18/de-en.wsd.task.en.detok.gz": (
            "5d56dfc8853db305125d2bba24ddbbb9641f9bad52f0536ccbe36ed1e4693050",
            "4251aa01d3d628cbaf996ef8932ee8914af7a6bee805c52b519eaa344ad2e6d4",
        ),
        "contrawsd/testsuite_wmt18/de-en.wsd.task.en.gz": (
            "be33b979607678d924ae5fc2faa059e25dabfb91c73f09096967cb1d23134dde",
            "314f941ad8e17d8f0e759b92a3c9d3e4a11fd9101f0691b0eca1e6613ddd3510",
        ),
        "kftt/orig/kyoto-dev.en": (
            "f7d5de9e0b11efa4f000dd4c35343831cd49c6484f8e8be6b2f479f31e8f8e59",
            None,
        ),
        "kftt/orig/kyoto-dev.ja": (
            "0b1892ff441313565a4bc67a1c790b7e764a66b807f1b7e225ef680ab4e0f0cb",
            None,
        ),
        "kftt/orig/kyoto-test.en": (
            "d16406a910c69022ddfc20e5feed500d0c11237cda6013b14b987d6e8131625a",
            None,
        ),
        "kftt/orig/kyoto-test.ja": (
            "1d4ef6cb61fa5ae4ec9695eb167bf40156c3b0f32511f4eb5eb48857c4570f2b",
            None,
        ),
        "multi30k/task1/image_splits/test_2016_flickr.txt": (
            "871e8ecafc66fb13e044ecccf669d04a865b4c58553227df86b933f0337a1563",
            None,
        ),
        "multi30k/task1/image_splits/test_2017_flickr.txt": (
            "7bef9b1eb747593c23a8597e830ac804d28180d1226c1d6e5bc3f08ccc561e85",
            None,
        ),
        "multi30k/task1/image_splits/test_2017_mscoco.txt": (
            "8f976b3c0beed9d96c918fb41e36178f1af11f0ff61d964592b80f932cb5c6d8",
            None,
        ),
        "multi30k/task1/image_splits/test_2018_flickr.txt": (
            "8922c98be3e2b6866cd27d90e855214c2d9437fb9ebe406cdcde0edb786b4b95",
            None,
        ),
        "multi30k/task1/image_splits/train.txt": (
            "97ee57e160a46c7d0e75298ebf57967e1245698a6f8806436ff07e61d1a41221",
            None,
        ),
        "multi30k/task1/image_splits/val.txt": (
            "db26f03eaf833ec47bfaea129ed053b68cbcfc5d1f9a09c4cdf7c88fbfea7108",
            None,
        ),
        "multi30k/task1/raw/test_2016_flickr.cs.gz": (
            "200a4a74cc9560f051924abb9803be008d1908d77f747e9141aeb86dfd2797f1",
            "45adb85f688de8407fddcbe1b36dca15d12aab868149b337e2576f2d6d2ff8d8",
        ),
        "multi30k/task1/raw/test_2016_flickr.de.gz": (
            "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
            "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
        ),
        "multi30k/task1/raw/test_2016_flickr.en.gz": (
            "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
            "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
        ),
        "multi30k/task1/raw/test_2016_flickr.fr.gz": (
            "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
            "cb3160d69b002bb638e66cc7612fcd56cb0af82eadc9c142dedc438afb885ef6",
        ),
        "multi30k/task1/raw/test_2017_flickr.de.gz": (
            "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee",
            "c3078bc3b36808bf9d20eb2347ed6137016179ef59ec0d2b9b8ecc3fb2880081",
        ),
        "multi30k/task1/raw/test_2017_flickr.en.gz": (
            "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
            "ce1450ddc5ab0834502579d77a170849952e15a2938b34cc503bdc25ebb4fb98",
        ),
        "multi30k/task1/raw/test_2017_flickr.fr.gz": (
            "3ba671ceb2299f3304ffafefea7a833d08632fbaf0ba18546f8a2ec2391af496",
            "6f3764e31dac41e9455e612958bcfd4e877c5e15cd66df2c2b2be6d9bd83e5b6",
        ),
        "multi30k/task1/raw/test_2017_mscoco.de.gz": (
            "799e4854c25d601cb6cb6be29eabe5667734c61ace2f495e03e429031a0bc338",
            "58277df3c75f92f7145a11b910b553d1cf82c439249d4dc237c899609eafac22",
        ),
        "multi30k/task1/raw/test_2017_mscoco.en.gz": (
            "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58",
            "43051fdfa86fd5395182e718a94ca67b1b227b9f7c79596ff0f6b813216981d2",
        ),
        "multi30k/task1/raw/test_2017_mscoco.fr.gz": (
            "754f3072ba9f124569ba5258b32730fc1d214bbf8e0c6dfb2b74401676220db0",
            "39cde3f43f32b0a6bf29ce4917a46329ff32e53070c2fac87506695a740ae0a0",
        ),
        "multi30k/task1/raw/test_2018_flickr.cs.gz": (
            "7d0a9db904f94c554a8c58049a9f3a5357c27f46cc3d710d70cb0b4a2585b8c2",
            "1db59fe6980c9b3f9bade65122a985e71150214837d76f4768a5a8384c0b2dc7",
        ),
        "multi30k/task1/raw/test_2018_flickr.de.gz": (
            "ddd0130c7d97482dc5197a02141dae8dd79f20f03586c480d675c09a32daf608",
            "39fcc8b3331d76fb42d648d019c6898b0d5e58baac87bc2a0bb93f44ec8db207",
        ),
        "multi30k/task1/raw/test_2018_flickr.en.gz": (
            "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d",
            "4e585c2dd525911a6ea7730e9d0b516239af3f1b1ffae6a2130223cfb639f25e",
        ),
        "multi30k/task1/raw/test_2018_flickr.fr.gz": (
            "fb2b83fcceb937a4f7e3e93c1c51c22aba92f1e342391e6b5ba392b16a920501",
            "234b4a887da0da4801a3e2c6f21336231ff7dd46daeb80cfa1b551c8bbb78239",
        ),
        "multi30k/task1/raw/train.cs.gz": (
            "a65adb8b32e3bc664f21ecba7a6e7f6950fd1f405e135f7c312faabdb6255077",
            "2be68b38c8d586ff4f54eb13cc6e1baaaa053695b3f070d3038303a47f2268da",
        ),
        "multi30k/task1/raw/train.de.gz": (
            "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
            "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
        ),
        "multi30k/task1/raw/train.en.gz": (
            "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
            "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
        ),
        "multi30k/task1/raw/train.fr.gz": (
            "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
            "5925a3c18f1587b6b54b87743106e6e8ab93618edb6f65d19eac0621f853a10d",
        ),
        "multi30k/task1/raw/val.cs.gz": (
            "b63226e05c4bd5dd6a42897d74b86a1b9d2c31498252c572b1ea7f7996927fcc",
            "d53827e469b0a1ca8d57e9e26b2b64c4bc4b33f5479c7b03ae87ae5c882c3e33",
        ),
        "multi30k/task1/raw/val.de.gz": (
            "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
            "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
        ),
        "multi30k/task1/raw/val.en.gz": (
            "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
            "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
        ),
        "multi30k/task1/raw/val.fr.gz": (
            "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
            "5304e444d842e962b2dda4d816b70b22a1765b15401642b7ca37a67477e708dc",
        ),
        "wmt/en-cs/newstest2014.cs.gz": (
            "1f379c729aa8a32314713b1dafb7abd45d46c87c349b2867a9e6fc5651ffb37b",
            "ab97fb33490f99ec9472fddaad928f99e15e339acce9b98c8feae7d93ab63301",
        ),
        "wmt/en-cs/newstest2014.en.gz": (
            "ecaa47bdd76144f13f42eee69f55503937ea13391cac76f2dbedc060a7664d64",
            "f1d280ee4b7aa85f75829cf321e75f2a80bdeb91afb16be0f5d0a099ef539781",
        ),
        "wmt/en-cs/newstest2017.cs.gz": (
            "ed40c0b2a0b52a95dd26821d52ba6be5e526a05c0b837c4d584a5b0627d4adf1",
            "225db9617df335fae930a8edb31ee3d2bda44ffff654fbdc453a92fcaa6efc23",
        ),
        "wmt/en-cs/newstest2017.en.gz": (
            "1a50dbbe86769ec1a0f0f4f892c3d6c230b58eb79e56f73142ccd9425ea9a243",
            "4a27d3eec4152cce280087270fea7bc13d1f44c6efe19f75c0fabf9a714ccba9",
        ),
        "wmt/en-de/newstest2014.de.gz": (
            "20b141a4dfe4c78a991f9999174f8f378565ea479ebaef056a68b16d23b74702",
            "ae5d110486bc33d7175e9e28c7d0051eb3e5fcd2166dd93371089852c091a20e",
        ),
        "wmt/en-de/newstest2014.en.gz": (
            "c9d36aa995abde6b41abebef6411be4f1ecc2f520f04dd6e382a232c34b36ff6",
            "7294bccf2879a97b3706b95c9595f1459617a8ee7130d5d8581c910e69736971",
        ),
        "wmt/en-ja/newstest2020.en.gz": (
            "7e871c909fa477576702ba4004cba4b6647eeed7847034d9f0144d4e922578e6",
            "cd85e8890543677a61da20cea5e1dc526e31539f80cb2285991bdb9240c4913d",
        ),
        "wmt/en-ja/newstest2020.ja.gz": (
            "54228c4b4b190a8a8e48cdbb4bbb1c8a9a7b92f3c68b0a86d62e8d77fd6364dc",
            "d1f941d110cf8be7358cca41426ee8d3c1ff7ad517f4ef36b6c1dfb9893327b9",
        ),
        "wmt/en-ru/newstest2017.en.gz": (
            "399f06e0d22f2fed46040614555699e3e254a1f2960a5487b361fbd370331de2",
            "d3ad991b891073ed09e8bda8d3144efc4aa590ff992af45966c3cae08f77cb35",
        ),
        "wmt/en-ru/newstest2017.ru.gz": (
            "8005c5510683ebadcc52f81de0bfb550349e20334b491bf6ad7d6957d9c9d1f0",
            "186d9b116b9ce59dbaae8d5265fb674dcbfc59458f7b04d81b5aca6590febc5f",
        ),
        "wmt/en-tr/newstest2017.en.gz": (
            "a0399f5a173a8f590181dbfa3008df02f080de873ff028063f010d6b9e8562fd",
            "a059693276d5fe25912ee9bd1520225a0889e47764a6d4ff351c92aa167e6653",
        ),
        "wmt/en-tr/newstest2017.tr.gz": (
            "bf8c79f0834fc53a5e3c9603da7cb11c4aa7b787301eeb0b37a1384d466d626c",
            "9b31fb006f11e6ff3209788647ddd12aefb3119572641d059df43ebe697a7f6b",
        ),
        "wmt/en-tr/newstest2018.en.gz": (
            "173c5d3cf40ea3cfb5eb9b9907d5f061cbfce9f4794de07c5775aba4ab3410e7",
            "b3f2c457cfaac57b6611be5828ef2836075750aad864d7004d1691afba2474a4",
        ),
        "wmt/en-tr/newstest2018.tr.gz": (
            "c33824cb71cc493b32065ec2371987456885681b2dbbbed3f3297565851252ad",
            "f0142c9476e4f9dad3a682b5ed1cb6ae8b4c9a61e79b4fa9d99c040317f3047d",
        ),
        "wmt/newstest2013/newstest2013.cs.gz": (
            "2662a9a451a15639174ec1443b7a37049e11d1ae9ee1102a3f4d50f19cf3ffed",
            "f2aec495b088dbf8aec48c7b5d8d577e68cee8327d0f76d296ae3dcf2565adb3",
        ),
        "wmt/newstest2013/newstest2013.de.gz": (
            "f3b87352620b54bc2bb2e314ee11595af4af957389d254303708b701a0893b5d",
            "d7ea35ab91ff3709e03ad9cb6bf5b4f2cc775cd2d72efd5254c4aec5e69663ca",
        ),
        "wmt/newstest2013/newstest2013.en.gz": (
            "162df22a4c495e32b7039463d27085e20ffff94b816f57a96ede3b1d92ddfa3e",
            "ace268a1d9724ca76f6d8e5c720ffdc08f01bdce45630ed8b269dc7918e1c16e",
        ),
        "wmt/newstest2013/newstest2013.es.gz": (
            "11cfbd9ed28e91bdaf9b01485f2c406d3a51b8f056a07dde947644357c5c6eb8",
            "d188693be1ca37a4d3e70bea6edafe6fa9b779b02685fa7ed8d3c51e07b5f9d9",
        ),
        "wmt/newstest2013/newstest2013.fr.gz": (
            "282c1a799005e1809bb742c6a5074125330572d844f283236158b2349a16c9af",
            "909b63be5df3eb8c13e1d5967bf3f0adfdb9f6ed5e638c5bffff563ee2ff7f41",
        ),
        "wmt/newstest2013/newstest2013.ru.gz": (
            "f15f01e866495a61b6a505aec127211fddbd35047a81049aea09b8b7629f7a0d",
            "34d8972566d8949407dfc255fd63171157bb639c6294adc36e234f5af039e362",
        ),
    }
)


def _pinned(path: str, url: str | None = None, *, name: str | None = None) -> RemoteFile:
    """A file whose mirror copy holds the upstream bytes unchanged (pinned by its stored sha256)."""
    return RemoteFile(
        name=name or path.rsplit("/", 1)[-1],
        urls=(url,) if url else (),
        mirror=path,
        sha256=MIRROR_SHA256[path][0],
    )


def _recompressed(path: str, url: str) -> RemoteFile:
    """Upstream plain file that the mirror holds gzip-recompressed: pin the uncompressed sha256."""
    _stored, content = MIRROR_SHA256[path]
    assert content is not None, path
    return RemoteFile(name=url.rsplit("/", 1)[-1], urls=(url,), sha256=content)


# ----------------------------------------------------------------------------------------------
# WMT training sub-corpora: (URL template, member template or single file, format).
# {src} = the non-English language, {lang} = the side being read, {pair} = the two codes sorted.
_WMT_SUBCORPORA: dict[str, tuple[str, str, str]] = {
    "europarl_v7": (
        "http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz",
        "training/europarl-v7.{src}-en.{lang}",
        "text",
    ),
    "commoncrawl": (
        "http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        "commoncrawl.{src}-en.{lang}",
        "text",
    ),
    "nc_v9": (
        "http://www.statmt.org/wmt14/training-parallel-nc-v9.tgz",
        "training/news-commentary-v9.{src}-en.{lang}",
        "text",
    ),
    "nc_v11": (
        "http://data.statmt.org/wmt16/translation-task/training-parallel-nc-v11.tgz",
        "training-parallel-nc-v11/news-commentary-v11.{src}-en.{lang}",
        "text",
    ),
    "nc_v12": (
        "http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz",
        "training/news-commentary-v12.{src}-en.{lang}",
        "text",
    ),
    "nc_v13": (
        "http://data.statmt.org/wmt18/translation-task/training-parallel-nc-v13.tgz",
        "training-parallel-nc-v13/news-commentary-v13.{src}-en.{lang}",
        "text",
    ),
    "multiun": (
        "http://www.statmt.org/wmt13/training-parallel-un.tgz",
        "un/undoc.2000.{src}-en.{lang}",
        "text",
    ),
    "gigafren": (
        "http://www.statmt.org/wmt10/training-giga-fren.tar",
        "giga-fren.release2.fixed.{lang}.gz",
        "text",
    ),
    "uncorpus_v1": (
        "https://storage.googleapis.com/tfds-data/downloads/uncorpus/UNv1.0.en-{src}.tar.gz",
        "en-{src}/UNv1.0.en-{src}.{lang}",
        "text",
    ),
    "europarl_v8": (
        "http://data.statmt.org/wmt18/translation-task/training-parallel-ep-v8.tgz",
        "training/europarl-v8.{src}-en.{lang}",
        "text",
    ),
    "paracrawl_v1": (
        "https://s3.amazonaws.com/web-language-models/paracrawl/release1/"
        "paracrawl-release1.en-{src}.zipporah0-dedup-clean.tgz",
        "paracrawl-release1.en-{src}.zipporah0-dedup-clean.{lang}",
        "text",
    ),
    "rapid2016": (
        "http://data.statmt.org/wmt18/translation-task/rapid2016.tgz",
        "rapid2016.{pair}.{lang}",
        "text",
    ),
    "wikiheadlines_ru": ("http://www.statmt.org/wmt15/wiki-titles.tgz", "wiki/ru-en/wiki.ru-en", "bars"),
    "wikiheadlines_fi": ("http://www.statmt.org/wmt15/wiki-titles.tgz", "wiki/fi-en/titles.fi-en", "bars"),
    "setimes2": ("http://opus.nlpl.eu/download.php?f=SETIMES/v2/tmx/en-{src}.tmx.gz", "", "tmx"),
    "yandex": ("https://translate.yandex.ru/corpus?lang=en", "corpus.en_ru.1m.{lang}", "text"),
    "czeng17": ("https://ufal.mff.cuni.cz/czeng/czeng17", "data.plaintext-format/??train.gz", "tsv"),
}
# A site's copy of the WMT training archives, as fetched upstream (not in shared/data, so not pinned):
# <mirror>/wmt/training/<archive name>. The scale rehearsal (benchmarks/scale_data_path.py) serves
# its generated WMT-sized corpus this way, so the download rule runs unchanged.
WMT_TRAINING_MIRROR = "wmt/training"
_CWMT = ("casia2015", "casict2011", "casict2015", "datum2015", "datum2017", "neu2017")
_GATES = {
    "yandex": "the Yandex 1M EN-RU corpus needs a licence agreement: "
    "https://translate.yandex.ru/corpus?lang=en (file 1mcorpus.zip)",
    "czeng17": "CzEng 1.7 needs a registration: https://ufal.mff.cuni.cz/czeng (files "
    "data-plaintext-format.0.tar ... data-plaintext-format.9.tar)",
}
_SETIMES_NAME = "SETIMES2.en-{src}.tmx.gz"


def _wmt_parts(sub: str, src: str) -> tuple[list[RemoteFile], list[Extract]]:
    """Files and extracts of one sub-corpus for the ``src``-en pair, both sides (train.src, train.en)."""
    url_t, member_t, fmt = _WMT_SUBCORPORA[sub]
    pair = "-".join(sorted((src, "en")))
    if sub == "czeng17":
        files = [RemoteFile(f"data-plaintext-format.{i}.tar", (url_t,), gate=_GATES[sub]) for i in range(10)]
        # CzEng 1.7 plain-text blocks: id, filter score, Czech, English (tab-separated)
        extracts = [
            Extract(f"train.{lang}", f.name, member_t, "tsv", column=column)
            for lang, column in ((src, 2), ("en", 3))
            for f in files
        ]
        return files, extracts
    if sub == "yandex":
        remote = RemoteFile("1mcorpus.zip", (url_t,), gate=_GATES[sub])
        return [remote], [
            Extract(f"train.{lang}", remote.name, member_t.format(lang=lang)) for lang in (src, "en")
        ]
    url = url_t.format(src=src)
    name = _SETIMES_NAME.format(src=src) if sub == "setimes2" else url.rsplit("/", 1)[-1]
    remote = RemoteFile(name, (url,), mirror=f"{WMT_TRAINING_MIRROR}/{name}")
    if fmt == "tmx":
        return [remote], [Extract(f"train.{lang}", name, None, "tmx", lang=lang) for lang in (src, "en")]
    if fmt == "bars":  # source ||| English
        return [remote], [
            Extract(f"train.{src}", name, member_t, "bars", column=0),
            Extract("train.en", name, member_t, "bars", column=1),
        ]
    return [remote], [
        Extract(f"train.{lang}", name, member_t.format(src=src, lang=lang, pair=pair)) for lang in (src, "en")
    ]


def _cwmt_parts(subset: str) -> tuple[list[RemoteFile], list[Extract]]:
    remote = RemoteFile(f"{subset}.zip", (f"ftp://cwmt-wmt:cwmt-wmt@nlp.nju.edu.cn/parallel/{subset}.zip",))
    return [remote], [
        Extract("train.zh", remote.name, f"{subset}/*_c[hn].txt"),
        Extract("train.en", remote.name, f"{subset}/*_en.txt"),
    ]


def _wmt_training(
    name: str, src: str, subs: Iterable[str], description: str, studies: tuple[str, ...], cwmt: bool = False
) -> Corpus:
    files: dict[str, RemoteFile] = {}
    by_output: dict[str, list[Extract]] = {f"train.{src}": [], "train.en": []}
    parts = [_wmt_parts(sub, src) for sub in subs]
    if cwmt:
        parts += [_cwmt_parts(subset) for subset in _CWMT]
    for part_files, part_extracts in parts:
        for remote in part_files:
            files.setdefault(remote.name, remote)
        for extract in part_extracts:
            by_output[extract.output].append(extract)
    extracts = tuple(by_output[f"train.{src}"] + by_output["train.en"])
    return Corpus(
        name,
        description,
        Recipe(tuple(files.values()), extracts),
        studies=studies,
        licence="WMT: free for research use; see each sub-corpus",
    )


# ----------------------------------------------------------------------------------------------
# WMT test sets, by sacreBLEU name and language pair; URLs, md5 and SGML members from sacreBLEU.
TESTSET_SPLITS: dict[str, str] = {
    "wmt13": "newstest2013",
    "wmt14": "newstest2014",
    "wmt14/full": "newstest2014-full",
    "wmt15": "newstest2015",
    "wmt16": "newstest2016",
    "wmt16/dev": "newsdev2016",
    "wmt17": "newstest2017",
    "wmt17/dev": "newsdev2017",
    "wmt18": "newstest2018",
    "wmt20": "newstest2020",
}
_TESTSET_PAIRS: dict[str, tuple[str, ...]] = {
    "wmt13": ("en-de", "de-en", "en-fr", "en-cs", "en-ru", "en-es"),
    "wmt14": ("en-de", "de-en", "en-fr", "fr-en"),
    "wmt14/full": ("en-de", "de-en", "en-fr", "fr-en", "en-cs"),
    "wmt15": ("en-de", "de-en", "en-cs", "en-fi"),
    "wmt16": ("en-de", "de-en", "en-ru", "en-tr", "en-cs", "en-fi"),
    "wmt16/dev": ("en-tr",),
    "wmt17": ("en-de", "de-en", "en-ru", "en-cs", "en-fi", "en-tr", "en-zh"),
    "wmt17/dev": ("en-zh",),
    "wmt18": ("en-de", "en-ru", "en-cs", "en-fi", "en-tr", "en-zh"),
    "wmt20": ("en-ja",),
}
# Mirrored (shared/data/wmt, plain text extracted from the official SGML; the full newstest2014 only).
_TESTSET_MIRROR: dict[tuple[str, str], str] = {
    **{
        ("wmt13", lang): "wmt/newstest2013/newstest2013.{lang}.gz"
        for lang in ("en", "de", "fr", "cs", "ru", "es")
    },
    ("wmt14/full", "de"): "wmt/en-de/newstest2014.{lang}.gz",
    ("wmt14/full", "cs"): "wmt/en-cs/newstest2014.{lang}.gz",
    ("wmt17", "cs"): "wmt/en-cs/newstest2017.{lang}.gz",
    ("wmt17", "ru"): "wmt/en-ru/newstest2017.{lang}.gz",
    ("wmt17", "tr"): "wmt/en-tr/newstest2017.{lang}.gz",
    ("wmt18", "tr"): "wmt/en-tr/newstest2018.{lang}.gz",
    ("wmt20", "ja"): "wmt/en-ja/newstest2020.{lang}.gz",
}
# Published sizes we can vouch for (counted on the mirror; 2737 = the filtered official en-de set).
_TESTSET_LINES: dict[tuple[str, str], int] = {
    **{("wmt13", pair): 3000 for pair in _TESTSET_PAIRS["wmt13"]},
    ("wmt14", "en-de"): 2737,
    ("wmt14/full", "en-de"): 3003,
    ("wmt14/full", "de-en"): 3003,
    ("wmt14/full", "en-cs"): 3003,
    ("wmt17", "en-cs"): 3005,
    ("wmt17", "en-ru"): 3001,
    ("wmt17", "en-tr"): 3007,
    ("wmt18", "en-tr"): 3000,
    ("wmt20", "en-ja"): 1000,
}


def _testset(name: str, pair: str) -> Corpus:
    from sacrebleu.dataset import DATASETS

    dataset = DATASETS[name]
    src, tgt = pair.split("-")
    split = TESTSET_SPLITS[name]
    url, md5 = dataset.data[0], dataset.md5[0]
    archive = f"{name.replace('/', '_')}.{url.rsplit('/', 1)[-1]}"
    src_member, ref_member = dataset.langpairs[pair][:2]
    recipe = Recipe(
        (RemoteFile(archive, (url,), md5=md5),),
        (
            Extract(f"{split}.{src}", archive, src_member, "sgml"),
            Extract(f"{split}.{tgt}", archive, ref_member, "sgml"),
        ),
    )
    mirror_recipe = None
    other = tgt if src == "en" else src
    template = _TESTSET_MIRROR.get((name, other))
    # wmt20 en-ja and ja-en are different documents; only the mirrored direction may use the mirror.
    if template and not (name == "wmt20" and src != "en"):
        files, extracts = [], []
        for lang in (src, tgt):
            path = template.format(lang=lang)
            remote = RemoteFile(f"mirror.{split}.{lang}.gz", mirror=path, sha256=MIRROR_SHA256[path][0])
            files.append(remote)
            extracts.append(Extract(f"{split}.{lang}", remote.name))
        mirror_recipe = Recipe(tuple(files), tuple(extracts))
    lines = _TESTSET_LINES.get((name, pair)) or _TESTSET_LINES.get((name, f"{tgt}-{src}"))
    return Corpus(
        f"{name}:{pair}",
        f"{split} {pair} (sacreBLEU -t {name} -l {pair})",
        recipe,
        mirror_recipe,
        lines={f"{split}.{src}": lines, f"{split}.{tgt}": lines} if lines else {},
        licence="WMT: free for research use",
    )


# ----------------------------------------------------------------------------------------------
def _multi30k() -> Corpus:
    files, extracts = [], []
    for split, languages in multi30k.LANGUAGES.items():
        for lang in languages:
            path = f"{multi30k.MIRROR}/{multi30k.raw_text_path(split, lang)}"
            remote = _pinned(path, f"{multi30k.UPSTREAM}/{multi30k.raw_text_path(split, lang)}")
            files.append(remote)
            extracts.append(Extract(f"{split}.{lang}", remote.name))
        path = f"{multi30k.MIRROR}/{multi30k.image_list_path(split)}"
        remote = _pinned(
            path,
            f"{multi30k.UPSTREAM}/{multi30k.image_list_path(split)}",
            name=f"{multi30k.SPLITS[split]}.images.txt",
        )
        files.append(remote)
        extracts.append(Extract(f"{split}.{multi30k.IMAGE_SUFFIX}", remote.name))
    lines = {extract.output: multi30k.LINES[extract.output.split(".")[0]] for extract in extracts}
    return Corpus(
        "multi30k",
        "Multi30k task 1 raw text (en/de/fr/cs) and image split lists",
        Recipe(tuple(files), tuple(extracts)),
        lines=lines,
        studies=("libovicky2018",),
        licence="research/education only (Flickr30K terms)",
    )


_CONTRAWSD = "https://raw.githubusercontent.com/ZurichNLP/ContraWSD/20da66961dd566a1a4097cef98e89136149ad48d"
_WSD_FILES = (  # (upstream name, output)
    ("de-en.wsd.task.de", "wsd.de"),
    ("de-en.wsd.task.en", "wsd.en"),
    ("de-en.wsd.task.en.detok", "wsd-detok.en"),
)


def _contrawsd_wmt18() -> Corpus:
    files, extracts, mirror_files, mirror_extracts = [], [], [], []
    for upstream, output in (*_WSD_FILES, ("de-en.wsd.task.doc_ids.de", "wsd.origin")):
        path = f"contrawsd/testsuite_wmt18/{upstream}.gz"
        remote = _recompressed(path, f"{_CONTRAWSD}/testsuite_wmt18/{upstream}")
        mirrored = _pinned(path)
        files.append(remote)
        mirror_files.append(mirrored)
        fmt, column = ("tsv", 0) if output.endswith(".origin") else ("text", 0)
        extracts.append(Extract(output, remote.name, fmt=fmt, column=column))
        mirror_extracts.append(Extract(output, mirrored.name, fmt=fmt, column=column))
    key = RemoteFile("de-en.wsd.task.json", (f"{_CONTRAWSD}/testsuite_wmt18/de-en.wsd.task.json",))
    return Corpus(
        "contrawsd_wmt18",
        "ContraWSD WMT18 test-suite subset (de sources, en references, origin corpus; "
        "key JSON upstream only)",
        Recipe((*files, key), (*extracts, Extract("wsd-key.json", key.name))),
        Recipe(tuple(mirror_files), tuple(mirror_extracts)),
        lines={output: 3249 for _, output in (*_WSD_FILES, ("", "wsd.origin"))},
        studies=("emelin2019",),
        licence="none stated; research only; cite Rios et al. 2017",
    )


_UD_EWT = "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/15d613d8447b3478787d4c278730a1e48a945efb"


def _ud_ewt() -> Corpus:
    """UD English EWT as CoNLL-U (``train/dev/test.conllu``): the treebank the PASCAL study trains its
    offline Stanza tagger and parser on. The mirror holds the three files gzip-recompressed; its train
    file was rebuilt from the per-document sources (shared/data/README.md §9), so only dev and test are
    pinned upstream (a fresh download of the released train file may differ in comment lines)."""
    files, extracts, mirror_files, mirror_extracts = [], [], [], []
    for split in ("train", "dev", "test"):
        path = f"ud-ewt/en_ewt-ud-{split}.conllu.gz"
        url = f"{_UD_EWT}/en_ewt-ud-{split}.conllu"
        remote = RemoteFile(url.rsplit("/", 1)[-1], (url,)) if split == "train" else _recompressed(path, url)
        mirrored = _pinned(path)
        files.append(remote)
        mirror_files.append(mirrored)
        extracts.append(Extract(f"{split}.conllu", remote.name))
        mirror_extracts.append(Extract(f"{split}.conllu", mirrored.name))
    return Corpus(
        "ud_ewt",
        "UD English EWT treebank (CoNLL-U train/dev/test) for the offline Stanza parser",
        Recipe(tuple(files), tuple(extracts)),
        Recipe(tuple(mirror_files), tuple(mirror_extracts)),
        studies=("bugliarello2020",),
        licence="CC BY-SA 4.0",
    )


_BERKELEY = (
    "https://raw.githubusercontent.com/mhajiloo/berkeleyaligner/b074394daa36d256ced5edcd30d0850ac0614899"
)
_CROSSALIGN = (
    "https://raw.githubusercontent.com/lisasiyu/Cross-Align/017ba1e044413a66d53b99bfcfe5ec89098e2da3"
)
_HANSARDS = "alignments/en-fr-hansards-naacl2003"


def _hansards() -> Corpus:
    files, extracts = [], []
    for split, folder in (("test", "test"), ("trial", "dev")):
        for suffix, output, fmt in (("e", "en", "snum"), ("f", "fr", "snum"), ("align", "align", "text")):
            remote = _pinned(
                f"{_HANSARDS}/{split}.{suffix}", f"{_BERKELEY}/resources/example/{folder}/{split}.{suffix}"
            )
            files.append(remote)
            extracts.append(Extract(f"{split}.{output}", remote.name, fmt=fmt))
    talp = _pinned(f"{_HANSARDS}/crossalign.enfr.talp", f"{_CROSSALIGN}/data/enfr.talp")
    files.append(talp)
    extracts.append(Extract("test.talp", talp.name))
    # the same test tokens with the original punctuation (the Berkeley copy has -LRB- and '' for « in
    # 17 English lines): what a model is fed (studies/yang2020/plan.py)
    bars = _pinned(f"{_HANSARDS}/crossalign.test.en-fr", f"{_CROSSALIGN}/data/test.en-fr")
    files.append(bars)
    extracts += [
        Extract(f"test.orig.{lang}", bars.name, fmt="bars", column=k) for k, lang in enumerate(("en", "fr"))
    ]
    lines = {e.output: 447 if e.output.startswith("test") else 37 for e in extracts}
    return Corpus(
        "hansards_enfr_align",
        "English-French Hansards gold word alignments (HLT-NAACL 2003 WPT; Och & Ney): 447 test + 37 trial, "
        "S and P links (0-based f-e in .align; 1-based e-f talp in test.talp; test.orig.* the same tokens "
        "with original punctuation); original: "
        "http://web.eecs.umich.edu/~mihalcea/wpt/data/English-French.test.tar.gz",
        Recipe(tuple(files), tuple(extracts)),
        lines=lines,
        studies=("yang2020",),
        licence="research/education only",
    )


def _kftt_alignments() -> Corpus:
    text = _pinned("alignments/ja-en-kftt/test.ja-en", f"{_CROSSALIGN}/data/test.ja-en")
    talp = _pinned("alignments/ja-en-kftt/jaen.talp", f"{_CROSSALIGN}/data/jaen.talp")
    extracts = (
        Extract("test.ja", text.name, fmt="bars", column=0),
        Extract("test.en", text.name, fmt="bars", column=1),
        Extract("test.talp", talp.name),
    )
    return Corpus(
        "kftt_jaen_align",
        "KFTT Japanese-English gold alignments (582 test pairs, 0-based j-e sure links: test.talp is a "
        "0-based talp file, read it with --format talp --zero-based; 6 links lie past a sentence end, "
        "--keep-out-of-range keeps them); original: "
        "http://www.phontron.com/kftt/download/kftt-alignments.tar.gz",
        Recipe((text, talp), extracts),
        lines={e.output: 582 for e in extracts},
        licence="CC BY-SA 3.0",
    )


_KFTT_URL = "http://www.phontron.com/kftt/download/kftt-data-1.0.tar.gz"
_KFTT_LINES = {"dev": 1166, "test": 1160}


def _kftt(name: str, splits: tuple[str, ...]) -> Corpus:
    archive = RemoteFile("kftt-data-1.0.tar.gz", (_KFTT_URL,))
    extracts = tuple(
        Extract(f"{split}.{lang}", archive.name, f"kftt-data-1.0/data/orig/kyoto-{split}.{lang}")
        for split in splits
        for lang in ("en", "ja")
    )
    mirror_recipe = None
    if set(splits) <= set(_KFTT_LINES):  # only dev and test are mirrored
        files = tuple(_pinned(f"kftt/orig/kyoto-{s}.{lang}") for s in splits for lang in ("en", "ja"))
        mirror_recipe = Recipe(files, tuple(Extract(f.name.removeprefix("kyoto-"), f.name) for f in files))
    return Corpus(
        name,
        f"Kyoto Free Translation Task ja-en, untokenized ({', '.join(splits)})",
        Recipe((archive,), extracts),
        mirror_recipe,
        lines={
            e.output: _KFTT_LINES[e.output.split(".")[0]]
            for e in extracts
            if e.output.split(".")[0] in _KFTT_LINES
        },
        studies=("bugliarello2020",),
        licence="CC BY-SA 3.0",
    )


def _europarl_pair(src: str) -> Corpus:
    remote = RemoteFile(f"{src}-en.tgz", (f"https://www.statmt.org/europarl/v7/{src}-en.tgz",))
    return Corpus(
        f"europarl_v7_{src}en",
        f"Europarl v7 {src}-en bitext (input of the multi-source pivot intersection)",
        Recipe(
            (remote,),
            tuple(
                Extract(f"train.{lang}", remote.name, f"europarl-v7.{src}-en.{lang}") for lang in (src, "en")
            ),
        ),
        studies=("libovicky2018",),
        licence="Europarl: no copyright restrictions (statmt.org)",
    )


def _gated(
    name: str,
    description: str,
    file: str,
    url: str,
    gate: str,
    extracts: tuple[Extract, ...],
    studies: tuple[str, ...] = (),
) -> Corpus:
    remote = RemoteFile(file, (url,), gate=gate)
    return Corpus(name, description, Recipe((remote,), extracts), studies=studies)


_RWTH_GATE = (
    "the RWTH German-English gold alignments are distributed after a licence form (non-commercial, no "
    "redistribution): https://www-i6.informatik.rwth-aachen.de/goldAlignment/ (DeEnGoldAlignment.tar.gz)"
)
_ASPEC_GATE = (
    "ASPEC needs an application and licence agreement: https://jipsti.jst.go.jp/aspec/ (ASPEC.zip with "
    "ASPEC-JE)"
)


def _build() -> dict[str, Corpus]:
    corpora: list[Corpus] = [
        _wmt_training(
            "wmt14_ende",
            "de",
            ("europarl_v7", "commoncrawl", "nc_v9"),
            "WMT14 EN-DE training data (Europarl v7 + CommonCrawl + News Commentary v9, ~4.5M)",
            ("emelin2019", "yang2020"),
        ),
        _wmt_training(
            "wmt14_enfr",
            "fr",
            ("europarl_v7", "commoncrawl", "nc_v9", "multiun", "gigafren"),
            "WMT14 EN-FR training data (Europarl v7, CommonCrawl, NC v9, UN, Giga-FrEn)",
            ("yang2020",),
        ),
        _wmt_training(
            "wmt17_ende",
            "de",
            ("europarl_v7", "commoncrawl", "nc_v12", "rapid2016"),
            "WMT17 EN-DE training data (Europarl v7, CommonCrawl, NC v12, Rapid 2016)",
            ("bugliarello2020",),
        ),
        _wmt_training(
            "wmt17_enru",
            "ru",
            ("commoncrawl", "nc_v12", "uncorpus_v1", "wikiheadlines_ru", "yandex"),
            "WMT17 EN-RU training data (CommonCrawl, NC v12, UN v1.0, Wiki headlines, Yandex 1M: "
            "the Yandex part needs a licence)",
            ("emelin2019",),
        ),
        _wmt_training(
            "wmt17_enzh",
            "zh",
            ("nc_v12", "uncorpus_v1"),
            "WMT17 EN-ZH training data (NC v12, UN v1.0, CWMT casia2015/casict2011/casict2015/"
            "datum2015/datum2017/neu2017)",
            ("yang2020",),
            cwmt=True,
        ),
        _wmt_training(
            "wmt18_encs",
            "cs",
            ("europarl_v7", "commoncrawl", "nc_v13", "czeng17"),
            "WMT18 EN-CS training data (Europarl v7, CommonCrawl, NC v13, CzEng 1.7: registration)",
            ("emelin2019",),
        ),
        _wmt_training(
            "wmt18_enfi",
            "fi",
            ("europarl_v8", "paracrawl_v1", "rapid2016", "wikiheadlines_fi"),
            "WMT18 EN-FI training data (Europarl v8, ParaCrawl v1, Rapid 2016, Wiki headlines)",
            ("emelin2019",),
        ),
        _wmt_training(
            "wmt18_entr",
            "tr",
            ("setimes2",),
            "WMT18 EN-TR training data (SETIMES2, OPUS TMX)",
            ("bugliarello2020",),
        ),
        _wmt_training("nc11_ende", "de", ("nc_v11",), "News Commentary v11 DE-EN", ("bugliarello2020",)),
        *(_europarl_pair(src) for src in ("es", "fr", "de", "cs")),
        *(_testset(name, pair) for name, pairs in _TESTSET_PAIRS.items() for pair in pairs),
        _multi30k(),
        _gated(
            "multi30k_images",
            "Flickr30k/COCO images of Multi30k (user-supplied)",
            "flickr30k-images.tar.gz",
            "https://forms.illinois.edu/sec/229675",
            multi30k.IMAGES_GATE,
            (Extract("images", "flickr30k-images.tar.gz", fmt="unpack"),),
            ("libovicky2018",),
        ),
        _gated(
            "multi30k_features",
            "official Multi30k ResNet-50 features (user-supplied)",
            "features_resnet50.tar.gz",
            "https://github.com/multi30k/dataset",
            multi30k.FEATURES_GATE,
            (Extract("features", "features_resnet50.tar.gz", fmt="unpack"),),
            ("libovicky2018",),
        ),
        Corpus(
            "contrawsd_deen",
            "ContraWSD DE-EN contrastive test set (JSON; expand with `nmtvariants contrawsd-expand`)",
            Recipe(
                (RemoteFile("de-en.final.json", (f"{_CONTRAWSD}/de-en.final.json",)),),
                (Extract("contrawsd.json", "de-en.final.json"),),
            ),
            studies=("emelin2019",),
            licence="none stated; research only; cite Rios et al. 2017",
        ),
        _contrawsd_wmt18(),
        _ud_ewt(),
        _hansards(),
        _gated(
            "rwth_deen_align",
            "RWTH German-English gold alignments (508 Europarl pairs, Latin-1, 1-based talp)",
            "DeEnGoldAlignment.tar.gz",
            "https://www-i6.informatik.rwth-aachen.de/goldAlignment/",
            _RWTH_GATE,
            (
                Extract("test.de", "DeEnGoldAlignment.tar.gz", "de", fmt="latin1"),
                Extract("test.en", "DeEnGoldAlignment.tar.gz", "en", fmt="latin1"),
                Extract("test.talp", "DeEnGoldAlignment.tar.gz", "alignmentDeEn.talp"),
            ),
            ("yang2020",),
        ),
        _kftt_alignments(),
        _kftt("kftt", ("train", "dev", "tune", "test")),
        _kftt("kftt_devtest", ("dev", "test")),
        _gated(
            "aspec_enja",
            "WAT ASPEC-JE (train-1..3, dev, test; `id ||| no ||| ja ||| en` lines)",
            "ASPEC.zip",
            "https://jipsti.jst.go.jp/aspec/",
            _ASPEC_GATE,
            tuple(
                Extract(
                    f"{split}.{lang}",
                    "ASPEC.zip",
                    f"ASPEC/ASPEC-JE/{folder}/{pattern}",
                    "bars",
                    column=column,
                )
                for split, folder, pattern, offset in (
                    ("train", "train", "train-[123].txt", 1),
                    ("dev", "dev", "dev.txt", 0),
                    ("test", "test", "test.txt", 0),
                )
                for lang, column in (("ja", 2 + offset), ("en", 3 + offset))
            ),
            ("bugliarello2020",),
        ),
    ]
    return {corpus.name: corpus for corpus in corpora}


CATALOGUE: Mapping[str, Corpus] = MappingProxyType(_build())


def get_corpus(name: str) -> Corpus:
    """The catalogue entry called ``name``; an unknown name lists the close matches."""
    try:
        return CATALOGUE[name]
    except KeyError:
        close = fnmatch.filter(CATALOGUE, f"*{name.split(':')[0]}*")[:12]
        hint = f" (did you mean: {', '.join(close)})" if close else ""
        raise ConfigError(
            f"unknown corpus {name!r}{hint}; `nmtvariants download --list` shows them all"
        ) from None


def list_corpora() -> list[Corpus]:
    return sorted(CATALOGUE.values(), key=lambda corpus: corpus.name)
