// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnviz/tokenizer.h"

#include <cstdint>

namespace attnviz {

namespace {

// Decodes one code point at text[i]; returns its byte length (0 for an invalid sequence).
size_t decode(std::string_view s, size_t i, char32_t &cp)
{
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    size_t len = 0;
    if ((b0 & 0xE0) == 0xC0) {
        len = 2;
        cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3;
        cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
        len = 4;
        cp = b0 & 0x07;
    } else {
        return 0;
    }
    if (i + len > s.size())
        return 0;
    for (size_t k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (b & 0x3F);
    }
    // reject overlong encodings and surrogates
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void encode(char32_t cp, std::string &out)
{
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

char32_t lower(char32_t c)
{
    if (c >= 'A' && c <= 'Z')
        return c + 32;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) // Latin-1 capitals
        return c + 32;
    if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
        // Latin Extended-A: pairs (even upper, odd lower) except 0x139..0x148 and 0x179..0x17E (odd upper)
        const bool oddUpper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
        if (oddUpper)
            return (c & 1) ? c + 1 : c;
        return (c & 1) ? c : c + 1;
    }
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) // Greek capitals
        return c + 32;
    if (c >= 0x410 && c <= 0x42F) // Cyrillic capitals
        return c + 32;
    return c;
}

bool isSpace(char32_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0xA0 ||
           c == 0x2028 || c == 0x2029 || (c >= 0x2000 && c <= 0x200B) || c == 0x3000 || c == 0xFEFF;
}

bool isApostrophe(char32_t c) { return c == '\'' || c == 0x2019; }

// Letters and digits: ASCII alnum, and every code point >= 0x80 that is not a space or in the
// general punctuation / symbol blocks we know.
bool isWordChar(char32_t c)
{
    if (c < 0x80)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (isSpace(c))
        return false;
    if (c <= 0xBF || c == 0xD7 || c == 0xF7) // Latin-1 punctuation and symbols
        return false;
    if ((c >= 0x2010 && c <= 0x206F) || (c >= 0x2190 && c <= 0x2BFF) || (c >= 0x3000 && c <= 0x303F) ||
        c == 0xFFFD || (c >= 0x1F000 && c <= 0x1FAFF) || (c >= 0x20A0 && c <= 0x20CF))
        return false;
    return true;
}

} // namespace

std::string lowerCase(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        char32_t cp;
        size_t n = decode(text, i, cp);
        if (n == 0) {
            encode(0xFFFD, out);
            i += 1;
            continue;
        }
        encode(lower(cp), out);
        i += n;
    }
    return out;
}

Tokenization tokenize(std::string_view text)
{
    Tokenization result;
    Token cur;
    bool inWord = false;
    auto flush = [&](size_t end) {
        if (inWord) {
            cur.end = end;
            result.tokens.push_back(std::move(cur));
            cur = Token{};
            inWord = false;
        }
    };
    for (size_t i = 0; i < text.size();) {
        char32_t cp;
        size_t n = decode(text, i, cp);
        if (n == 0) {
            ++result.invalidBytes;
            cp = 0xFFFD;
            n = 1;
        }
        if (isWordChar(cp)) {
            if (!inWord) {
                cur.begin = i;
                cur.isWord = true;
                inWord = true;
            }
            encode(lower(cp), cur.text);
        } else if (isApostrophe(cp) && inWord && i + n < text.size()) {
            char32_t next;
            const size_t m = decode(text, i + n, next);
            if (m && isWordChar(next)) {
                cur.text += '\'';
            } else {
                flush(i);
                result.tokens.push_back(Token{"'", i, i + n, false});
            }
        } else {
            flush(i);
            if (!isSpace(cp)) {
                Token t;
                t.begin = i;
                t.end = i + n;
                t.isWord = false;
                encode(cp == 0x2019 ? U'\'' : cp, t.text);
                result.tokens.push_back(std::move(t));
            }
        }
        i += n;
    }
    flush(text.size());
    return result;
}

} // namespace attnviz
