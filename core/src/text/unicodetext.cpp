// SPDX-License-Identifier: GPL-3.0-or-later
// Unicode facts for the subword tokenizers (unicodetext.h), answered by ICU's character
// properties, case mapping and Normalizer2; only ASCII takes a short path of its own.
#include "unicodetext.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>
#include <unicode/utypes.h>

#include <stdexcept>

namespace attnviz::unicode {

std::vector<Char> decodeUtf8(std::string_view text, uint32_t offset)
{
    std::vector<Char> out;
    out.reserve(text.size());
    const auto *s = reinterpret_cast<const uint8_t *>(text.data());
    const int32_t length = int32_t(text.size()); // callers refuse texts of 2 GB and more
    int32_t i = 0;
    while (i < length) {
        const int32_t start = i;
        UChar32 c;
        U8_NEXT(s, i, length, c);
        if (c < 0)
            c = 0xFFFD;
        out.push_back({char32_t(c), offset + uint32_t(start), offset + uint32_t(i)});
    }
    return out;
}

void appendUtf8(std::string &out, char32_t cp)
{
    uint8_t buf[U8_MAX_LENGTH];
    int32_t n = 0;
    UBool error = false;
    U8_APPEND(buf, n, U8_MAX_LENGTH, UChar32(cp), error);
    if (error) { // not a scalar value (never produced by decodeUtf8): write U+FFFD
        n = 0;
        U8_APPEND_UNSAFE(buf, n, 0xFFFD);
    }
    out.append(reinterpret_cast<const char *>(buf), size_t(n));
}

static uint32_t gcMask(char32_t c)
{
    return U_GET_GC_MASK(UChar32(c));
}

bool isLetter(char32_t c)
{
    if (c < 0x80)
        return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    return gcMask(c) & U_GC_L_MASK;
}

bool isNumber(char32_t c)
{
    if (c < 0x80)
        return c >= '0' && c <= '9';
    return gcMask(c) & U_GC_N_MASK;
}

bool isWhiteSpace(char32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 0x09 && c <= 0x0D);
    return u_isUWhiteSpace(UChar32(c));
}

bool isPythonSpace(char32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    if (u_charType(UChar32(c)) == U_SPACE_SEPARATOR)
        return true;
    const UCharDirection d = u_charDirection(UChar32(c));
    return d == U_WHITE_SPACE_NEUTRAL || d == U_BLOCK_SEPARATOR || d == U_SEGMENT_SEPARATOR;
}

bool isSpaceSeparator(char32_t c)
{
    return c == ' ' || (c >= 0x80 && u_charType(UChar32(c)) == U_SPACE_SEPARATOR);
}

bool isOtherCategory(char32_t c)
{
    if (c < 0x80)
        return c < 0x20 || c == 0x7F;
    return gcMask(c) & U_GC_C_MASK;
}

bool isPunctuationCategory(char32_t c)
{
    return gcMask(c) & U_GC_P_MASK;
}

bool isNonSpacingMark(char32_t c)
{
    return c >= 0x300 && u_charType(UChar32(c)) == U_NON_SPACING_MARK;
}

void appendLower(const Char &c, std::vector<Char> &out)
{
    if (c.cp < 0x80) {
        out.push_back({c.cp >= 'A' && c.cp <= 'Z' ? c.cp + 32 : c.cp, c.begin, c.end});
        return;
    }
    UChar src[2];
    int32_t n = 0;
    U16_APPEND_UNSAFE(src, n, UChar32(c.cp));
    UChar dst[8]; // a full lower-case mapping is at most 3 code points
    UErrorCode ec = U_ZERO_ERROR;
    const int32_t m = u_strToLower(dst, 8, src, n, "", &ec);
    if (U_FAILURE(ec) || m > 8) {
        out.push_back(c);
        return;
    }
    for (int32_t i = 0; i < m;) {
        UChar32 x;
        U16_NEXT(dst, i, m, x);
        out.push_back({char32_t(x), c.begin, c.end});
    }
}

static const icu::Normalizer2 *checked(const icu::Normalizer2 *n, UErrorCode ec)
{
    if (U_FAILURE(ec) || !n) // ICU's data is in libicudata: only a broken installation gets here
        throw std::runtime_error(std::string("ICU: no normalization data: ") + u_errorName(ec));
    return n;
}

static const icu::Normalizer2 &normalizer(Form form)
{
    static UErrorCode nfcError = U_ZERO_ERROR, nfdError = U_ZERO_ERROR;
    static const icu::Normalizer2 *nfc = checked(icu::Normalizer2::getNFCInstance(nfcError), nfcError);
    static const icu::Normalizer2 *nfd = checked(icu::Normalizer2::getNFDInstance(nfdError), nfdError);
    return form == Form::NFC ? *nfc : *nfd;
}

void normalize(Form form, const std::vector<Char> &in, std::vector<Char> &out)
{
    const icu::Normalizer2 &n2 = normalizer(form);
    // Below U+00C0 every character is its own NFC and NFD and has a boundary before it.
    auto boundaryBefore = [&](char32_t c) { return c < 0xC0 || n2.hasBoundaryBefore(UChar32(c)); };
    size_t i = 0;
    while (i < in.size()) {
        size_t j = i + 1;
        while (j < in.size() && !boundaryBefore(in[j].cp))
            ++j;
        if (j == i + 1 && (in[i].cp < 0xC0 || n2.isInert(UChar32(in[i].cp)))) {
            out.push_back(in[i]);
            i = j;
            continue;
        }
        icu::UnicodeString piece;
        for (size_t k = i; k < j; ++k)
            piece.append(UChar32(in[k].cp));
        UErrorCode ec = U_ZERO_ERROR;
        const icu::UnicodeString normalized = n2.normalize(piece, ec);
        const icu::UnicodeString &result = U_SUCCESS(ec) ? normalized : piece;
        const uint32_t begin = in[i].begin, end = in[j - 1].end;
        for (int32_t k = 0; k < result.length();) {
            const UChar32 x = result.char32At(k);
            out.push_back({char32_t(x), begin, end});
            k += U16_LENGTH(x);
        }
        i = j;
    }
}

} // namespace attnviz::unicode
