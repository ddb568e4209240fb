"""The workshop's results.log, line by line: what each line says, and who fills it."""

from functools import cache

from bigrams.experiment import recipe
from claimlog import Kind, Line, Log, Quantity, Template

COUNT = Kind.COUNT
DATA = Template(
    "  names = {names}, shortest = {shortest}, longest = {longest} characters",
    {
        "names": Quantity("names", COUNT),
        "shortest": Quantity("shortest name", COUNT),
        "longest": Quantity("longest name", COUNT),
    },
)
BIGRAMS = Template(
    "  bigrams = {bigrams}, distinct = {distinct}",
    {"bigrams": Quantity("bigrams", COUNT), "distinct": Quantity("distinct bigrams", COUNT)},
)
TOP = Template(
    "  most common: {pair} ({times} times)", {"times": Quantity("most common bigram", COUNT)}
)
COUNTED = Template(
    "  log likelihood = {ll}, average nll = {nll}",
    {
        "ll": Quantity("log likelihood", Kind.REAL, ".4f"),
        "nll": Quantity("average negative log likelihood", Kind.LOSS, ".4f"),
    },
)
NET = Template(
    "[3] a net of one layer, 27 -> 27, full batch: {steps} steps, lr {lr}",
    {"steps": Quantity("steps", Kind.SETTING), "lr": Quantity("learning rate", Kind.SETTING)},
)
LEARNED = Template(
    "  loss before the first step = {first}, before the last = {last}",
    {
        "first": Quantity("loss before the first step", Kind.LOSS, ".4f"),
        "last": Quantity("loss before the last step", Kind.LOSS, ".4f"),
    },
)


@cache
def log() -> Log:
    """Every line of results.log, in order."""
    r = recipe()
    return Log(
        (
            Line.words("Bigrams over 32,033 names -- experiment log"),
            Line.versions(),
            Line.words("[1] the data", "section"),
            Line.by_claim(DATA, "names"),
            Line.by_claim(BIGRAMS, "bigrams"),
            Line.by_claim(TOP, "most common"),
            Line.words("[2] counting: P = (N + 1) / row sums", "section"),
            Line.by_claim(COUNTED, "counted"),
            Line.fixed(NET, "net", "section", steps=r.steps, lr=r.lr),
            Line.by_claim(LEARNED, "learned"),
        ),
        home="bigrams.log.log()",
    )
