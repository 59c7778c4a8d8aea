"""The toyworld lexicon: every word of the four toy languages with the forms the grammar needs.

Forms are listed, not derived by rule, wherever the real language is irregular (German plurals,
Russian noun cases, French adjectives), so the generated text reads like the real languages and a
model has real agreement to learn. Russian adjectives follow five regular ending classes.
The weights give a long tail: a few rare nouns and names appear only a handful of times in 20k lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Noun:
    """One noun sense. ``cls`` decides which verbs it can be the subject of."""

    en: tuple[str, str]  # singular, plural
    de: tuple[str, str, str]  # gender, singular, plural
    ru: tuple[str, bool, str, str, str, str, str]  # gender, animate, nom, acc, gen, dat, ins
    fr: tuple[str, str, str]  # gender, singular, plural
    cls: str
    shape: str
    weight: float = 1.0


def _n(en: str, en_pl: str, de: str, ru: str, fr: str, cls: str, shape: str, weight: float = 1.0) -> Noun:
    dg, ds, dp = de.split("|")
    parts = ru.split("|")
    rg, ranim = parts[0], parts[1] == "anim"
    fg, fs, fp = fr.split("|")
    return Noun((en, en_pl), (dg, ds, dp), (rg, ranim, *parts[2:7]), (fg, fs, fp), cls, shape, weight)  # type: ignore[arg-type]


# Plain nouns: key -> Noun. Classes: round (rolls), thing, animal.
NOUNS: dict[str, Noun] = {
    "ball": _n(
        "ball",
        "balls",
        "m|Ball|Bälle",
        "m|inan|мяч|мяч|мяча|мячу|мячом",
        "f|balle|balles",
        "round",
        "circle",
        9,
    ),
    "box": _n(
        "box",
        "boxes",
        "f|Kiste|Kisten",
        "f|inan|коробка|коробку|коробки|коробке|коробкой",
        "f|boîte|boîtes",
        "thing",
        "square",
        8,
    ),
    "cube": _n(
        "cube",
        "cubes",
        "m|Würfel|Würfel",
        "m|inan|кубик|кубик|кубика|кубику|кубиком",
        "m|cube|cubes",
        "thing",
        "cube",
        6,
    ),
    "ring": _n(
        "ring",
        "rings",
        "m|Ring|Ringe",
        "n|inan|кольцо|кольцо|кольца|кольцу|кольцом",
        "m|anneau|anneaux",
        "round",
        "ring",
        5,
    ),
    "star": _n(
        "star",
        "stars",
        "m|Stern|Sterne",
        "f|inan|звезда|звезду|звезды|звезде|звездой",
        "f|étoile|étoiles",
        "thing",
        "star",
        5,
    ),
    "cone": _n(
        "cone",
        "cones",
        "m|Kegel|Kegel",
        "m|inan|конус|конус|конуса|конусу|конусом",
        "m|cône|cônes",
        "thing",
        "triangle",
        4,
    ),
    "pyramid": _n(
        "pyramid",
        "pyramids",
        "f|Pyramide|Pyramiden",
        "f|inan|пирамида|пирамиду|пирамиды|пирамиде|пирамидой",
        "f|pyramide|pyramides",
        "thing",
        "triangle",
        3,
    ),
    "bottle": _n(
        "bottle",
        "bottles",
        "f|Flasche|Flaschen",
        "f|inan|бутылка|бутылку|бутылки|бутылке|бутылкой",
        "f|bouteille|bouteilles",
        "thing",
        "bottle",
        3,
    ),
    "cup": _n(
        "cup",
        "cups",
        "f|Tasse|Tassen",
        "f|inan|чашка|чашку|чашки|чашке|чашкой",
        "f|tasse|tasses",
        "thing",
        "cup",
        3,
    ),
    "lamp": _n(
        "lamp",
        "lamps",
        "f|Lampe|Lampen",
        "f|inan|лампа|лампу|лампы|лампе|лампой",
        "f|lampe|lampes",
        "thing",
        "lamp",
        3,
    ),
    "block": _n(
        "block",
        "blocks",
        "m|Klotz|Klötze",
        "m|inan|брусок|брусок|бруска|бруску|бруском",
        "m|bloc|blocs",
        "thing",
        "block",
        2,
    ),
    "egg": _n(
        "egg", "eggs", "n|Ei|Eier", "n|inan|яйцо|яйцо|яйца|яйцу|яйцом", "m|œuf|œufs", "round", "egg", 2
    ),
    "disc": _n(
        "disc",
        "discs",
        "f|Scheibe|Scheiben",
        "m|inan|диск|диск|диска|диску|диском",
        "m|disque|disques",
        "round",
        "disc",
        2,
    ),
    "cat": _n(
        "cat",
        "cats",
        "f|Katze|Katzen",
        "f|anim|кошка|кошку|кошки|кошке|кошкой",
        "m|chat|chats",
        "animal",
        "animal",
        3,
    ),
    "dog": _n(
        "dog",
        "dogs",
        "m|Hund|Hunde",
        "f|anim|собака|собаку|собаки|собаке|собакой",
        "m|chien|chiens",
        "animal",
        "animal",
        3,
    ),
    # The long tail: rare objects.
    "stick": _n(
        "stick",
        "sticks",
        "m|Stock|Stöcke",
        "f|inan|палка|палку|палки|палке|палкой",
        "m|bâton|bâtons",
        "thing",
        "block",
        2,
    ),
    "coin": _n(
        "coin",
        "coins",
        "f|Münze|Münzen",
        "f|inan|монета|монету|монеты|монете|монетой",
        "f|pièce|pièces",
        "round",
        "disc",
        2,
    ),
    "hat": _n(
        "hat",
        "hats",
        "m|Hut|Hüte",
        "f|inan|шляпа|шляпу|шляпы|шляпе|шляпой",
        "m|chapeau|chapeaux",
        "thing",
        "cup",
        2,
    ),
    "shoe": _n(
        "shoe",
        "shoes",
        "m|Schuh|Schuhe",
        "m|inan|ботинок|ботинок|ботинка|ботинку|ботинком",
        "f|chaussure|chaussures",
        "thing",
        "block",
        1.5,
    ),
    "book": _n(
        "book",
        "books",
        "n|Buch|Bücher",
        "f|inan|книга|книгу|книги|книге|книгой",
        "m|livre|livres",
        "thing",
        "square",
        2,
    ),
    "chair": _n(
        "chair",
        "chairs",
        "m|Stuhl|Stühle",
        "m|inan|стул|стул|стула|стулу|стулом",
        "f|chaise|chaises",
        "thing",
        "cube",
        1.5,
    ),
    "table": _n(
        "table",
        "tables",
        "m|Tisch|Tische",
        "m|inan|стол|стол|стола|столу|столом",
        "f|table|tables",
        "thing",
        "block",
        1.5,
    ),
    "apple": _n(
        "apple",
        "apples",
        "m|Apfel|Äpfel",
        "n|inan|яблоко|яблоко|яблока|яблоку|яблоком",
        "f|pomme|pommes",
        "round",
        "circle",
        2,
    ),
    "bucket": _n(
        "bucket",
        "buckets",
        "m|Eimer|Eimer",
        "n|inan|ведро|ведро|ведра|ведру|ведром",
        "m|seau|seaux",
        "thing",
        "cup",
        1,
    ),
    "candle": _n(
        "candle",
        "candles",
        "f|Kerze|Kerzen",
        "f|inan|свеча|свечу|свечи|свече|свечой",
        "f|bougie|bougies",
        "thing",
        "bottle",
        1,
    ),
    "bell": _n(
        "bell",
        "bells",
        "f|Glocke|Glocken",
        "m|inan|колокольчик|колокольчик|колокольчика|колокольчику|колокольчиком",
        "f|cloche|cloches",
        "thing",
        "triangle",
        1,
    ),
    "plate": _n(
        "plate",
        "plates",
        "m|Teller|Teller",
        "f|inan|тарелка|тарелку|тарелки|тарелке|тарелкой",
        "f|assiette|assiettes",
        "round",
        "disc",
        1,
    ),
    "spoon": _n(
        "spoon",
        "spoons",
        "m|Löffel|Löffel",
        "f|inan|ложка|ложку|ложки|ложке|ложкой",
        "f|cuillère|cuillères",
        "thing",
        "bottle",
        1,
    ),
    "horse": _n(
        "horse",
        "horses",
        "n|Pferd|Pferde",
        "f|anim|лошадь|лошадь|лошади|лошади|лошадью",
        "m|cheval|chevaux",
        "animal",
        "animal",
        1.5,
    ),
    "mouse": _n(
        "mouse",
        "mice",
        "f|Maus|Mäuse",
        "f|anim|мышь|мышь|мыши|мыши|мышью",
        "f|souris|souris",
        "animal",
        "animal",
        1.5,
    ),
    "rabbit": _n(
        "rabbit",
        "rabbits",
        "n|Kaninchen|Kaninchen",
        "m|anim|кролик|кролика|кролика|кролику|кроликом",
        "m|lapin|lapins",
        "animal",
        "animal",
        1.5,
    ),
    "anvil": _n(
        "anvil",
        "anvils",
        "m|Amboss|Ambosse",
        "f|inan|наковальня|наковальню|наковальни|наковальне|наковальней",
        "f|enclume|enclumes",
        "thing",
        "block",
        0.04,
    ),
    "teapot": _n(
        "teapot",
        "teapots",
        "f|Teekanne|Teekannen",
        "m|inan|чайник|чайник|чайника|чайнику|чайником",
        "f|théière|théières",
        "thing",
        "cup",
        0.04,
    ),
    "compass": _n(
        "compass",
        "compasses",
        "m|Kompass|Kompasse",
        "m|inan|компас|компас|компаса|компасу|компасом",
        "f|boussole|boussoles",
        "round",
        "disc",
        0.03,
    ),
    "harmonica": _n(
        "harmonica",
        "harmonicas",
        "f|Mundharmonika|Mundharmonikas",
        "f|inan|гармоника|гармонику|гармоники|гармонике|гармоникой",
        "m|harmonica|harmonicas",
        "thing",
        "block",
        0.03,
    ),
    "lantern": _n(
        "lantern",
        "lanterns",
        "f|Laterne|Laternen",
        "m|inan|фонарь|фонарь|фонаря|фонарю|фонарём",
        "f|lanterne|lanternes",
        "thing",
        "lamp",
        0.05,
    ),
    "thimble": _n(
        "thimble",
        "thimbles",
        "m|Fingerhut|Fingerhüte",
        "m|inan|напёрсток|напёрсток|напёрстка|напёрстку|напёрстком",
        "m|dé à coudre|dés à coudre",
        "thing",
        "cup",
        0.02,
    ),
    "feather": _n(
        "feather",
        "feathers",
        "f|Feder|Federn",
        "n|inan|перо|перо|пера|перу|пером",
        "f|plume|plumes",
        "thing",
        "egg",
        0.05,
    ),
    "accordion": _n(
        "accordion",
        "accordions",
        "n|Akkordeon|Akkordeons",
        "m|inan|аккордеон|аккордеон|аккордеона|аккордеону|аккордеоном",
        "m|accordéon|accordéons",
        "thing",
        "square",
        0.03,
    ),
    "tambourine": _n(
        "tambourine",
        "tambourines",
        "n|Tamburin|Tamburine",
        "m|inan|бубен|бубен|бубна|бубну|бубном",
        "m|tambourin|tambourins",
        "round",
        "ring",
        0.03,
    ),
    "anchor": _n(
        "anchor",
        "anchors",
        "m|Anker|Anker",
        "m|inan|якорь|якорь|якоря|якорю|якорем",
        "f|ancre|ancres",
        "thing",
        "star",
        0.03,
    ),
    "sextant": _n(
        "sextant",
        "sextants",
        "m|Sextant|Sextanten",
        "m|inan|секстант|секстант|секстанта|секстанту|секстантом",
        "m|sextant|sextants",
        "thing",
        "triangle",
        0.02,
    ),
    "metronome": _n(
        "metronome",
        "metronomes",
        "n|Metronom|Metronome",
        "m|inan|метроном|метроном|метронома|метроному|метрономом",
        "m|métronome|métronomes",
        "thing",
        "triangle",
        0.02,
    ),
    "hedgehog": _n(
        "hedgehog",
        "hedgehogs",
        "m|Igel|Igel",
        "m|anim|ёж|ежа|ежа|ежу|ежом",
        "m|hérisson|hérissons",
        "animal",
        "animal",
        0.04,
    ),
}


@dataclass(frozen=True)
class Ambiguous:
    """An English noun with two senses; the sentence always carries a cue that picks one."""

    senses: dict[str, Noun]
    cue_adjectives: dict[str, tuple[str, ...]]  # sense -> adjectives (materials/qualities) that pick it
    weight: float = 1.0
    sense_weights: dict[str, float] = field(default_factory=dict)  # rarer senses (default 1 each)


AMBIGUOUS: dict[str, Ambiguous] = {
    "bat": Ambiguous(
        {
            "animal": _n(
                "bat",
                "bats",
                "f|Fledermaus|Fledermäuse",
                "f|anim|летучая мышь|летучую мышь|летучей мыши|летучей мыши|летучей мышью",
                "f|chauve-souris|chauves-souris",
                "flyer",
                "bat",
            ),
            "club": _n(
                "bat",
                "bats",
                "m|Schläger|Schläger",
                "f|inan|бита|биту|биты|бите|битой",
                "f|batte|battes",
                "static",
                "block",
            ),
        },
        {"animal": (), "club": ("wooden", "metal")},
        sense_weights={"animal": 4, "club": 1},
    ),
    "bank": Ambiguous(
        {
            "river": _n(
                "bank",
                "banks",
                "n|Ufer|Ufer",
                "m|inan|берег|берег|берега|берегу|берегом",
                "f|rive|rives",
                "terrain",
                "bank",
            ),
            "money": _n(
                "bank",
                "banks",
                "f|Bank|Banken",
                "m|inan|банк|банк|банка|банку|банком",
                "f|banque|banques",
                "building",
                "house",
            ),
        },
        {"river": ("steep", "muddy"), "money": ()},
        sense_weights={"river": 1, "money": 4},
    ),
    "crane": Ambiguous(
        {
            "bird": _n(
                "crane",
                "cranes",
                "m|Kranich|Kraniche",
                "m|anim|журавль|журавля|журавля|журавлю|журавлём",
                "f|grue|grues",
                "flyer",
                "bird",
            ),
            "machine": _n(
                "crane",
                "cranes",
                "m|Kran|Kräne",
                "m|inan|кран|кран|крана|крану|краном",
                "f|grue|grues",
                "machine",
                "crane",
            ),
        },
        {"bird": (), "machine": ("metal",)},
        sense_weights={"bird": 1, "machine": 4},
    ),
    "seal": Ambiguous(
        {
            "animal": _n(
                "seal",
                "seals",
                "f|Robbe|Robben",
                "m|anim|тюлень|тюленя|тюленя|тюленю|тюленем",
                "m|phoque|phoques",
                "swimmer",
                "seal",
            ),
            "stamp": _n(
                "seal",
                "seals",
                "n|Siegel|Siegel",
                "f|inan|печать|печать|печати|печати|печатью",
                "m|sceau|sceaux",
                "static",
                "disc",
            ),
        },
        {"animal": (), "stamp": ("wooden", "metal")},
        sense_weights={"animal": 4, "stamp": 1},
    ),
}


@dataclass(frozen=True)
class Adjective:
    """``kind``: size (before the noun in French), colour/quality (after it), material."""

    kind: str
    en: str
    de: str  # stem that takes German endings; a material is the compound stem ("Holz")
    ru: tuple[str, str]  # stem, ending class
    fr: tuple[str, str, str, str]  # m sg, f sg, m pl, f pl (a material: "en X" in all four)
    en_upos: str = "ADJ"
    weight: float = 1.0


def _a(kind: str, en: str, de: str, ru: str, fr: str, en_upos: str = "ADJ", weight: float = 1.0) -> Adjective:
    stem, cls = ru.split("|")
    forms = fr.split("|")
    if len(forms) == 1:
        forms = forms * 4
    return Adjective(kind, en, de, (stem, cls), tuple(forms), en_upos, weight)  # type: ignore[arg-type]


ADJECTIVES: dict[str, Adjective] = {
    "small": _a("size", "small", "klein", "маленьк|velar", "petit|petite|petits|petites", weight=4),
    "big": _a("size", "big", "groß", "больш|velar_oj", "grand|grande|grands|grandes", weight=4),
    "huge": _a("size", "huge", "riesig", "огромн|hard", "énorme|énorme|énormes|énormes", weight=1),
    "red": _a("colour", "red", "rot", "красн|hard", "rouge|rouge|rouges|rouges", weight=5),
    "blue": _a("colour", "blue", "blau", "син|soft", "bleu|bleue|bleus|bleues", weight=5),
    "green": _a("colour", "green", "grün", "зелён|hard", "vert|verte|verts|vertes", weight=4),
    "yellow": _a("colour", "yellow", "gelb", "жёлт|hard", "jaune|jaune|jaunes|jaunes", weight=4),
    "black": _a("colour", "black", "schwarz", "чёрн|hard", "noir|noire|noirs|noires", weight=3),
    "white": _a("colour", "white", "weiß", "бел|hard", "blanc|blanche|blancs|blanches", weight=3),
    "orange": _a("colour", "orange", "orangefarben", "оранжев|hard", "orange", weight=2),
    "purple": _a(
        "colour", "purple", "violett", "фиолетов|hard", "violet|violette|violets|violettes", weight=2
    ),
    "grey": _a("colour", "grey", "grau", "сер|hard", "gris|grise|gris|grises", weight=2),
    "dark-blue": _a("colour", "dark-blue", "dunkelblau", "тёмно-син|soft", "bleu foncé", weight=1),
    "brown": _a("colour", "brown", "braun", "коричнев|hard", "brun|brune|bruns|brunes", weight=2),
    "pink": _a("colour", "pink", "rosafarben", "розов|hard", "rose|rose|roses|roses", weight=1),
    "golden": _a("colour", "golden", "golden", "золот|hard_oj", "doré|dorée|dorés|dorées", weight=1),
    "silver": _a(
        "colour", "silver", "silbern", "серебрян|hard", "argenté|argentée|argentés|argentées", weight=1
    ),
    "long": _a("size", "long", "lang", "длинн|hard", "long|longue|longs|longues", weight=1),
    "short": _a("size", "short", "kurz", "коротк|velar", "court|courte|courts|courtes", weight=1),
    "steep": _a("quality", "steep", "steil", "крут|hard_oj", "escarpé|escarpée|escarpés|escarpées"),
    "muddy": _a("quality", "muddy", "schlammig", "илист|hard", "boueux|boueuse|boueux|boueuses"),
    "wooden": _a("material", "wooden", "Holz", "деревянн|hard", "bois", weight=3),
    "metal": _a("material", "metal", "Metall", "металлическ|velar", "métal", en_upos="NOUN", weight=2),
    "glass": _a("material", "glass", "Glas", "стеклянн|hard", "verre", en_upos="NOUN", weight=1),
    "stone": _a("material", "stone", "Stein", "каменн|hard", "pierre", en_upos="NOUN", weight=1),
}

COLOURS_RGB: dict[str, tuple[int, int, int]] = {
    "red": (210, 40, 40),
    "blue": (50, 90, 220),
    "green": (40, 160, 60),
    "yellow": (235, 205, 40),
    "black": (20, 20, 20),
    "white": (250, 250, 250),
    "orange": (240, 140, 30),
    "purple": (140, 60, 170),
    "grey": (128, 128, 128),
    "dark-blue": (20, 30, 110),
    "brown": (120, 72, 30),
    "pink": (240, 150, 190),
    "golden": (212, 175, 55),
    "silver": (192, 192, 200),
}
MATERIAL_RGB: dict[str, tuple[int, int, int]] = {
    "wooden": (150, 100, 50),
    "metal": (170, 175, 185),
    "glass": (170, 220, 230),
    "stone": (110, 105, 100),
}

# Russian adjective endings: class -> (m, f, n, pl) -> case -> ending. Animate masculine acc = gen.
_RU_CASES = ("nom", "acc", "gen", "dat", "ins")


def _ru_table(m: str, f: str, n: str, pl: str) -> dict[str, dict[str, str]]:
    return {
        g: dict(zip(_RU_CASES, e.split(), strict=True)) for g, e in (("m", m), ("f", f), ("n", n), ("pl", pl))
    }


RU_ENDINGS: dict[str, dict[str, dict[str, str]]] = {
    "hard": _ru_table("ый ый ого ому ым", "ая ую ой ой ой", "ое ое ого ому ым", "ые ые ых ым ыми"),
    "soft": _ru_table("ий ий его ему им", "яя юю ей ей ей", "ее ее его ему им", "ие ие их им ими"),
    "velar": _ru_table("ий ий ого ому им", "ая ую ой ой ой", "ое ое ого ому им", "ие ие их им ими"),
    "velar_oj": _ru_table("ой ой ого ому им", "ая ую ой ой ой", "ое ое ого ому им", "ие ие их им ими"),
    "hard_oj": _ru_table("ой ой ого ому ым", "ая ую ой ой ой", "ое ое ого ому ым", "ые ые ых ым ыми"),
}


@dataclass(frozen=True)
class Verb:
    """A verb with its subject classes and the forms each language's grammar needs.

    German: 3sg, participle, perfect auxiliary, separable particle, object case, reflexive.
    Russian: present 3sg, past m/f/n, object preposition + case. French: 3sg, participle, auxiliary,
    reflexive. ``transitive`` verbs take an object; ``goal`` verbs take "towards X".
    """

    en: tuple[str, str, str]  # 3sg, participle, base (lemma)
    de: tuple[str, str, str]  # 3sg, participle, aux (hat|ist)
    ru: tuple[str, str, str, str]  # present 3sg, past m, past f, past n
    fr: tuple[str, str, str]  # 3sg, participle, aux (a|est)
    subjects: tuple[str, ...]
    transitive: bool = False
    goal: bool = False
    de_particle: str = ""
    de_reflexive: bool = False
    de_case: str = "acc"
    ru_object: tuple[str, str] = ("", "acc")  # preposition, case
    fr_reflexive: bool = False
    en_particle: str = ""
    perfect: bool = True
    weight: float = 1.0


MOVERS = ("round", "thing", "animal")
AGENTS = ("round", "thing", "animal", "name")

VERBS: dict[str, Verb] = {
    "roll": Verb(
        ("rolls", "rolled", "roll"),
        ("rollt", "gerollt", "ist"),
        ("катится", "покатился", "покатилась", "покатилось"),
        ("roule", "roulé", "a"),
        ("round",),
        goal=True,
        weight=3,
    ),
    "slide": Verb(
        ("slides", "slid", "slide"),
        ("rutscht", "gerutscht", "ist"),
        ("скользит", "скользнул", "скользнула", "скользнуло"),
        ("glisse", "glissé", "a"),
        ("round", "thing"),
        goal=True,
        weight=2,
    ),
    "move": Verb(
        ("moves", "moved", "move"),
        ("bewegt", "bewegt", "hat"),
        ("движется", "двинулся", "двинулась", "двинулось"),
        ("déplace", "déplacé", "est"),
        MOVERS,
        goal=True,
        de_reflexive=True,
        fr_reflexive=True,
        perfect=False,
        weight=2,
    ),
    "jump": Verb(
        ("jumps", "jumped", "jump"),
        ("springt", "gesprungen", "ist"),
        ("прыгает", "прыгнул", "прыгнула", "прыгнуло"),
        ("saute", "sauté", "a"),
        ("animal",),
        goal=True,
        weight=2,
    ),
    "run": Verb(
        ("runs", "run", "run"),
        ("läuft", "gelaufen", "ist"),
        ("бежит", "побежал", "побежала", "побежало"),
        ("court", "couru", "a"),
        ("animal",),
        goal=True,
        weight=2,
    ),
    "fly": Verb(
        ("flies", "flown", "fly"),
        ("fliegt", "geflogen", "ist"),
        ("летит", "полетел", "полетела", "полетело"),
        ("vole", "volé", "a"),
        ("flyer",),
        goal=True,
        weight=2,
    ),
    "swim": Verb(
        ("swims", "swum", "swim"),
        ("schwimmt", "geschwommen", "ist"),
        ("плывёт", "поплыл", "поплыла", "поплыло"),
        ("nage", "nagé", "a"),
        ("swimmer",),
        goal=True,
        weight=2,
    ),
    "fall": Verb(
        ("falls", "fallen", "fall"),
        ("fällt", "gefallen", "ist"),
        ("падает", "упал", "упала", "упало"),
        ("tombe", "tombé", "est"),
        ("round", "thing", "static"),
    ),
    "sleep": Verb(
        ("sleeps", "slept", "sleep"),
        ("schläft", "geschlafen", "hat"),
        ("спит", "спал", "спала", "спало"),
        ("dort", "dormi", "a"),
        ("animal", "flyer", "swimmer"),
    ),
    "lie": Verb(
        ("lies", "lain", "lie"),
        ("liegt", "gelegen", "hat"),
        ("лежит", "лежал", "лежала", "лежало"),
        ("repose", "reposé", "a"),
        ("round", "thing", "static"),
        perfect=False,
    ),
    "open": Verb(
        ("opens", "opened", "open"),
        ("öffnet", "geöffnet", "hat"),
        ("открывается", "открылся", "открылась", "открылось"),
        ("ouvre", "ouvert", "a"),
        ("building",),
    ),
    "close": Verb(
        ("closes", "closed", "close"),
        ("schließt", "geschlossen", "hat"),
        ("закрывается", "закрылся", "закрылась", "закрылось"),
        ("ferme", "fermé", "a"),
        ("building",),
    ),
    "push": Verb(
        ("pushes", "pushed", "push"),
        ("schiebt", "geschoben", "hat"),
        ("толкает", "толкнул", "толкнула", "толкнуло"),
        ("pousse", "poussé", "a"),
        AGENTS,
        transitive=True,
        goal=True,
        weight=3,
    ),
    "hit": Verb(
        ("hits", "hit", "hit"),
        ("trifft", "getroffen", "hat"),
        ("ударяет", "ударил", "ударила", "ударило"),
        ("frappe", "frappé", "a"),
        AGENTS,
        transitive=True,
        weight=3,
    ),
    "touch": Verb(
        ("touches", "touched", "touch"),
        ("berührt", "berührt", "hat"),
        ("касается", "коснулся", "коснулась", "коснулось"),
        ("touche", "touché", "a"),
        AGENTS,
        transitive=True,
        ru_object=("", "gen"),
        weight=2,
    ),
    "follow": Verb(
        ("follows", "followed", "follow"),
        ("folgt", "gefolgt", "ist"),
        ("следует", "последовал", "последовала", "последовало"),
        ("suit", "suivi", "a"),
        AGENTS,
        transitive=True,
        de_case="dat",
        ru_object=("за", "ins"),
        weight=2,
    ),
    "knock_over": Verb(
        ("knocks", "knocked", "knock"),
        ("stößt", "umgestoßen", "hat"),
        ("опрокидывает", "опрокинул", "опрокинула", "опрокинуло"),
        ("renverse", "renversé", "a"),
        AGENTS,
        transitive=True,
        de_particle="um",
        en_particle="over",
        weight=2,
    ),
    "lift": Verb(
        ("lifts", "lifted", "lift"),
        ("hebt", "angehoben", "hat"),
        ("поднимает", "поднял", "подняла", "подняло"),
        ("soulève", "soulevé", "a"),
        ("machine", "name"),
        transitive=True,
        de_particle="an",
    ),
}

# Relations: English words, German preposition words (all with the dative), Russian preposition
# words + case, French words (the last "de" contracts with the article).
RELATIONS: dict[
    str, tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], str], tuple[str, ...]]
] = {
    "left": (
        ("to", "the", "left", "of"),
        ("links", "neben"),
        (("слева", "от"), "gen"),
        ("à", "gauche", "de"),
    ),
    "right": (
        ("to", "the", "right", "of"),
        ("rechts", "neben"),
        (("справа", "от"), "gen"),
        ("à", "droite", "de"),
    ),
    "above": (("above",), ("über",), (("над",), "ins"), ("au-dessus", "de")),
    "below": (("below",), ("unter",), (("под",), "ins"), ("sous",)),
    "near": (("near",), ("neben",), (("рядом", "с"), "ins"), ("près", "de")),
}

# Fronted adverbs (German verb-second inversion) and parenthetical manner adverbs.
ADVERBS: dict[str, tuple[str, str, str, str]] = {
    "then": ("then", "dann", "потом", "puis"),
    "now": ("now", "jetzt", "теперь", "maintenant"),
    "suddenly": ("suddenly", "plötzlich", "вдруг", "soudain"),
}
MANNER: dict[str, tuple[str, str, str, str]] = {
    "slowly": ("slowly", "langsam", "медленно", "lentement"),
    "quickly": ("quickly", "schnell", "быстро", "vite"),
}
CONJUNCTIONS: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    "when": ("when", "wenn", ("когда",), ("quand",)),
    "because": ("because", "weil", ("потому", "что"), ("parce", "que")),
    "while": ("while", "während", ("пока",), ("pendant", "que")),
}

# Names: English, German, Russian, French, gender, weight (the long tail is rare).
NAMES: dict[str, tuple[str, str, str, str, str, float]] = {
    "Tom": ("Tom", "Tom", "Том", "Tom", "m", 3),
    "Anna": ("Anna", "Anna", "Анна", "Anna", "f", 3),
    "Max": ("Max", "Max", "Макс", "Max", "m", 2),
    "Lena": ("Lena", "Lena", "Лена", "Léna", "f", 2),
    "Bartholomew": ("Bartholomew", "Bartholomäus", "Варфоломей", "Barthélemy", "m", 0.03),
    "Ottilie": ("Ottilie", "Ottilie", "Оттилия", "Odile", "f", 0.03),
    "Ignatius": ("Ignatius", "Ignatius", "Игнатий", "Ignace", "m", 0.03),
    "Cordelia": ("Cordelia", "Cordelia", "Корделия", "Cordélia", "f", 0.03),
    "Leopold": ("Leopold", "Leopold", "Леопольд", "Léopold", "m", 0.03),
    "Wilhelmina": ("Wilhelmina", "Wilhelmine", "Вильгельмина", "Guillemette", "f", 0.03),
    "Quentin": ("Quentin", "Quentin", "Квентин", "Quentin", "m", 0.03),
    "Archibald": ("Archibald", "Archibald", "Арчибальд", "Archibald", "m", 0.03),
    "Philippa": ("Philippa", "Philippa", "Филиппа", "Philippine", "f", 0.03),
    "Zenobia": ("Zenobia", "Zenobia", "Зенобия", "Zénobie", "f", 0.03),
}
SAY = ("says", "sagt", "говорит", "dit")
LOOK = ("look", "schau", "смотри", "regarde")

# Distances for "N metres from": English number, German/Russian/French (decimal comma).
MEASURES: tuple[str, ...] = ("1.5", "2", "2.5", "3", "3.5", "4", "4.5", "7", "10", "12", "20")
