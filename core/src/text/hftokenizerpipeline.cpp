// SPDX-License-Identifier: GPL-3.0-or-later
// The parts of a tokenizer.json pipeline (hftokenizerpipeline.h): JSON field access with messages
// that name the field, patterns on ICU's regex engine with a step limit, Hugging Face's split
// behaviours, and the normalizers, pre-tokenizers and decoders built from their JSON objects.
#include "hftokenizerpipeline.h"

#include "hftokenizerbytes.h"

#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <memory>
#include <optional>
#include <unordered_map>

namespace attnviz::hf {
namespace {
// ICU counts a "tick" each 10,000 backtracking states it saves. One encode may spend a base of
// ticks plus a share per character of its text, over every pattern and every split together: a
// pattern that backtracks a little on each of many splits adds up to a refusal, not to minutes.
constexpr int64_t kRegexBaseTicks = 2000;
constexpr int64_t kRegexCharsPerTick = 4;
// A pattern from the file: its length bounds the work done at each position of the text between
// two saved states (the ticks bound the rest); tokenizers' own patterns are a few hundred.
constexpr size_t kMaxPatternBytes = 4096;

thread_local int64_t *t_regexTicksLeft = nullptr; // the encode's budget (EncodeBudget), if any

// The characters normalizers may make of a text: a multiple of it (NFKC expands a character to at
// most 18, every other normalizer by its content), so that work and memory follow the text given.
constexpr size_t kGrowthBase = 4096;
constexpr size_t kGrowthPerChar = 8;
constexpr size_t kUnscopedMaxChars = size_t(1) << 20; // outside an encode's budget
// Normalizers one tokenizer may have, Sequences' members counted at every depth.
constexpr size_t kMaxNormalizers = 256;

thread_local size_t t_maxChars = 0; // the encode's budget, if any

size_t maxChars()
{
    return t_maxChars ? t_maxChars : kUnscopedMaxChars;
}

// Throws when a normalizer would make the text `chars` long, past what the budget allows.
void checkGrowth(size_t chars, const std::string &field)
{
    if (chars > maxChars())
        throw Failure{field + ": the text would grow to " + std::to_string(chars) + " characters, more than the " +
                      std::to_string(maxChars()) + " its normalizers may make of the text given"};
}

UBool U_CALLCONV spendTick(const void *context, int32_t)
{
    int64_t &left = *static_cast<int64_t *>(const_cast<void *>(context));
    return --left > 0;
}

// A back-reference (\1..\9, \k<name>) outside a set: matching it compares text without saving
// states, so no step limit sees the cubic work of (.+)\1+x. Returns its offset, or npos.
size_t backReferenceAt(const std::string &regex)
{
    bool inSet = false;
    for (size_t i = 0; i < regex.size(); ++i) {
        const char c = regex[i];
        if (c == '\\' && i + 1 < regex.size()) {
            const char n = regex[i + 1];
            if (!inSet && ((n >= '1' && n <= '9') || (n == 'k' && i + 2 < regex.size() && regex[i + 2] == '<')))
                return i;
            ++i;
        } else if (c == '[') {
            inSet = true;
        } else if (c == ']') {
            inSet = false;
        }
    }
    return std::string::npos;
}

} // namespace

EncodeBudget::EncodeBudget(size_t chars)
    : m_left(kRegexBaseTicks + int64_t(std::min<size_t>(chars, INT32_MAX)) / kRegexCharsPerTick),
      m_outer(t_regexTicksLeft), m_outerMaxChars(t_maxChars)
{
    t_regexTicksLeft = &m_left;
    t_maxChars = kGrowthBase + std::min<size_t>(chars, INT32_MAX) * kGrowthPerChar;
}

EncodeBudget::~EncodeBudget()
{
    t_regexTicksLeft = m_outer;
    t_maxChars = m_outerMaxChars;
}

void appendChar(std::string &out, char32_t c)
{
    if (isRaw(c))
        out.push_back(char(uint8_t(c - kRawByte)));
    else
        unicode::appendUtf8(out, c);
}

std::string utf8Of(const Text &t, size_t from, size_t to)
{
    std::string s;
    to = std::min(to, t.size());
    for (size_t i = from; i < to; ++i)
        appendChar(s, t[i].cp);
    return s;
}

// The text as code points; each ill-formed byte becomes its own raw-byte code point.
Text decodeText(std::string_view text)
{
    Text out;
    for (const Char &c : unicode::decodeUtf8(text)) {
        if (c.cp == 0xFFFD && !(c.end - c.begin == 3 && text.compare(c.begin, 3, "\xEF\xBF\xBD") == 0)) {
            for (uint32_t b = c.begin; b < c.end; ++b)
                out.push_back({kRawByte + uint8_t(text[b]), b, b + 1});
        } else {
            out.push_back(c);
        }
    }
    return out;
}

Text decodePlain(const std::string &s) // a string from the file (valid UTF-8: nlohmann checks)
{
    Text t;
    for (const Char &c : unicode::decodeUtf8(s))
        t.push_back({c.cp, 0, 0});
    return t;
}

bool isWhiteSpace(char32_t c)
{
    return !isRaw(c) && unicode::isWhiteSpace(c);
} // Rust char::is_whitespace
bool isAlphanumeric(char32_t c) // Rust char::is_alphanumeric: Alphabetic or Numeric (Nd, Nl, No)
{
    return !isRaw(c) && (u_hasBinaryProperty(UChar32(c), UCHAR_ALPHABETIC) || unicode::isNumber(c));
}

// --- JSON access: every error names the file and the field ---------------------------------------

std::string join(const std::string &field, const std::string &key)
{
    return field.empty() ? key : field + "." + key;
}

[[noreturn]] void fail(const std::string &field, const std::string &what)
{
    throw Failure{field + ": " + what};
}

const json &member(const json &obj, const std::string &key, const std::string &field)
{
    if (!obj.is_object())
        fail(field, "expected an object");
    const auto it = obj.find(key);
    if (it == obj.end())
        fail(join(field, key), "missing");
    return *it;
}
const json *optional(const json &obj, const std::string &key)
{
    if (!obj.is_object())
        return nullptr;
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
}
std::string getString(const json &obj, const std::string &key, const std::string &field)
{
    const json &v = member(obj, key, field);
    if (!v.is_string())
        fail(join(field, key), "expected a string");
    return v.get<std::string>();
}
std::string getString(const json &obj, const std::string &key, const std::string &field, const std::string &fallback)
{
    const json *v = optional(obj, key);
    if (!v)
        return fallback;
    if (!v->is_string())
        fail(join(field, key), "expected a string");
    return v->get<std::string>();
}
bool getBool(const json &obj, const std::string &key, const std::string &field, bool fallback)
{
    const json *v = optional(obj, key);
    if (!v)
        return fallback;
    if (!v->is_boolean())
        fail(join(field, key), "expected true or false");
    return v->get<bool>();
}
int64_t getInt(const json &obj, const std::string &key, const std::string &field, int64_t fallback)
{
    const json *v = optional(obj, key);
    if (!v)
        return fallback;
    if (!v->is_number_integer())
        fail(join(field, key), "expected an integer");
    return v->get<int64_t>();
}
const json &getArray(const json &obj, const std::string &key, const std::string &field)
{
    const json &v = member(obj, key, field);
    if (!v.is_array())
        fail(join(field, key), "expected an array");
    return v;
}
std::string typeOf(const json &obj, const std::string &field)
{
    return getString(obj, "type", field);
}
std::string quote(const std::string &s)
{
    return "\"" + (s.size() > 80 ? s.substr(0, 80) + "..." : s) + "\"";
}

// --- Patterns: a literal string or an ICU regex -------------------------------------------------

namespace {

struct Match {
    size_t begin, end; // char indices
};

class Pattern {
public:
    // tokenizer.json's {"String": "..."} or {"Regex": "..."}
    Pattern(const json &p, const std::string &field) : m_field(field)
    {
        if (!p.is_object())
            fail(field, "expected {\"String\": ...} or {\"Regex\": ...}");
        UErrorCode status = U_ZERO_ERROR;
        UParseError where{};
        if (const json *s = optional(p, "String")) {
            if (!s->is_string())
                fail(field + ".String", "expected a string");
            m_field += ".String";
            const icu::UnicodeString lit = icu::UnicodeString::fromUTF8(s->get<std::string>());
            if (lit.isEmpty())
                fail(m_field, "an empty pattern");
            m_regex.reset(icu::RegexPattern::compile(lit, UREGEX_LITERAL, where, status));
        } else if (const json *r = optional(p, "Regex")) {
            if (!r->is_string())
                fail(field + ".Regex", "expected a string");
            m_field += ".Regex";
            const std::string &regex = r->get_ref<const std::string &>();
            if (regex.size() > kMaxPatternBytes)
                fail(m_field, std::to_string(regex.size()) + " bytes, more than the " +
                                  std::to_string(kMaxPatternBytes) + " a pattern may have");
            if (const size_t at = backReferenceAt(regex); at != std::string::npos)
                fail(m_field, "a back-reference (" + regex.substr(at, 2) + " at offset " + std::to_string(at) +
                                  ") is not supported: its matching has no bound");
            m_regex.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(regex), 0, where, status));
            if (U_FAILURE(status))
                fail(m_field, std::string("the regex does not compile (") + u_errorName(status) + " at offset " +
                                  std::to_string(where.offset) + ")");
        } else {
            fail(field, "expected {\"String\": ...} or {\"Regex\": ...}");
        }
        if (U_FAILURE(status) || !m_regex)
            fail(m_field, std::string("the pattern does not compile (") + u_errorName(status) + ")");
    }
    Pattern(const std::string &regex, const std::string &field, bool /* a regex given by the code */) : m_field(field)
    {
        UErrorCode status = U_ZERO_ERROR;
        UParseError where{};
        m_regex.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(regex), 0, where, status));
        if (U_FAILURE(status) || !m_regex)
            fail(m_field, std::string("the regex does not compile (") + u_errorName(status) + ")");
    }

    // Non-overlapping matches, left to right (empty ones included, as Hugging Face's find_iter).
    // Fails with a message naming the field when the engine gives up (step limit, stack).
    void find(const Text &t, std::vector<Match> &out) const
    {
        out.clear();
        icu::UnicodeString u;
        std::vector<uint32_t> charAt; // UTF-16 index -> char index
        charAt.reserve(t.size() + 1);
        for (size_t i = 0; i < t.size(); ++i) {
            const UChar32 c = isRaw(t[i].cp) ? 0xFFFD : UChar32(t[i].cp);
            u.append(c);
            charAt.push_back(uint32_t(i));
            if (c > 0xFFFF)
                charAt.push_back(uint32_t(i));
        }
        charAt.push_back(uint32_t(t.size()));
        UErrorCode status = U_ZERO_ERROR;
        std::unique_ptr<icu::RegexMatcher> m(m_regex->matcher(u, status));
        // Ticks from the encode's budget, or (outside an encode) from one of this text's own.
        std::optional<EncodeBudget> own;
        if (!t_regexTicksLeft)
            own.emplace(t.size());
        if (U_SUCCESS(status))
            m->setMatchCallback(spendTick, t_regexTicksLeft, status);
        // No limit on the backtracking stack: ICU's default (8 MB) fails on a run of some 100,000
        // spaces, which the tokenizers library matches; the step budget bounds the work, and with
        // it the stack.
        if (U_SUCCESS(status))
            m->setStackLimit(0, status);
        while (U_SUCCESS(status) && m->find(status)) {
            const int32_t b = m->start(status), e = m->end(status);
            if (U_FAILURE(status))
                break;
            out.push_back({charAt[size_t(b)], charAt[size_t(e)]});
        }
        if (U_FAILURE(status)) {
            const std::string why = status == U_REGEX_STOPPED_BY_CALLER
                                        ? "matching gave up after its step limit "
                                          "(a pattern that backtracks catastrophically?)"
                                        : std::string("matching failed: ") + u_errorName(status);
            throw Failure{m_field + ": " + why};
        }
    }

private:
    std::string m_field;
    std::unique_ptr<icu::RegexPattern> m_regex;
};

// Hugging Face's SplitDelimiterBehavior, on the (range, is_match) list that covers the text.
enum class Behaviour { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behaviour behaviourOf(const json &obj, const std::string &field)
{
    const std::string b = getString(obj, "behavior", field);
    if (b == "Removed")
        return Behaviour::Removed;
    if (b == "Isolated")
        return Behaviour::Isolated;
    if (b == "MergedWithPrevious")
        return Behaviour::MergedWithPrevious;
    if (b == "MergedWithNext")
        return Behaviour::MergedWithNext;
    if (b == "Contiguous")
        return Behaviour::Contiguous;
    fail(field + ".behavior", "unknown behaviour " + quote(b));
}

void splitBy(const Text &t, const std::vector<Match> &found, Behaviour behaviour, bool invert, std::vector<Text> &out)
{
    struct Part {
        size_t b, e;
        bool match;
    };
    std::vector<Part> parts;
    if (t.empty())
        return;
    size_t prev = 0;
    for (const Match &m : found) {
        if (prev != m.begin)
            parts.push_back({prev, m.begin, false});
        parts.push_back({m.begin, m.end, true});
        prev = m.end;
    }
    if (prev != t.size())
        parts.push_back({prev, t.size(), false});
    if (invert)
        for (Part &p : parts)
            p.match = !p.match;
    std::vector<Part> kept;
    bool previous = false;
    switch (behaviour) {
    case Behaviour::Isolated:
        kept = parts;
        break;
    case Behaviour::Removed:
        for (const Part &p : parts)
            if (!p.match)
                kept.push_back(p);
        break;
    case Behaviour::MergedWithPrevious:
        for (const Part &p : parts) {
            if (p.match && !previous && !kept.empty())
                kept.back().e = p.e;
            else
                kept.push_back(p);
            previous = p.match;
        }
        break;
    case Behaviour::MergedWithNext:
        for (size_t k = parts.size(); k-- > 0;) {
            const Part &p = parts[k];
            if (p.match && !previous && !kept.empty())
                kept.back().b = p.b;
            else
                kept.push_back(p);
            previous = p.match;
        }
        std::reverse(kept.begin(), kept.end());
        break;
    case Behaviour::Contiguous:
        for (size_t k = 0; k < parts.size(); ++k) {
            const Part &p = parts[k];
            if (k > 0 && p.match == previous && !kept.empty())
                kept.back().e = p.e;
            else
                kept.push_back(p);
            previous = p.match;
        }
        break;
    }
    for (const Part &p : kept)
        if (p.e > p.b)
            out.emplace_back(t.begin() + std::ptrdiff_t(p.b), t.begin() + std::ptrdiff_t(p.e));
}

// Text inserted by a normalizer or pre-tokenizer: zero width, at `at` in the source.
void insertText(Text &t, size_t pos, const Text &what, uint32_t at)
{
    Text ins = what;
    for (Char &c : ins)
        c.begin = c.end = at;
    t.insert(t.begin() + std::ptrdiff_t(pos), ins.begin(), ins.end());
}

// Each match replaced by `content`: characters one for one keep their own ranges, otherwise every
// new character covers the whole match.
Text replaceMatches(const Text &t, const std::vector<Match> &found, const Text &content)
{
    Text out;
    size_t prev = 0;
    for (const Match &m : found) {
        if (m.end == m.begin)
            continue;
        out.insert(out.end(), t.begin() + std::ptrdiff_t(prev), t.begin() + std::ptrdiff_t(m.begin));
        for (size_t k = 0; k < content.size(); ++k) {
            Char c = content[k];
            if (content.size() == m.end - m.begin) {
                c.begin = t[m.begin + k].begin;
                c.end = t[m.begin + k].end;
            } else {
                c.begin = t[m.begin].begin;
                c.end = t[m.end - 1].end;
            }
            out.push_back(c);
        }
        prev = m.end;
    }
    out.insert(out.end(), t.begin() + std::ptrdiff_t(prev), t.end());
    return out;
}

// --- Normalizers ------------------------------------------------------------------------------

Normalizer unicodeForm(const icu::Normalizer2 *norm, const std::string &field)
{
    // Cut where the normalizer says nothing interacts across the cut; each piece is normalized
    // alone and its characters cover the piece's bytes. Raw bytes are left as they are.
    return [norm, field](Text &t) {
        Text out;
        size_t i = 0;
        while (i < t.size()) {
            if (isRaw(t[i].cp)) {
                out.push_back(t[i++]);
                continue;
            }
            size_t j = i + 1;
            while (j < t.size() && !isRaw(t[j].cp) && !norm->hasBoundaryBefore(UChar32(t[j].cp)))
                ++j;
            icu::UnicodeString piece;
            for (size_t k = i; k < j; ++k)
                piece.append(UChar32(t[k].cp));
            UErrorCode status = U_ZERO_ERROR;
            if (norm->isNormalized(piece, status) && U_SUCCESS(status)) {
                out.insert(out.end(), t.begin() + std::ptrdiff_t(i), t.begin() + std::ptrdiff_t(j));
            } else {
                status = U_ZERO_ERROR;
                const icu::UnicodeString n = norm->normalize(piece, status);
                const uint32_t b = t[i].begin, e = t[j - 1].end;
                for (int32_t k = 0; k < n.length(); k = n.moveIndex32(k, 1))
                    out.push_back({char32_t(n.char32At(k)), b, e});
            }
            checkGrowth(out.size(), field);
            i = j;
        }
        t.swap(out);
    };
}

Normalizer buildNormalizer(const json &n, const std::string &field, size_t &count)
{
    if (++count > kMaxNormalizers)
        fail(field, "more than the " + std::to_string(kMaxNormalizers) + " normalizers a tokenizer may have");
    const std::string type = typeOf(n, field);
    UErrorCode status = U_ZERO_ERROR;
    if (type == "NFC")
        return unicodeForm(icu::Normalizer2::getNFCInstance(status), field);
    if (type == "NFD")
        return unicodeForm(icu::Normalizer2::getNFDInstance(status), field);
    if (type == "NFKC")
        return unicodeForm(icu::Normalizer2::getNFKCInstance(status), field);
    if (type == "NFKD")
        return unicodeForm(icu::Normalizer2::getNFKDInstance(status), field);
    if (type == "Lowercase")
        return [field](Text &t) {
            Text out;
            for (const Char &c : t) {
                if (isRaw(c.cp))
                    out.push_back(c);
                else
                    unicode::appendLower(c, out);
            }
            checkGrowth(out.size(), field);
            t.swap(out);
        };
    if (type == "Prepend") {
        const Text what = decodePlain(getString(n, "prepend", field));
        return [what, field](Text &t) {
            if (t.empty())
                return;
            checkGrowth(t.size() + what.size(), field);
            insertText(t, 0, what, t.front().begin);
        };
    }
    if (type == "Replace") {
        auto pattern = std::make_shared<Pattern>(member(n, "pattern", field), field + ".pattern");
        const Text content = decodePlain(getString(n, "content", field));
        return [pattern, content, field](Text &t) {
            std::vector<Match> found;
            pattern->find(t, found);
            if (found.empty())
                return;
            // The size the replacement will have (empty matches replace nothing), checked before
            // it is built.
            size_t chars = t.size();
            for (const Match &m : found)
                if (m.end > m.begin)
                    chars = chars - (m.end - m.begin) + content.size();
            checkGrowth(chars, field);
            t = replaceMatches(t, found, content);
        };
    }
    if (type == "Strip") {
        const bool left = getBool(n, "strip_left", field, true), right = getBool(n, "strip_right", field, true);
        return [left, right](Text &t) {
            size_t b = 0, e = t.size();
            while (left && b < e && isWhiteSpace(t[b].cp))
                ++b;
            while (right && e > b && isWhiteSpace(t[e - 1].cp))
                --e;
            t = Text(t.begin() + std::ptrdiff_t(b), t.begin() + std::ptrdiff_t(e));
        };
    }
    if (type == "Sequence") {
        const json &list = getArray(n, "normalizers", field);
        std::vector<Normalizer> steps;
        for (size_t k = 0; k < list.size(); ++k)
            steps.push_back(buildNormalizer(list[k], field + ".normalizers[" + std::to_string(k) + "]", count));
        return [steps](Text &t) {
            for (const Normalizer &s : steps)
                s(t);
        };
    }
    fail(field + ".type", "unknown normalizer " + quote(type) +
                              " (known: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, Sequence)");
}

} // namespace

Normalizer makeNormalizer(const json &n, const std::string &field)
{
    size_t count = 0;
    return buildNormalizer(n, field, count);
}

// --- Pre-tokenizers ---------------------------------------------------------------------------

namespace {

PreTokenizer eachSplit(std::function<void(const Text &, std::vector<Text> &)> f)
{
    return [f](std::vector<Text> &splits) {
        std::vector<Text> out;
        for (const Text &s : splits)
            f(s, out);
        splits.swap(out);
    };
}

// GPT-2's pattern, as ByteLevel's use_regex applies it.
const char *const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

} // namespace

PreTokenizer makePreTokenizer(const json &p, const std::string &field)
{
    const std::string type = typeOf(p, field);
    if (type == "Split") {
        auto pattern = std::make_shared<Pattern>(member(p, "pattern", field), field + ".pattern");
        const Behaviour behaviour = behaviourOf(p, field);
        const bool invert = getBool(p, "invert", field, false);
        return eachSplit([pattern, behaviour, invert](const Text &t, std::vector<Text> &out) {
            std::vector<Match> found;
            pattern->find(t, found);
            splitBy(t, found, behaviour, invert, out);
        });
    }
    if (type == "ByteLevel") {
        const bool prefix = getBool(p, "add_prefix_space", field, true);
        std::shared_ptr<Pattern> pattern;
        if (getBool(p, "use_regex", field, true))
            pattern = std::make_shared<Pattern>(std::string(kGpt2Pattern), field + " (GPT-2's pattern)", true);
        const std::array<char32_t, 256> table = bytelevel::bytesToUnicode();
        return eachSplit([prefix, pattern, table](const Text &in, std::vector<Text> &out) {
            Text t = in;
            if (prefix && !t.empty() && t.front().cp != ' ')
                insertText(t, 0, Text{Char{' ', 0, 0}}, t.front().begin);
            std::vector<Text> parts;
            if (pattern) {
                std::vector<Match> found;
                pattern->find(t, found);
                splitBy(t, found, Behaviour::Isolated, false, parts);
            } else if (!t.empty()) {
                parts.push_back(std::move(t));
            }
            for (const Text &part : parts) {
                Text mapped;
                std::string bytes;
                for (const Char &c : part) {
                    bytes.clear();
                    appendChar(bytes, c.cp);
                    for (const char b : bytes)
                        mapped.push_back({table[uint8_t(b)], c.begin, c.end});
                }
                out.push_back(std::move(mapped));
            }
        });
    }
    if (type == "Digits") {
        const bool individual = getBool(p, "individual_digits", field, false);
        return eachSplit([individual](const Text &t, std::vector<Text> &out) {
            std::vector<Match> found;
            for (size_t i = 0; i < t.size(); ++i)
                if (!isRaw(t[i].cp) && unicode::isNumber(t[i].cp)) // Rust's char::is_numeric
                    found.push_back({i, i + 1});
            splitBy(t, found, individual ? Behaviour::Isolated : Behaviour::Contiguous, false, out);
        });
    }
    if (type == "Metaspace") {
        const Text replacement = decodePlain(getString(p, "replacement", field, "\u2581"));
        if (replacement.size() != 1)
            fail(field + ".replacement", "expected one character");
        std::string scheme = getBool(p, "add_prefix_space", field, true) ? "always" : "never";
        scheme = getString(p, "prepend_scheme", field, scheme);
        if (scheme != "always" && scheme != "first" && scheme != "never")
            fail(field + ".prepend_scheme", "expected \"always\", \"first\" or \"never\", not " + quote(scheme));
        const bool split = getBool(p, "split", field, true);
        const char32_t rep = replacement.front().cp;
        return eachSplit([rep, scheme, split](const Text &in, std::vector<Text> &out) {
            Text t = in;
            for (Char &c : t)
                if (c.cp == ' ')
                    c.cp = rep;
            const bool starts = !t.empty() && t.front().cp == rep;
            if (!t.empty() && !starts && (scheme == "always" || (scheme == "first" && t.front().begin == 0)))
                insertText(t, 0, Text{Char{rep, 0, 0}}, t.front().begin);
            if (!split) {
                if (!t.empty())
                    out.push_back(std::move(t));
                return;
            }
            std::vector<Match> found;
            for (size_t i = 0; i < t.size(); ++i)
                if (t[i].cp == rep)
                    found.push_back({i, i + 1});
            splitBy(t, found, Behaviour::MergedWithNext, false, out);
        });
    }
    if (type == "WhitespaceSplit")
        return eachSplit([](const Text &t, std::vector<Text> &out) {
            std::vector<Match> found;
            for (size_t i = 0; i < t.size(); ++i)
                if (isWhiteSpace(t[i].cp))
                    found.push_back({i, i + 1});
            splitBy(t, found, Behaviour::Removed, false, out);
        });
    if (type == "Whitespace") {
        auto pattern = std::make_shared<Pattern>(std::string(R"(\w+|[^\w\s]+)"), field, true);
        return eachSplit([pattern](const Text &t, std::vector<Text> &out) {
            std::vector<Match> found;
            pattern->find(t, found);
            splitBy(t, found, Behaviour::Removed, true, out);
        });
    }
    if (type == "Sequence") {
        const json &list = getArray(p, "pretokenizers", field);
        std::vector<PreTokenizer> steps;
        for (size_t k = 0; k < list.size(); ++k)
            steps.push_back(makePreTokenizer(list[k], field + ".pretokenizers[" + std::to_string(k) + "]"));
        return [steps](std::vector<Text> &splits) {
            for (const PreTokenizer &s : steps)
                s(splits);
        };
    }
    fail(field + ".type", "unknown pre-tokenizer " + quote(type) +
                              " (known: Split, ByteLevel, Digits, Metaspace, Whitespace, WhitespaceSplit, "
                              "Sequence)");
}

// --- Decoders (ids -> text), on the list of token strings as Hugging Face's decode_chain --------

Decoder makeDecoder(const json &d, const std::string &field)
{
    const std::string type = typeOf(d, field);
    if (type == "ByteLevel") {
        std::unordered_map<char32_t, uint8_t> byteOf;
        const std::array<char32_t, 256> table = bytelevel::bytesToUnicode();
        for (int b = 0; b < 256; ++b)
            byteOf[table[size_t(b)]] = uint8_t(b);
        // A token with a character outside the table (an added token's own spelling) is kept as
        // it is, as Hugging Face does.
        return [byteOf](std::vector<std::string> &tokens) {
            std::string all, bytes;
            for (const std::string &t : tokens) {
                bytes.clear();
                bool mapped = true;
                for (const Char &c : unicode::decodeUtf8(t)) {
                    const auto it = byteOf.find(c.cp);
                    if (it == byteOf.end()) {
                        mapped = false;
                        break;
                    }
                    bytes.push_back(char(it->second));
                }
                all += mapped ? bytes : t;
            }
            tokens.assign(1, all);
        };
    }
    if (type == "Replace") {
        auto pattern = std::make_shared<Pattern>(member(d, "pattern", field), field + ".pattern");
        const Text content = decodePlain(getString(d, "content", field));
        return [pattern, content](std::vector<std::string> &tokens) {
            for (std::string &t : tokens) {
                const Text text = decodeText(t);
                std::vector<Match> found;
                pattern->find(text, found);
                if (!found.empty())
                    t = utf8Of(replaceMatches(text, found, content));
            }
        };
    }
    if (type == "ByteFallback")
        return [](std::vector<std::string> &tokens) {
            std::vector<std::string> out;
            std::string bytes;
            size_t count = 0;
            auto flush = [&] {
                if (!count)
                    return;
                bool valid = true;
                for (const Char &c : unicode::decodeUtf8(bytes))
                    if (c.cp == 0xFFFD && bytes.compare(c.begin, 3, "\xEF\xBF\xBD") != 0)
                        valid = false;
                if (valid)
                    out.push_back(bytes);
                else
                    for (size_t k = 0; k < count; ++k)
                        out.push_back("\uFFFD");
                bytes.clear();
                count = 0;
            };
            for (const std::string &t : tokens) {
                unsigned v = 0;
                if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(uint8_t(t[3])) &&
                    std::isxdigit(uint8_t(t[4])) && std::sscanf(t.c_str() + 3, "%2x", &v) == 1) {
                    bytes.push_back(char(v));
                    ++count;
                } else {
                    flush();
                    out.push_back(t);
                }
            }
            flush();
            tokens.swap(out);
        };
    if (type == "Fuse")
        return [](std::vector<std::string> &tokens) {
            std::string all;
            for (const std::string &t : tokens)
                all += t;
            tokens.assign(1, all);
        };
    if (type == "Strip") {
        const Text content = decodePlain(getString(d, "content", field));
        if (content.size() != 1)
            fail(field + ".content", "expected one character");
        const int64_t start = getInt(d, "start", field, 0), stop = getInt(d, "stop", field, 0);
        const char32_t ch = content.front().cp;
        return [ch, start, stop](std::vector<std::string> &tokens) {
            for (std::string &t : tokens) {
                const Text text = decodeText(t);
                size_t b = 0, e = text.size();
                for (int64_t k = 0; k < start && b < e && text[b].cp == ch; ++k)
                    ++b;
                for (int64_t k = 0; k < stop && e > b && text[e - 1].cp == ch; ++k)
                    --e;
                t = utf8Of(text, b, e);
            }
        };
    }
    if (type == "Metaspace") {
        const Text replacement = decodePlain(getString(d, "replacement", field, "\u2581"));
        if (replacement.size() != 1)
            fail(field + ".replacement", "expected one character");
        std::string scheme = getBool(d, "add_prefix_space", field, true) ? "always" : "never";
        scheme = getString(d, "prepend_scheme", field, scheme);
        const char32_t rep = replacement.front().cp;
        const bool strip = scheme != "never";
        return [rep, strip](std::vector<std::string> &tokens) {
            for (size_t i = 0; i < tokens.size(); ++i) {
                Text text = decodeText(tokens[i]);
                for (Char &c : text)
                    if (c.cp == rep)
                        c.cp = ' ';
                const size_t b = i == 0 && strip && !text.empty() && text.front().cp == ' ' ? 1 : 0;
                tokens[i] = utf8Of(text, b);
            }
        };
    }
    if (type == "Sequence") {
        const json &list = getArray(d, "decoders", field);
        std::vector<Decoder> steps;
        for (size_t k = 0; k < list.size(); ++k)
            steps.push_back(makeDecoder(list[k], field + ".decoders[" + std::to_string(k) + "]"));
        return [steps](std::vector<std::string> &tokens) {
            for (const Decoder &s : steps)
                s(tokens);
        };
    }
    fail(field + ".type", "unknown decoder " + quote(type) +
                              " (known: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)");
}

} // namespace attnviz::hf
