// SPDX-License-Identifier: GPL-3.0-or-later
// Private to the core: what both subword tokenizers keep of their vocabulary file (id -> token,
// token -> id) and answer through SubwordTokenizer's lookups.
#pragma once

#include "attnviz/subword.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnviz {

class VocabularyTokenizer : public SubwordTokenizer {
public:
    int vocabSize() const override { return int(m_tokens.size()); }
    std::string token(int id) const override
    {
        return id >= 0 && id < int(m_tokens.size()) ? m_tokens[size_t(id)] : std::string();
    }
    int id(std::string_view token) const override
    {
        const auto it = m_ids.find(std::string(token));
        return it == m_ids.end() ? -1 : it->second;
    }

protected:
    std::vector<std::string> m_tokens;          // id -> token as the file spells it
    std::unordered_map<std::string, int> m_ids; // token -> id
};

} // namespace attnviz
