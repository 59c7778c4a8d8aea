"""Which word each token of a preprocessed line belongs to.

Gold annotations (dependency trees, word alignments, POS tags) index *words*: the Moses tokens of the
text without hyphen splitting. The preprocessing chain splits a word in two ways after that:

* Moses' aggressive hyphen splitting (``tokenizer.perl -a``, the house default) writes ``dark-blue``
  as ``dark @-@ blue``: the marker ``@-@`` glues the token before it to the token after it (Moses only
  writes it between two letters or digits of one word);
* subword-nmt BPE marks every non-final piece of a token with ``@@`` (``Hau@@ s``).

`word_ids` undoes both, so that one map serves every study that lifts a word-level annotation to BPE
positions (PASCAL parents, LISA heads, S&H labels, alignment pooling) whatever the hyphen setting:
``dar@@ k @-@ blue ball`` -> ``[0, 0, 0, 0, 1]``. The marker is recognised after BPE is joined, so a
segmented marker (``@@@ -@@ @``) counts too.
"""

from __future__ import annotations

from collections.abc import Sequence

# The one home of both marks (every other module imports them): this module imports nothing, so
# command-line parsers can take their defaults from it without loading the BPE or Moses code.
SEPARATOR = "@@"  # subword-nmt's continuation mark
HYPHEN = "@-@"  # Moses' aggressive-hyphen mark (sacremoses writes the same)


def token_ids(pieces: Sequence[str], separator: str = SEPARATOR) -> list[int]:
    """Token index of each BPE piece (``new@@ s`` -> [0, 0]): pieces ending in ``separator`` continue."""
    ids: list[int] = []
    token = 0
    for piece in pieces:
        ids.append(token)
        if not piece.endswith(separator):
            token += 1
    return ids


def word_ids(pieces: Sequence[str], separator: str = SEPARATOR, hyphen: str | None = HYPHEN) -> list[int]:
    """Word index of each piece: BPE pieces joined, then tokens glued by ``hyphen`` (None: no gluing)."""
    per_piece = token_ids(pieces, separator)
    tokens = joined_tokens(pieces, separator)
    word_of_token: list[int] = []
    word = -1
    glue = False
    for index, token in enumerate(tokens):
        is_marker = hyphen is not None and token == hyphen
        if not (glue or (is_marker and index > 0)):
            word += 1
        word_of_token.append(word)
        glue = is_marker
    return [word_of_token[t] for t in per_piece]


def word_ids_from_subwords(tokens: Sequence[str], separator: str = SEPARATOR) -> list[int]:
    """Word index of each BPE token of a line tokenised without hyphen splitting (no ``@-@`` gluing)."""
    return word_ids(tokens, separator, hyphen=None)


def joined_tokens(pieces: Sequence[str], separator: str = SEPARATOR) -> list[str]:
    """The Moses tokens behind BPE pieces (``Hau@@ s`` -> ``Haus``)."""
    tokens: list[str] = []
    current = ""
    for piece in pieces:
        if piece.endswith(separator):
            current += piece[: -len(separator)]
        else:
            tokens.append(current + piece)
            current = ""
    if current:
        tokens.append(current)
    return tokens


def words(pieces: Sequence[str], separator: str = SEPARATOR, hyphen: str | None = HYPHEN) -> list[str]:
    """The words behind the pieces: ``dar@@ k @-@ blue`` -> ``["dark-blue"]`` (``@-@`` becomes ``-``)."""
    tokens = joined_tokens(pieces, separator)
    ids = word_ids(tokens, separator, hyphen)
    out: list[str] = []
    for word, token in zip(ids, tokens, strict=True):
        text = "-" if hyphen is not None and token == hyphen else token
        if word == len(out):
            out.append(text)
        else:
            out[word] += text
    return out
