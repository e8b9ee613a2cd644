// SPDX-License-Identifier: GPL-3.0-or-later
// BERT's WordPiece (subword.h): vocab.txt, exact to Hugging Face's BertTokenizer (the Python one)
// as transcribed in tests/fixtures/tokenizers/make_reference_ids.py (Google's tokenization.py, not the Rust
// BertTokenizerFast, which writes [UNK] for some characters dropped here: tests/fixtures/models/MANIFEST.md). In order:
//   1. the special tokens typed in the text ([CLS] [SEP] [PAD] [UNK] [MASK]) are split off first
//      and stay one token each (PreTrainedTokenizer.tokenize's trie);
//   2. lower case, one character at a time (its re.sub(".+?") pre-pass: no final-sigma context);
//   3. clean-up: NUL, U+FFFD and control characters (category C*, except \t \n \r) dropped,
//      white space (\t \n \r, Zs) made a space; CJK ideographs get spaces around them; NFC;
//   4. split on white space (Python's str.split), each word: NFD and non-spacing marks (Mn)
//      dropped when stripping accents, then cut before and after every punctuation character
//      (ASCII symbols and P*);
//   5. each word: [UNK] when longer than 100 characters, else greedy longest-match pieces, the
//      ones after the first spelled "##..."; a word with no match at some point is one [UNK];
//   6. [CLS] ... [SEP] around it all.
// Every character keeps the byte range it came from, so every piece knows its bytes in the text.
#include "attnviz/fileio.h"
#include "attnviz/subword.h"

#include "subwordvocabulary.h"
#include "unicodetext.h"

#include <unicode/utf8.h>

#include <algorithm>
#include <climits>
#include <unordered_map>

namespace attnviz {
namespace {

using unicode::Char;

// BasicTokenizer._is_chinese_char: the CJK ideograph blocks (code point ranges, not a property).
bool isCjkIdeograph(char32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// tokenization_utils._is_whitespace, _is_control, _is_punctuation
bool isBertWhitespace(char32_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || unicode::isSpaceSeparator(c);
}
bool isBertControl(char32_t c)
{
    return c != '\t' && c != '\n' && c != '\r' && unicode::isOtherCategory(c);
}
bool isBertPunctuation(char32_t c)
{
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
        return true;
    return c >= 0x80 && unicode::isPunctuationCategory(c);
}

class WordPiece final : public VocabularyTokenizer {
public:
    explicit WordPiece(const WordPieceOptions &options) : m_options(options) {}
    std::string kind() const override { return m_options.lowerCase ? "WordPiece (lower case)" : "WordPiece (cased)"; }
    Status encode(std::string_view text, std::vector<TraceToken> &out) const override;
    std::string decode(const std::vector<int> &ids) const override;

    Status build(const std::string &bytes, const std::string &name);

private:
    void encodeSegment(std::string_view text, size_t begin, size_t end, std::vector<TraceToken> &out) const;
    void encodeWord(const std::vector<Char> &word, std::vector<TraceToken> &out) const;
    void push(int id, size_t begin, size_t end, bool special, std::vector<TraceToken> &out) const;

    WordPieceOptions m_options; // m_tokens: the lines of vocab.txt; m_ids: a repeated token's last line
    std::vector<std::pair<std::string, int>> m_specials; // those of [CLS] [SEP] [PAD] [UNK] [MASK] present
    int m_unk = -1, m_cls = -1, m_sep = -1;
    size_t m_longestToken = 0; // bytes; no longer candidate can match
};

Status WordPiece::build(const std::string &bytes, const std::string &name)
{
    auto fail = [&](const std::string &what) { return Status::error(StatusCode::ParseError, name + ": " + what); };
    if (m_options.maxCharsPerWord < 1)
        return Status::error(StatusCode::InvalidInput, name + ": maxCharsPerWord must be at least 1");
    if (bytes.empty())
        return fail("empty, no tokens");
    if (bytes.size() >= size_t(INT32_MAX))
        return fail("too large");
    // Python's readlines() in text mode: lines end at \n, \r\n or \r; each line is one token.
    size_t pos = 0;
    while (pos < bytes.size()) {
        size_t eol = bytes.find_first_of("\r\n", pos);
        if (eol == std::string::npos)
            eol = bytes.size();
        std::string line = bytes.substr(pos, eol - pos);
        pos = eol + (eol + 1 < bytes.size() && bytes[eol] == '\r' && bytes[eol + 1] == '\n' ? 2 : 1);
        const auto *s = reinterpret_cast<const uint8_t *>(line.data());
        for (int32_t i = 0; i < int32_t(line.size());) {
            UChar32 c;
            U8_NEXT(s, i, int32_t(line.size()), c);
            if (c < 0)
                return fail("line " + std::to_string(m_tokens.size() + 1) + ": not UTF-8");
        }
        m_longestToken = std::max(m_longestToken, line.size());
        m_ids[line] = int(m_tokens.size());
        m_tokens.push_back(std::move(line));
        if (m_tokens.size() >= size_t(INT_MAX))
            return fail("too many tokens");
    }
    for (const char *special : {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"}) {
        const int id = this->id(special);
        if (id >= 0)
            m_specials.emplace_back(special, id);
    }
    m_unk = id("[UNK]");
    m_cls = id("[CLS]");
    m_sep = id("[SEP]");
    if (m_unk < 0)
        return fail("no [UNK] token: not a WordPiece vocabulary");
    if (m_options.addSpecials && (m_cls < 0 || m_sep < 0))
        return fail("no [CLS] or [SEP] token: not a BERT vocabulary");
    return Status::success();
}

void WordPiece::push(int id, size_t begin, size_t end, bool special, std::vector<TraceToken> &out) const
{
    TraceToken t;
    t.id = id;
    t.text = t.display = m_tokens[size_t(id)];
    t.begin = begin;
    t.end = end;
    t.special = special;
    t.unknown = id == m_unk;
    out.push_back(std::move(t));
}

// Greedy longest match (WordpieceTokenizer.tokenize) over one word's characters.
void WordPiece::encodeWord(const std::vector<Char> &word, std::vector<TraceToken> &out) const
{
    auto rangeOf = [&](size_t from, size_t to) {
        uint32_t b = UINT32_MAX, e = 0;
        for (size_t k = from; k < to; ++k) {
            b = std::min(b, word[k].begin);
            e = std::max(e, word[k].end);
        }
        return std::make_pair(size_t(b), size_t(e));
    };
    if (int64_t(word.size()) > m_options.maxCharsPerWord) {
        const auto r = rangeOf(0, word.size());
        push(m_unk, r.first, r.second, false, out);
        return;
    }
    std::string utf8;
    std::vector<size_t> at; // byte offset of character k in utf8
    for (const Char &c : word) {
        at.push_back(utf8.size());
        unicode::appendUtf8(utf8, c.cp);
    }
    at.push_back(utf8.size());
    const size_t first = out.size();
    std::string candidate;
    size_t start = 0;
    while (start < word.size()) {
        int found = -1;
        size_t end = word.size();
        for (; end > start; --end) {
            const size_t prefix = start > 0 ? 2 : 0;
            if (prefix + at[end] - at[start] > m_longestToken)
                continue;
            candidate.assign(start > 0 ? "##" : "");
            candidate.append(utf8, at[start], at[end] - at[start]);
            const auto it = m_ids.find(candidate);
            if (it != m_ids.end()) {
                found = it->second;
                break;
            }
        }
        if (found < 0) { // no piece fits here: the whole word is [UNK]
            out.resize(first);
            const auto r = rangeOf(0, word.size());
            push(m_unk, r.first, r.second, false, out);
            return;
        }
        const auto r = rangeOf(start, end);
        push(found, r.first, r.second, false, out);
        start = end;
    }
}

// BasicTokenizer on text[begin, end) (which holds no special token), then the pieces of each word.
void WordPiece::encodeSegment(std::string_view text, size_t begin, size_t end, std::vector<TraceToken> &out) const
{
    const std::vector<Char> chars = unicode::decodeUtf8(text.substr(begin, end - begin), uint32_t(begin));
    std::vector<Char> cleaned, lowered;
    cleaned.reserve(chars.size());
    for (const Char &c : chars) {
        lowered.clear();
        if (m_options.lowerCase)
            unicode::appendLower(c, lowered);
        else
            lowered.push_back(c);
        for (const Char &x : lowered) {
            if (x.cp == 0 || x.cp == 0xFFFD || isBertControl(x.cp))
                continue;
            if (isBertWhitespace(x.cp)) {
                cleaned.push_back({' ', x.begin, x.end});
            } else if (m_options.chineseChars && isCjkIdeograph(x.cp)) {
                cleaned.push_back({' ', x.begin, x.begin});
                cleaned.push_back(x);
                cleaned.push_back({' ', x.end, x.end});
            } else {
                cleaned.push_back(x);
            }
        }
    }
    std::vector<Char> text2;
    text2.reserve(cleaned.size());
    unicode::normalize(unicode::Form::NFC, cleaned, text2);

    std::vector<Char> word, stripped, decomposed, piece;
    auto finishWord = [&]() {
        if (word.empty())
            return;
        const std::vector<Char> *w = &word;
        if (m_options.stripAccents) {
            decomposed.clear();
            unicode::normalize(unicode::Form::NFD, word, decomposed);
            stripped.clear();
            for (const Char &c : decomposed)
                if (!unicode::isNonSpacingMark(c.cp))
                    stripped.push_back(c);
            w = &stripped;
        }
        // _run_split_on_punc: each punctuation character alone, the runs between as words
        piece.clear();
        for (const Char &c : *w) {
            if (isBertPunctuation(c.cp)) {
                if (!piece.empty())
                    encodeWord(piece, out);
                piece.assign(1, c);
                encodeWord(piece, out);
                piece.clear();
            } else {
                piece.push_back(c);
            }
        }
        if (!piece.empty())
            encodeWord(piece, out);
        word.clear();
    };
    for (const Char &c : text2) {
        if (unicode::isPythonSpace(c.cp))
            finishWord();
        else
            word.push_back(c);
    }
    finishWord();
}

Status WordPiece::encode(std::string_view text, std::vector<TraceToken> &out) const
{
    out.clear();
    if (text.size() >= size_t(INT32_MAX))
        return Status::error(StatusCode::InvalidInput,
                             "text of " + describeBytes(text.size()) + ": too long to tokenize");
    if (m_options.addSpecials)
        push(m_cls, 0, 0, true, out);
    size_t pos = 0;
    while (pos < text.size()) {
        // the leftmost special token typed in the text (none is a prefix of another)
        size_t hit = std::string_view::npos;
        int hitId = -1, hitLength = 0;
        for (const auto &[special, id] : m_specials) {
            const size_t at = text.find(special, pos);
            if (at < hit) {
                hit = at;
                hitId = id;
                hitLength = int(special.size());
            }
        }
        const size_t stop = hit == std::string_view::npos ? text.size() : hit;
        if (stop > pos)
            encodeSegment(text, pos, stop, out);
        if (hit == std::string_view::npos)
            break;
        push(hitId, hit, hit + size_t(hitLength), true, out);
        pos = hit + size_t(hitLength);
    }
    if (m_options.addSpecials)
        push(m_sep, text.size(), text.size(), true, out);
    return Status::success();
}

// PreTrainedTokenizer._decode with its defaults: the pieces between special tokens joined by
// spaces with " ##" removed (convert_tokens_to_string), special tokens as they are, all joined by
// spaces, then clean_up_tokenization (no space before . ? ! , and a few English contractions).
std::string WordPiece::decode(const std::vector<int> &ids) const
{
    std::vector<std::string> parts;
    std::string current;
    auto flush = [&]() {
        if (current.empty())
            return;
        std::string joined;
        for (size_t i = 0; i < current.size(); ++i) {
            if (current.compare(i, 3, " ##") == 0) {
                i += 2;
                continue;
            }
            joined += current[i];
        }
        const size_t b = joined.find_first_not_of(' '), e = joined.find_last_not_of(' ');
        parts.push_back(b == std::string::npos ? std::string() : joined.substr(b, e - b + 1));
        current.clear();
    };
    for (const int id : ids) {
        if (id < 0 || id >= int(m_tokens.size()))
            continue;
        const bool special =
            std::any_of(m_specials.begin(), m_specials.end(), [&](const auto &s) { return s.second == id; });
        if (special) {
            flush();
            parts.push_back(m_tokens[size_t(id)]);
        } else {
            if (!current.empty())
                current += ' ';
            current += m_tokens[size_t(id)];
        }
    }
    flush();
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i)
        out += (i ? " " : "") + parts[i];
    static const std::pair<const char *, const char *> kCleanUp[] = {
        {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto &[from, to] : kCleanUp) {
        const std::string f(from), t(to);
        for (size_t at = out.find(f); at != std::string::npos; at = out.find(f, at + t.size()))
            out.replace(at, f.size(), t);
    }
    return out;
}

} // namespace

Status parseWordPiece(const std::string &vocabBytes, const std::string &name, const WordPieceOptions &options,
                      std::unique_ptr<SubwordTokenizer> &out)
{
    auto wp = std::make_unique<WordPiece>(options);
    Status s = wp->build(vocabBytes, name);
    if (!s)
        return s;
    out = std::move(wp);
    return s;
}

Status loadWordPiece(const std::string &vocabTxt, const WordPieceOptions &options,
                     std::unique_ptr<SubwordTokenizer> &out)
{
    std::string bytes;
    Status s = readRegularFile(vocabTxt, kMaxTokenizerFileBytes, bytes);
    if (!s)
        return s;
    return parseWordPiece(bytes, vocabTxt, options, out);
}

} // namespace attnviz
