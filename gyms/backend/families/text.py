"""Text and data-cleaning requests: usernames, passwords, slugs, truncation, card masking,
file sizes and e-mail lists."""

from __future__ import annotations

import random
import string
from typing import Any

from colbench.gyms.backend.families.base import (
    Family,
    Param,
    Values,
    decimals_param,
    register,
    span,
)

SYMBOL_CHARS = {"underscores": "_", "dots": ".", "hyphens": "-"}
WORDS = ("apple", "river", "quick", "brown", "stone", "light", "north", "ember", "cloud",
         "maple", "tiger", "ocean", "pixel", "lunar", "cedar")


@register
class ValidateUsername(Family):
    name = "validate_username"
    function_names = ("validate_username", "check_username", "username_problem")
    args = ("username",)
    covers = ("eligibility", "thresholds", "errors")
    requests = (
        "Our sign-up form needs a username check. Write a function that returns 'ok' or the "
        "problem: 'too short', 'too long', 'must start with a letter' or 'invalid characters'.",
        "Could you write a username validator? It takes the username string and answers 'ok', "
        "'too short', 'too long', 'must start with a letter' or 'invalid characters'.",
        "I need to validate usernames on my site with our rules. Return 'ok' when it's fine, "
        "otherwise a short reason ('too short', 'too long', 'must start with a letter', "
        "'invalid characters').",
    )
    params = (
        Param.number("min_len", "What is the minimum length?", ("minimum", "shortest", "short"),
                     3, span(4, 8, 1), "Usernames need at least {value} characters."),
        Param.number("max_len", "What is the maximum length?", ("maximum", "longest", "long"),
                     20, span(10, 32, 1, skip=(20,)), "Usernames can have at most {value} characters."),
        Param.items("allowed_symbols", "Which symbols are allowed besides letters and digits?",
                    ("symbols", "allowed", "characters"), ["underscores"],
                    ("underscores", "dots", "hyphens"),
                    "Besides letters and digits, {value} are allowed.", size=(1, 2)),
        Param.flag("must_start_letter", "Must a username start with a letter?",
                   ("start", "first character", "begin"), False,
                   "Yes, the first character must be a letter.",
                   "No, it can start with any allowed character."),
        Param.flag("lowercase_only", "Are capital letters allowed?",
                   ("capital", "uppercase", "lowercase"), False,
                   "Only lowercase letters are allowed, capitals count as invalid characters.",
                   "Capital letters are fine, they are not a problem."),
    )

    def accept(self, v: Values) -> bool:
        return v.min_len < v.max_len

    def code(self, v: Values, fn: str) -> str:
        allowed = "".join(SYMBOL_CHARS[s] for s in v.allowed_symbols)
        letters = "ch.islower() or ch.isdigit()" if v.lowercase_only else "ch.isalnum()"
        start = ('    if not username[0].isalpha():\n'
                 '        return "must start with a letter"\n' if v.must_start_letter else "")
        return f'''
def {fn}(username):
    if len(username) < {v.min_len!r}:
        return "too short"
    if len(username) > {v.max_len!r}:
        return "too long"
{start}    for ch in username:
        if not ({letters} or ch in {allowed!r}):
            return "invalid characters"
    return "ok"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def name(n: int, first: str = "") -> str:
            body = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))
            return (first + body)[:n] if first else body

        lo, hi = v.min_len, v.max_len
        sym = SYMBOL_CHARS[v.allowed_symbols[0]]
        return [(name(lo - 1, "a"),), (name(lo, "b"),), (name(hi, "c"),), (name(hi + 1, "d"),),
                ("7" + name(lo + 1, "x"),), ("ab" + sym + name(lo, "q"),), ("ab.cd-ef_" + name(2),),
                ("Mixed" + name(lo, "z"),), ("_" + name(lo + 1, "k"),), ("user name",)]


@register
class PasswordStrength(Family):
    name = "password_strength"
    function_names = ("password_strength", "rate_password", "check_password")
    args = ("password",)
    covers = ("thresholds", "eligibility", "branches")
    requests = (
        "Write a password strength meter for our sign-up page: it takes a password and returns "
        "'weak', 'medium' or 'strong' according to our policy.",
        "Could you rate passwords as 'weak', 'medium' or 'strong'? I have specific rules in "
        "mind.",
        "I need a function that grades a password string as 'weak', 'medium' or 'strong'.",
    )
    params = (
        Param.number("min_length", "How long must a password be to not be weak?",
                     ("weak", "minimum", "how long"), 8, span(6, 12, 1, skip=(8,)),
                     "Anything shorter than {value} characters is weak."),
        Param.number("strong_length", "How long must a strong password be?",
                     ("strong", "long enough"), 12, span(10, 20, 1, skip=(12,)),
                     "A strong password has at least {value} characters."),
        Param.items("required_classes", "What must a strong password contain?",
                    ("contain", "kinds", "characters", "classes"), ["digit"],
                    ("uppercase letter", "lowercase letter", "digit", "symbol"),
                    "A strong password must contain at least one {value}.", size=(1, 3)),
        Param.flag("reject_common", "Does containing the word 'password' matter?",
                   ("password", "common", "word"), False,
                   "Anything containing the word password is weak, whatever else it has.",
                   "No, the word password doesn't matter."),
    )

    def accept(self, v: Values) -> bool:
        return v.min_length < v.strong_length

    def code(self, v: Values, fn: str) -> str:
        checks = {"uppercase letter": "any(c.isupper() for c in password)",
                  "lowercase letter": "any(c.islower() for c in password)",
                  "digit": "any(c.isdigit() for c in password)",
                  "symbol": "any(not c.isalnum() for c in password)"}
        has = " and ".join(checks[c] for c in v.required_classes)
        common = ('    if "password" in password.lower():\n        return "weak"\n'
                  if v.reject_common else "")
        return f'''
def {fn}(password):
{common}    if len(password) < {v.min_length!r}:
        return "weak"
    if len(password) >= {v.strong_length!r} and {has}:
        return "strong"
    return "medium"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def pw(n: int, pools: str) -> str:
            chars = {"u": string.ascii_uppercase, "l": string.ascii_lowercase,
                     "d": string.digits, "s": "!@#$%&*?"}
            out = [rng.choice(chars[p]) for p in pools]
            while len(out) < n:
                out.append(rng.choice(chars[rng.choice(pools)]))
            return "".join(out[:n])

        lo, st = v.min_length, v.strong_length
        return [(pw(lo - 1, "uld"),), (pw(lo, "l"),), (pw(st, "ulds"),), (pw(st - 1, "ulds"),),
                (pw(st + 2, "l"),), (pw(st + 2, "ld"),), (pw(st + 1, "ul"),), (pw(st, "uls"),),
                ("MyPassword2024!xyz",), (pw(st + 3, "ud"),)]


@register
class MakeSlug(Family):
    name = "make_slug"
    function_names = ("make_slug", "slugify", "url_slug")
    args = ("title",)
    covers = ("branches", "thresholds", "defaults")
    requests = (
        "My blog needs URL slugs. Write a function that turns a post title into the slug we put "
        "in the address.",
        "Could you write a slugify function for article titles? Punctuation should go away and "
        "words get joined.",
        "I need to make a URL-friendly slug out of a title string, following my blog's style.",
    )
    params = (
        Param.choice("separator", "What goes between the words?", ("between", "separator",
                     "join"), "-",
                     {"-": ("hyphens", "hyphen", "dashes"), "_": ("underscores", "underscore"),
                      ".": ("dots", "dot")},
                     "Join the words with {value}."),
        Param.flag("lowercase", "Should the slug be lowercased?", ("lowercase", "capitals",
                   "case"), True, "Everything is lowercased.",
                   "Keep the original capitals, do not lowercase."),
        Param.items("stop_words", "Are some words left out?", ("left out", "skip", "words"),
                    [], ("a", "an", "the", "and", "of", "to", "in"),
                    "Leave out the words {value}.", size=(1, 3), quoted=True),
        Param.number("max_length", "Is there a maximum slug length?",
                     ("maximum", "length", "long"), 0, span(15, 60, 5),
                     "Slugs are cut to at most {value} characters."),
    )

    def code(self, v: Values, fn: str) -> str:
        lower = "    words = [w.lower() for w in words]\n" if v.lowercase else ""
        cut = (f"    slug = slug[:{v.max_length!r}].strip({v.separator!r})\n"
               if v.max_length else "")
        return f'''
def {fn}(title):
    cleaned = "".join(ch if ch.isalnum() else " " for ch in title)
    words = [w for w in cleaned.split() if w.lower() not in {v.stop_words!r}]
{lower}    slug = {v.separator!r}.join(words)
{cut}    return slug
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        fillers = ["a", "an", "the", "and", "of", "to", "in"]

        def title(n: int) -> str:
            words = []
            for i in range(n):
                w = rng.choice(fillers) if i % 2 == 1 else rng.choice(WORDS)
                words.append(w.capitalize() if rng.random() < 0.5 else w)
            return " ".join(words) + rng.choice(("", "!", "?", ": part two"))

        return [(title(rng.randint(3, 9)),) for _ in range(8)] + [
            ("The Art of War",), ("Hello, World: A Guide to the Stars and Planets of the Sky",)]


@register
class TruncateText(Family):
    name = "truncate_text"
    function_names = ("truncate_text", "shorten", "preview_text")
    args = ("text", "limit")
    covers = ("thresholds", "branches", "defaults")
    requests = (
        "I show previews of long comments. Write a function that shortens a text to a given "
        "length limit, marking that it was cut. Short texts stay as they are.",
        "Could you write a truncate function: text and a maximum length in, a preview out?",
        "I need to cut long strings down for display, with a marker at the end when something "
        "was removed.",
    )
    params = (
        Param.choice("ellipsis", "What marker goes at the end of a cut text?",
                     ("marker", "end", "ellipsis"), "...",
                     {"...": ("three dots", "..."), "…": ("a single ellipsis character", "…"),
                      " [more]": ("a space and [more]", "[more]"),
                      " »": ("a space and a » sign", "»"),
                      "~": ("a tilde", "tilde", "~")},
                     "End a cut text with {value}.", options=("...", "…", " [more]", " »", "~")),
        Param.flag("count_marker", "Does the marker count toward the length limit?",
                   ("count", "toward", "limit"), False,
                   "The marker counts toward the limit.",
                   "The marker does not count toward the limit."),
        Param.flag("whole_words", "Should it cut at a word boundary?",
                   ("word", "boundary", "whole words"), False,
                   "Cut at the end of the last whole word.",
                   "Cut in the middle of a word if needed, not at word boundaries."),
        Param.number("slack", "Can a text go a little over the limit before it is cut?",
                     ("over the limit", "a little", "slack"), 0, span(2, 6, 1),
                     "Texts up to {value} characters over the limit are left alone."),
        Param.flag("strip_punctuation", "Is punctuation right before the marker removed?",
                   ("punctuation", "comma", "before the marker"), False,
                   "Commas, periods and other punctuation right before the marker are removed.",
                   "Punctuation before the marker is not removed."),
    )

    def code(self, v: Values, fn: str) -> str:
        room = f"limit - {len(v.ellipsis)}" if v.count_marker else "limit"
        strip = ('    cut = cut.rstrip(",.;:!?-")\n' if v.strip_punctuation else "")
        words = ('    if text[room:room + 1] not in ("", " ") and " " in cut:\n'
                 '        cut = cut[:cut.rindex(" ")]\n' if v.whole_words else "")
        return f'''
def {fn}(text, limit):
    if len(text) <= limit + {v.slack!r}:
        return text
    room = max({room}, 0)
    cut = text[:room]
{words}    cut = cut.rstrip()
{strip}    return cut + {v.ellipsis!r}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def sentence(n: int) -> str:
            return " ".join(rng.choice(WORDS) + rng.choice(("", "", ",", ".")) for _ in range(n))

        out = []
        for i in range(8):
            s = sentence(rng.randint(4, 10))
            if i < 2:  # just over the limit, inside any slack
                out.append((s, len(s) - rng.randint(1, 3)))
            else:
                out.append((s, rng.randint(8, max(9, len(s) - 9))))
        return out + [("short", 10), ("exactly ten", 11)]


@register
class MaskCard(Family):
    name = "mask_card"
    function_names = ("mask_card", "mask_card_number", "hide_card_digits")
    args = ("card_number",)
    covers = ("branches", "errors", "defaults")
    requests = (
        "Receipts shouldn't show full card numbers. Write a function that masks a card number "
        "string (it may contain spaces or dashes).",
        "Could you write a card-number masker for our payment logs?",
        "I need to hide most digits of a credit card number before displaying it.",
    )
    params = (
        Param.number("visible_last", "How many digits stay visible at the end?",
                     ("end", "last", "visible"), 4, (1, 2, 3, 5, 6),
                     "The last {value} digits stay visible."),
        Param.number("visible_first", "Do any digits stay visible at the start?",
                     ("start", "first", "beginning"), 0, (1, 2, 4, 6),
                     "The first {value} digits stay visible too."),
        Param.text("mask_char", "What character replaces the hidden digits?",
                   ("character", "replace", "symbol"), "*", ("X", "#", "•"),
                   "Hidden digits are replaced with {value}.", quoted=True),
        Param.flag("group_digits", "Should the result be grouped in blocks of four?",
                   ("group", "blocks", "spaces"), False,
                   "Group the result in blocks of four separated by spaces.",
                   "Do not add spaces, give one unbroken string."),
        Param.text("invalid_label", "What should it return for something that isn't a valid "
                   "card number?", ("invalid", "valid", "bad"), "invalid",
                   ("error", "bad card", "unreadable"),
                   "If it is not a card number, return {value}.", quoted=True),
    )

    def code(self, v: Values, fn: str) -> str:
        group = ('    masked = " ".join(masked[i:i + 4] for i in range(0, len(masked), 4))\n'
                 if v.group_digits else "")
        return f'''
def {fn}(card_number):
    digits = card_number.replace(" ", "").replace("-", "")
    if not digits.isdigit() or len(digits) < 12:
        return {v.invalid_label!r}
    hidden = len(digits) - {v.visible_first!r} - {v.visible_last!r}
    masked = digits[:{v.visible_first!r}] + {v.mask_char!r} * hidden + digits[len(digits) - {v.visible_last!r}:]
{group}    return masked
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def card(n: int) -> str:
            return "".join(rng.choice(string.digits) for _ in range(n))

        c16 = card(16)
        spaced = " ".join(c16[i:i + 4] for i in range(0, 16, 4))
        c15 = card(15)
        return [(card(16),), (spaced,), (c15[:4] + "-" + c15[4:10] + "-" + c15[10:],),
                (card(13),), (card(19),), ("1234",), ("4111-abcd-1111-1111",), (card(16),),
                ("",), (card(12),)]


@register
class FileSizeLabel(Family):
    name = "file_size_label"
    function_names = ("human_size", "format_file_size", "size_label")
    args = ("num_bytes",)
    covers = ("units", "rounding", "errors")
    requests = (
        "My file browser shows sizes like people read them. Write a function that turns a "
        "number of bytes into a short label with a unit.",
        "Could you format byte counts for display, picking a sensible unit?",
        "I need a human-readable file size from a byte count, the way our app shows it.",
    )
    params = (
        Param.choice("kilobyte_size", "Is a kilobyte 1000 or 1024 bytes?", ("kilobyte", "1000", "1024"),
                     1024, {1024: ("1024 bytes", "1024"), 1000: ("1000 bytes", "1000")},
                     "A kilobyte is {value} here.", options=(1000, 1024)),
        Param.choice("unit_style", "Which unit names do you use?", ("unit names", "units",
                     "KB", "KiB"), "short",
                     {"short": ("KB, MB and GB", "KB"), "iec": ("KiB, MiB and GiB", "KiB")},
                     "We write units as {value}.", options=("short", "iec")),
        decimals_param(what="the number", naive=1, options=(0, 2, 3)),
        Param.flag("trim_zeros", "Are trailing zeros after the decimal point dropped?",
                   ("trailing zeros", "zeros", "dropped"), False,
                   "Trailing zeros after the decimal point are dropped, and a bare point too.",
                   "Trailing zeros are not dropped."),
        Param.flag("space_before_unit", "Is there a space between the number and the unit?",
                   ("space",), True, "Put a space between the number and the unit.",
                   "No space between the number and the unit."),
        Param.text("invalid_label", "What should it return for a negative size?",
                   ("negative", "invalid"), "invalid", ("n/a", "error", "unknown size"),
                   "For a negative size, return {value}.", quoted=True),
    )

    def code(self, v: Values, fn: str) -> str:
        units = (["B", "KB", "MB", "GB", "TB"] if v.unit_style == "short"
                 else ["B", "KiB", "MiB", "GiB", "TiB"])
        sep = " " if v.space_before_unit else ""
        trim = ('    if "." in number:\n        number = number.rstrip("0").rstrip(".")\n'
                if v.trim_zeros else "")
        return f'''
def {fn}(num_bytes):
    if num_bytes < 0:
        return {v.invalid_label!r}
    units = {units!r}
    size = float(num_bytes)
    index = 0
    while size >= {v.kilobyte_size!r} and index < len(units) - 1:
        size = size / {v.kilobyte_size!r}
        index = index + 1
    if index == 0:
        return str(num_bytes) + {sep + "B"!r}
    number = "%.{v.decimals}f" % size
{trim}    return number + {sep!r} + units[index]
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        return [(0,), (rng.randint(1, 999),), (1000,), (1536,), (rng.randint(1100, 900000),),
                (rng.randint(1_100_000, 900_000_000),), (1_000_000,), (1_048_576,),
                (rng.randint(2 * 10**9, 8 * 10**12),), (-1,)]


@register
class DedupeEmails(Family):
    name = "dedupe_emails"
    function_names = ("dedupe_emails", "unique_emails", "clean_mailing_list")
    args = ("emails",)
    covers = ("ordering", "branches", "defaults")
    requests = (
        "My mailing list has duplicates. Write a function that takes a list of e-mail addresses "
        "and returns the list without duplicates, according to how we decide two addresses "
        "are the same.",
        "Could you de-duplicate a list of email addresses for me? I have a few rules about "
        "which addresses count as the same person.",
        "I need to clean a list of e-mails so each person appears once.",
    )
    params = (
        Param.flag("case_insensitive", "Do addresses that differ only in capitals count as the "
                   "same?", ("capitals", "case", "uppercase"), True,
                   "Addresses that differ only in capital letters are the same.",
                   "Capital letters matter, so Bob@x.com and bob@x.com are not the same."),
        Param.flag("plus_tags", "Is anything after a plus sign ignored?",
                   ("plus", "tag", "+"), False,
                   "Anything after a plus sign in the name part is ignored.",
                   "A plus sign is not special."),
        Param.flag("gmail_dots", "Are dots ignored in gmail.com addresses?",
                   ("dots", "gmail", "dot"), False,
                   "For gmail.com addresses, dots in the name part are ignored.",
                   "Dots are not ignored anywhere."),
        Param.choice("spelling_kept", "When there are duplicates, which spelling do you keep?",
                     ("which spelling", "spelling_kept", "duplicates"), "first",
                     {"first": ("the first spelling seen", "first"),
                      "last": ("the last spelling seen", "last")},
                     "Keep {value}.", options=("first", "last")),
        Param.flag("sort_output", "Should the result be sorted?", ("sorted", "sort", "order"),
                   False, "Return them sorted alphabetically.",
                   "Keep them in the order they first appear, not sorted."),
        Param.number("limit", "Is there a maximum number of addresses to return?",
                     ("maximum number", "at most", "limit"), 0, span(3, 8, 1),
                     "Return at most {value} addresses."),
    )

    def code(self, v: Values, fn: str) -> str:
        norm = []
        if v.case_insensitive:
            norm.append("        key = key.lower()")
        if v.plus_tags or v.gmail_dots:
            norm.append('        name, _, domain = key.partition("@")')
            if v.plus_tags:
                norm.append('        name = name.split("+")[0]')
            if v.gmail_dots:
                norm.append('        if domain.lower() == "gmail.com":')
                norm.append('            name = name.replace(".", "")')
            norm.append('        key = name + "@" + domain')
        keep = ("        if key not in kept:\n            kept[key] = email"
                if v.spelling_kept == "first" else "        kept[key] = email")
        result = "sorted(kept.values())" if v.sort_output else "list(kept.values())"
        if v.limit:
            result += f"[:{v.limit!r}]"
        lines = "\n".join(norm)
        return f'''
def {fn}(emails):
    kept = {{}}
    for email in emails:
        key = email.strip()
{lines}
{keep}
    return {result}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        domains = ("gmail.com", "example.org", "mail.net")
        out = []
        for _ in range(10):
            people = rng.sample(WORDS, rng.randint(3, 5))
            emails = []
            for p in people:
                d = rng.choice(domains)
                emails.append(f"{p}@{d}")
                variant = rng.choice(("upper", "plus", "dot", "same", "none"))
                if variant == "upper":
                    emails.append(f"{p.capitalize()}@{d}")
                elif variant == "plus":
                    emails.append(f"{p}+news@{d}")
                elif variant == "dot":
                    emails.append(f"{p[:2]}.{p[2:]}@{d}")
                elif variant == "same":
                    emails.append(f"{p}@{d}")
            rng.shuffle(emails)
            out.append((emails,))
        return out
