// SPDX-License-Identifier: GPL-3.0-or-later
// The one word tokenizer of attnviz: used on typed sentences and on the corpus the bundled
// vectors are trained on, so that both agree.
//
// Rules: text is UTF-8. Letters and digits form words; a word is lower-cased (ASCII and the
// Latin-1 / Latin Extended-A capitals; other scripts are kept as they are). An apostrophe
// (' or U+2019) between two letters stays inside the word ("don't", "ship's"); every other
// punctuation or symbol character is a token of its own; whitespace separates. Invalid UTF-8
// bytes are replaced by U+FFFD and reported.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attnviz {

struct Token {
    std::string text;  // normalized (lower-cased) form, used for lookup
    size_t begin = 0;  // byte offset in the original text
    size_t end = 0;    // one past the last byte
    bool isWord = true; // false for a punctuation/symbol token
};

struct Tokenization {
    std::vector<Token> tokens;
    size_t invalidBytes = 0; // count of bytes that were not valid UTF-8
};

Tokenization tokenize(std::string_view text);

// Lower-cases one UTF-8 string with the same rules (no splitting).
std::string lowerCase(std::string_view text);

} // namespace attnviz
