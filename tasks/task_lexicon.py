"""Word lists for the `translate` demo task: a tiny English-to-French lexicon.

Every French noun and every pre-nominal adjective starts with a consonant (and not with "h"),
so the grammar never needs elision ("l'"), "cet", "bel" or "mon" before a feminine noun.
Each table is written as one entry a line and parsed at import time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Noun:
    """A countable noun: English singular/plural, French singular/plural, French gender."""

    en: str
    en_pl: str
    fr: str
    fr_pl: str
    gender: str  # "m" or "f"


@dataclass(frozen=True)
class Adjective:
    """An adjective with its four French forms; `pre` is True if it goes before the noun."""

    en: str
    m: str
    f: str
    m_pl: str
    f_pl: str
    pre: bool

    def french(self, gender: str, plural: bool) -> str:
        """The French form agreeing with a noun of this gender and number."""
        if gender == "m":
            return self.m_pl if plural else self.m
        return self.f_pl if plural else self.f


@dataclass(frozen=True)
class Verb:
    """A transitive verb in the present tense, third person singular and plural."""

    en: str
    en_pl: str
    fr: str
    fr_pl: str


@dataclass(frozen=True)
class Determiner:
    """A determiner: English singular and plural, French masculine, feminine and plural."""

    en: str
    en_pl: str
    fr_m: str
    fr_f: str
    fr_pl: str


_NOUNS = """
m dog dogs chien chiens;  m cat cats chat chats;  m horse horses cheval chevaux
m sparrow sparrows moineau moineaux;  m boat boats bateau bateaux;  m hat hats chapeau chapeaux
m cake cakes gâteau gâteaux;  m knife knives couteau couteaux;  m book books livre livres
m garden gardens jardin jardins;  m train trains train trains;  m pencil pencils crayon crayons
m cheese cheeses fromage fromages;  m glass glasses verre verres;  m boy boys garçon garçons
m king kings roi rois;  m wolf wolves loup loups;  m rabbit rabbits lapin lapins
m bike bikes vélo vélos;  m coat coats manteau manteaux;  m ball balls ballon ballons
m doctor doctors médecin médecins;  m neighbor neighbors voisin voisins
m pig pigs cochon cochons;  m lion lions lion lions;  m tiger tigers tigre tigres
m gift gifts cadeau cadeaux;  m game games jeu jeux;  m castle castles château châteaux
m brother brothers frère frères;  m father fathers père pères;  m bed beds lit lits
m bag bags sac sacs;  m pen pens stylo stylos;  m duck ducks canard canards
m piano pianos piano pianos;  m baker bakers boulanger boulangers;  m sailor sailors marin marins
m mirror mirrors miroir miroirs
f car cars voiture voitures;  f apple apples pomme pommes;  f chair chairs chaise chaises
f table tables table tables;  f box boxes boîte boîtes
f house houses maison maisons;  f girl girls fille filles;  f queen queens reine reines
f cow cows vache vaches;  f goat goats chèvre chèvres;  f window windows fenêtre fenêtres
f key keys clé clés;  f lamp lamps lampe lampes;  f bottle bottles bouteille bouteilles
f cup cups tasse tasses;  f spoon spoons cuillère cuillères;  f fork forks fourchette fourchettes
f shirt shirts chemise chemises;  f flower flowers fleur fleurs;  f banana bananas banane bananes
f pear pears poire poires;  f carrot carrots carotte carottes;  f city cities ville villes
f street streets rue rues;  f dress dresses robe robes;  f moon moons lune lunes
f letter letters lettre lettres;  f song songs chanson chansons;  f ring rings bague bagues
f plant plants plante plantes;  f candle candles bougie bougies
f sock socks chaussette chaussettes;  f mouse mice souris souris
f tomato tomatoes tomate tomates;  f sister sisters sœur sœurs;  f mother mothers mère mères
f woman women femme femmes;  f cherry cherries cerise cerises;  f guitar guitars guitare guitares
"""

# position (pre/post), English, then French m, f, m plural, f plural
_ADJECTIVES = """
post red rouge rouge rouges rouges;  post green vert verte verts vertes
post blue bleu bleue bleus bleues;  post black noir noire noirs noires
post white blanc blanche blancs blanches;  post yellow jaune jaune jaunes jaunes
post gray gris grise gris grises;  post pink rose rose roses roses
post purple violet violette violets violettes;  post round rond ronde ronds rondes
post hot chaud chaude chauds chaudes;  post cold froid froide froids froides
post heavy lourd lourde lourds lourdes;  post happy heureux heureuse heureux heureuses
post sad triste triste tristes tristes;  post strange étrange étrange étranges étranges
post clean propre propre propres propres;  post dirty sale sale sales sales
post empty vide vide vides vides;  post fast rapide rapide rapides rapides
post quiet calme calme calmes calmes;  post sick malade malade malades malades
post tired fatigué fatiguée fatigués fatiguées
post lazy paresseux paresseuse paresseux paresseuses
post curious curieux curieuse curieux curieuses;  post famous célèbre célèbre célèbres célèbres
pre small petit petite petits petites;  pre big grand grande grands grandes
pre beautiful beau belle beaux belles;  pre old vieux vieille vieux vieilles
pre young jeune jeune jeunes jeunes;  pre good bon bonne bons bonnes
pre bad mauvais mauvaise mauvais mauvaises;  pre pretty joli jolie jolis jolies
pre new nouveau nouvelle nouveaux nouvelles;  pre fat gros grosse gros grosses
"""

_VERBS = """
sees see voit voient;  eats eat mange mangent;  likes like aime aiment
watches watch regarde regardent;  finds find trouve trouvent;  carries carry porte portent
follows follow suit suivent;  washes wash lave lavent;  buys buy achète achètent
sells sell vend vendent;  hides hide cache cachent;  draws draw dessine dessinent
pushes push pousse poussent;  pulls pull tire tirent;  calls call appelle appellent
opens open ouvre ouvrent;  closes close ferme ferment;  breaks break casse cassent
bites bite mord mordent;  knows know connaît connaissent;  meets meet rencontre rencontrent
takes take prend prennent;  chooses choose choisit choisissent;  wants want veut veulent
has have a ont
"""

# English singular, English plural, French m, f, plural ("a" becomes "some"/"des" in the plural)
_DETERMINERS = """
the the le la les;  a some un une des;  this these ce cette ces;  my my mon ma mes
your your ton ta tes;  his his son sa ses;  her her son sa ses;  our our notre notre nos
their their leur leur leurs
"""

PREPOSITIONS: dict[str, str] = {
    "with": "avec",
    "without": "sans",
    "under": "sous",
    "behind": "derrière",
    "in": "dans",
    "on": "sur",
    "for": "pour",
}
"""English preposition -> French preposition (none of them contracts with a determiner)."""

CONJUNCTION = ("and", "et")


def _entries(table: str) -> list[list[str]]:
    """Split a table into entries (separated by newlines or ';'), each a list of fields."""
    return [e.split() for line in table.strip().splitlines() for e in line.split(";") if e.strip()]


NOUNS: dict[str, Noun] = {e[1]: Noun(e[1], e[2], e[3], e[4], e[0]) for e in _entries(_NOUNS)}
ADJECTIVES: dict[str, Adjective] = {
    e[1]: Adjective(e[1], e[2], e[3], e[4], e[5], e[0] == "pre") for e in _entries(_ADJECTIVES)
}
VERBS: dict[str, Verb] = {e[0]: Verb(*e) for e in _entries(_VERBS)}
DETERMINERS: dict[str, Determiner] = {e[0]: Determiner(*e) for e in _entries(_DETERMINERS)}


# ----------------------------------------------------------------------------- for fr_en: pronouns, être, avoir


@dataclass(frozen=True)
class Pronoun:
    """A subject pronoun: French, English, grammatical person ("1s" .. "3p") and gender (None: either)."""

    fr: str
    en: str
    person: str
    gender: str | None

    @property
    def plural(self) -> bool:
        return self.person.endswith("p")


# French, English, person, gender ("-": the speaker's or listeners' gender, either)
_PRONOUNS = """
je i 1s -;  tu you 2s -;  il he 3s m;  elle she 3s f
nous we 1p -;  vous you 2p -;  ils they 3p m;  elles they 3p f
"""

# person -> (French, English) present tense of être (to be) and avoir (to have); "je ai" is written "j'ai"
ETRE: dict[str, tuple[str, str]] = {
    "1s": ("suis", "am"), "2s": ("es", "are"), "3s": ("est", "is"),
    "1p": ("sommes", "are"), "2p": ("êtes", "are"), "3p": ("sont", "are"),
}  # fmt: skip
AVOIR: dict[str, tuple[str, str]] = {
    "1s": ("ai", "have"), "2s": ("as", "have"), "3s": ("a", "has"),
    "1p": ("avons", "have"), "2p": ("avez", "have"), "3p": ("ont", "have"),
}  # fmt: skip
J_AI = "j'ai"  # je + ai, elided: one French word for "i have"


@dataclass(frozen=True)
class Profession:
    """A profession after être, without an article in French: "je suis étudiant" = "i am a student"."""

    en: str
    en_pl: str
    m: str
    f: str
    m_pl: str
    f_pl: str

    def french(self, gender: str, plural: bool) -> str:
        if gender == "m":
            return self.m_pl if plural else self.m
        return self.f_pl if plural else self.f


# English singular, plural, then French m, f, m plural, f plural
_PROFESSIONS = """
student students étudiant étudiante étudiants étudiantes;  doctor doctors médecin médecin médecins médecins
teacher teachers professeur professeure professeurs professeures
baker bakers boulanger boulangère boulangers boulangères;  singer singers chanteur chanteuse chanteurs chanteuses
cook cooks cuisinier cuisinière cuisiniers cuisinières;  farmer farmers fermier fermière fermiers fermières
painter painters peintre peintre peintres peintres;  engineer engineers ingénieur ingénieure ingénieurs ingénieures
artist artists artiste artiste artistes artistes;  lawyer lawyers avocat avocate avocats avocates
nurse nurses infirmier infirmière infirmiers infirmières;  dancer dancers danseur danseuse danseurs danseuses
writer writers écrivain écrivaine écrivains écrivaines
"""

# adjectives (keys of ADJECTIVES) that describe a person after être: "elle est fatiguée" = "she is tired"
PERSON_ADJECTIVES = (
    "happy", "sad", "tired", "sick", "lazy", "curious", "famous", "quiet", "young", "old", "small", "big",
    "beautiful", "good", "bad", "pretty", "fat", "fast", "cold", "hot", "strange", "clean", "dirty", "heavy",
)  # fmt: skip

PRONOUNS: list[Pronoun] = [Pronoun(e[0], e[1], e[2], None if e[3] == "-" else e[3]) for e in _entries(_PRONOUNS)]
PROFESSIONS: dict[str, Profession] = {e[0]: Profession(*e) for e in _entries(_PROFESSIONS)}
