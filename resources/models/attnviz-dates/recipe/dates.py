# SPDX-License-Identifier: GPL-3.0-or-later
"""Human-written dates and their ISO forms: the task of attnviz-dates.

Every example is a calendar date between 1900-01-01 and 2099-12-31 written in one of FORMATS, in
as-written, lower or upper case, with its target "YYYY-MM-DD". Each source character is labelled
with the field it spells (year, month, day; anything else, the weekday included, is "other"), so
that an evaluation can ask which field a cross-attention row reads.

Conventions: numeric dates are written day first, dotted ("03.03.1998" is 3 March 1998, the
European order: the dots say so, and no slashed form is generated); two-digit years ("3rd Mar 98")
are drawn only for dates of 1950-2049 and read 50-99 as 19yy, 00-49 as 20yy.

The split is by date: a seeded permutation of all 73,049 days puts HELD_OUT of them aside; no
training example is ever written from a held-out date, in any format.
"""
import datetime
import random

FIRST = datetime.date(1600, 1, 1)
LAST = datetime.date(2399, 12, 31)
HELD_OUT = 10000
SPLIT_SEED = 1998

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
ORDINAL_WORDS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                 "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
                 "eighteenth", "nineteenth", "twentieth", "twenty-first", "twenty-second", "twenty-third",
                 "twenty-fourth", "twenty-fifth", "twenty-sixth", "twenty-seventh", "twenty-eighth",
                 "twenty-ninth", "thirtieth", "thirty-first"]


def ordinal(n):
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}" + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _y(d):
    return (str(d.year), "year")


def _m(d):
    return (MONTHS[d.month - 1], "month")


def _mabbr(d):
    return (MONTHS[d.month - 1][:3], "month")


def _o(t):
    return (t, "other")


# name -> (parts of a date: a list of (text, field)), whether it needs a date of 1950-2049
FORMATS = {
    "the_3rd_of_march_1998": (lambda d: [_o("the "), (ordinal(d.day), "day"), _o(" of "), _m(d), _o(", "), _y(d)], False),
    "march_3_1998": (lambda d: [_m(d), _o(" "), (str(d.day), "day"), _o(", "), _y(d)], False),
    "3_march_1998": (lambda d: [(str(d.day), "day"), _o(" "), _m(d), _o(" "), _y(d)], False),
    "tuesday_3_march_1998": (lambda d: [_o(WEEKDAYS[d.weekday()] + ", "), (str(d.day), "day"), _o(" "), _m(d),
                                        _o(" "), _y(d)], False),
    "3rd_mar_98": (lambda d: [(ordinal(d.day), "day"), _o(" "), _mabbr(d), _o(" "), (f"{d.year % 100:02d}", "year")],
                   True),
    "mar_3rd_1998": (lambda d: [_mabbr(d), _o(" "), (ordinal(d.day), "day"), _o(", "), _y(d)], False),
    "03.03.1998": (lambda d: [(f"{d.day:02d}", "day"), _o("."), (f"{d.month:02d}", "month"), _o("."), _y(d)], False),
    "the_third_of_march_1998": (lambda d: [_o("the "), (ORDINAL_WORDS[d.day - 1], "day"), _o(" of "), _m(d), _o(" "),
                                           _y(d)], False),
}
CASES = ("as written", "lower", "upper")
CASE_WEIGHTS = (0.6, 0.2, 0.2)


def all_days():
    n = (LAST - FIRST).days + 1
    return [FIRST + datetime.timedelta(days=i) for i in range(n)]


def split():
    """(training dates, held-out dates), both sorted."""
    days = all_days()
    order = list(range(len(days)))
    random.Random(SPLIT_SEED).shuffle(order)
    held = sorted(order[:HELD_OUT])
    train = sorted(order[HELD_OUT:])
    return [days[i] for i in train], [days[i] for i in held]


def two_digit_ok(d):
    return 1950 <= d.year <= 2049


def write(d, fmt, case):
    """(source text, target text, the field of each source character)."""
    parts, _ = FORMATS[fmt][0](d), FORMATS[fmt][1]
    text = "".join(t for t, _ in parts)
    fields = [f for t, f in parts for _ in t]
    if case == "lower":
        text = text.lower()
    elif case == "upper":
        text = text.upper()
    assert len(text) == len(fields)
    return text, d.isoformat(), fields


def example(rng, dates, dates_two_digit, fmt=None, case=None):
    """One example drawn with `rng`: (format, case, source, target, fields)."""
    fmt = fmt or rng.choice(list(FORMATS))
    case = case or rng.choices(CASES, CASE_WEIGHTS)[0]
    pool = dates_two_digit if FORMATS[fmt][1] else dates
    d = pool[rng.randrange(len(pool))]
    return (fmt, case) + write(d, fmt, case)


def held_out_set(per_format=400, seed=7):
    """The evaluation set: for every format, `per_format` distinct held-out dates, each in a drawn case."""
    _, held = split()
    rng = random.Random(seed)
    out = []
    for fmt, (_, two) in FORMATS.items():
        pool = [d for d in held if two_digit_ok(d)] if two else held
        for d in rng.sample(pool, min(per_format, len(pool))):
            case = rng.choices(CASES, CASE_WEIGHTS)[0]
            out.append((fmt, case) + write(d, fmt, case))
    return out


def tokenizer_corpus():
    """Lines the SentencePiece model is trained on: every format in every case on a spread of dates,
    and ISO targets (so that every character either side can meet is in the vocabulary)."""
    train, _ = split()
    rng = random.Random(11)
    lines = []
    for fmt in FORMATS:
        for case in CASES:
            for d in rng.sample([x for x in train if two_digit_ok(x)], 60):
                lines.append(write(d, fmt, case)[0])
    lines += [d.isoformat() for d in rng.sample(train, 400)]
    return lines


if __name__ == "__main__":
    rng = random.Random(0)
    tr, held = split()
    print(len(tr), "training dates,", len(held), "held out")
    for fmt in FORMATS:
        for case in CASES:
            e = example(rng, tr, [d for d in tr if two_digit_ok(d)], fmt, case)
            print(f"{e[0]:26s} {e[1]:10s} {e[2]!r:45s} -> {e[3]}")
