// SPDX-License-Identifier: GPL-3.0-or-later
// SentencePiece models (subword.h: loadSentencePiece) run by the SentencePiece library: the file's
// own normalizer and pieces, so that ids are the library's; pieces shown with "▁" as "␣", byte
// pieces (<0xE2>) as they are, unknown pieces flagged. Marian's tokenizer (loadMarianTokenizer): a
// .spm's pieces looked up in the folder's vocab.json. mBART's (loadMBartTokenizer): a
// sentencepiece.bpe.model's pieces renumbered as fairseq's dictionary, the language codes after them.
#include "attnviz/fileio.h"
#include "attnviz/model.h"
#include "attnviz/subword.h"

#include "../formats/jsonread.h"

#include <sentencepiece_processor.h>

#include <map>

namespace attnviz {

namespace {

class SentencePieceTokenizer final : public SubwordTokenizer {
public:
    SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, bool appendEos)
        : m_sp(std::move(sp)), m_appendEos(appendEos && m_sp->eos_id() >= 0)
    {
    }

    std::string kind() const override { return "SentencePiece"; }
    int vocabSize() const override { return m_sp->GetPieceSize(); }

    Status encode(std::string_view text, std::vector<TraceToken> &out) const override
    {
        out.clear();
        const sentencepiece::ImmutableSentencePieceText spt = m_sp->EncodeAsImmutableProto(absl::string_view(text.data(), text.size()));
        for (const auto &p : spt.pieces()) {
            TraceToken t;
            t.id = int(p.id());
            t.text = p.piece();
            t.display = display(t.text);
            t.begin = p.begin();
            t.end = p.end();
            t.unknown = m_sp->IsUnknown(t.id);
            out.push_back(std::move(t));
        }
        if (m_appendEos) {
            TraceToken e;
            e.id = m_sp->eos_id();
            e.text = e.display = m_sp->IdToPiece(e.id);
            e.begin = e.end = text.size();
            e.special = true;
            out.push_back(std::move(e));
        }
        return {};
    }

    std::string decode(const std::vector<int> &ids) const override
    {
        std::vector<int> in;
        for (int id : ids)
            if (id >= 0 && id < vocabSize())
                in.push_back(id);
        std::string text;
        if (!m_sp->Decode(in, &text).ok())
            return std::string();
        return text;
    }

    std::string token(int id) const override { return id >= 0 && id < vocabSize() ? m_sp->IdToPiece(id) : std::string(); }

    int id(std::string_view token) const override
    {
        const int i = m_sp->PieceToId(absl::string_view(token.data(), token.size()));
        return i == m_sp->unk_id() && m_sp->IdToPiece(i) != token ? -1 : i; // PieceToId answers <unk> for an absent piece
    }

    // "▁" (U+2581, SentencePiece's space) made a visible space "␣"
    static std::string display(const std::string &piece)
    {
        std::string s;
        for (size_t i = 0; i < piece.size();) {
            if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {
                s += "\xE2\x90\xA3";
                i += 3;
            } else {
                s += piece[i++];
            }
        }
        return s;
    }

private:
    std::unique_ptr<sentencepiece::SentencePieceProcessor> m_sp;
    bool m_appendEos = true;
};

// MarianTokenizer (tokenization_marian.py) for one side: a ">>xx<<" language code at the front kept
// as a token (language_code_re.match) and every such code removed from the text (its sub), the
// rest encoded by the .spm to pieces, each piece's id read from vocab.json (<unk>'s where absent),
// then </s>.
class MarianTokenizer final : public SubwordTokenizer {
public:
    MarianTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, std::map<std::string, int> vocab)
        : m_sp(std::move(sp)), m_vocab(std::move(vocab))
    {
        for (const auto &[piece, id] : m_vocab) {
            if (size_t(id) >= m_pieces.size())
                m_pieces.resize(size_t(id) + 1);
            m_pieces[size_t(id)] = piece;
        }
        m_unk = m_vocab.at("<unk>");
        m_eos = m_vocab.at("</s>");
        const auto pad = m_vocab.find("<pad>");
        m_pad = pad == m_vocab.end() ? -1 : pad->second;
    }

    std::string kind() const override { return "SentencePiece + vocab.json (Marian)"; }
    int vocabSize() const override { return int(m_pieces.size()); }

    Status encode(std::string_view text, std::vector<TraceToken> &out) const override
    {
        out.clear();
        // the codes: ">>", then at least one character, then the line's last "<<" (Python's greedy .+)
        auto codeAt = [&](size_t i) -> size_t { // its end, or npos
            if (text.compare(i, 2, ">>") != 0)
                return std::string_view::npos;
            const size_t line = std::min(text.find('\n', i), text.size());
            const size_t close = text.substr(0, line).rfind("<<");
            return close != std::string_view::npos && close >= i + 3 ? close + 2 : std::string_view::npos;
        };
        std::string rest;
        std::vector<size_t> at; // rest's byte k is the text's byte at[k]
        for (size_t i = 0; i < text.size();) {
            if (const size_t end = codeAt(i); end != std::string_view::npos) {
                if (i == 0)
                    out.push_back(token(std::string(text.substr(0, end)), 0, end));
                i = end;
                continue;
            }
            rest += text[i];
            at.push_back(i++);
        }
        at.push_back(text.size());
        const sentencepiece::ImmutableSentencePieceText spt = m_sp->EncodeAsImmutableProto(rest);
        for (const auto &p : spt.pieces())
            out.push_back(token(p.piece(), at[std::min(size_t(p.begin()), at.size() - 1)], at[std::min(size_t(p.end()), at.size() - 1)]));
        TraceToken e;
        e.id = m_eos;
        e.text = e.display = "</s>";
        e.begin = e.end = text.size();
        e.special = true;
        out.push_back(std::move(e));
        return {};
    }

    // The pieces decoded by the .spm, run by run; </s> and <pad> left out, a token the .spm does not
    // have (a language code, <unk>) written as it is between spaces.
    std::string decode(const std::vector<int> &ids) const override
    {
        std::string text;
        std::vector<std::string> run;
        auto flush = [&] {
            std::string part;
            if (!run.empty() && m_sp->Decode(run, &part).ok())
                text += part;
            run.clear();
        };
        for (int id : ids) {
            if (id < 0 || id >= vocabSize() || id == m_eos || id == m_pad || m_pieces[size_t(id)].empty())
                continue;
            const std::string &piece = m_pieces[size_t(id)];
            if (m_sp->PieceToId(piece) != m_sp->unk_id() || piece == m_sp->IdToPiece(m_sp->unk_id())) {
                run.push_back(piece);
            } else {
                flush();
                text += (text.empty() ? "" : " ") + piece + " ";
            }
        }
        flush();
        return text;
    }

    std::string token(int id) const override { return id >= 0 && id < vocabSize() ? m_pieces[size_t(id)] : std::string(); }

    int id(std::string_view token) const override
    {
        const auto it = m_vocab.find(std::string(token));
        return it == m_vocab.end() ? -1 : it->second;
    }

private:
    TraceToken token(const std::string &piece, size_t begin, size_t end) const
    {
        TraceToken t;
        const auto it = m_vocab.find(piece);
        t.id = it == m_vocab.end() ? m_unk : it->second;
        t.text = piece;
        t.display = SentencePieceTokenizer::display(piece);
        t.begin = begin;
        t.end = end;
        t.unknown = t.id == m_unk;
        return t;
    }

    std::unique_ptr<sentencepiece::SentencePieceProcessor> m_sp;
    std::map<std::string, int> m_vocab;
    std::vector<std::string> m_pieces; // by id
    int m_unk = 1, m_eos = 0, m_pad = -1;
};

// MBartTokenizer / MBart50Tokenizer (tokenization_mbart.py, tokenization_mbart50.py) without the
// language codes around a text, which the model adds for the language chosen: the text encoded by
// the SentencePiece library to pieces (_tokenize), each piece's id its SentencePiece id + 1
// (fairseq_offset), the library's <unk> (id 0) at fairseq's <unk>, 3 (_convert_token_to_id); ids
// 0..3 are <s>, <pad>, </s>, <unk> (fairseq_tokens_to_ids), the model's own <s> and </s> pieces
// never reached; after the model's pieces the language codes (lang_code_to_id: sp_model_size + i +
// fairseq_offset), then <mask>.
class MBartTokenizer final : public SubwordTokenizer {
public:
    MBartTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, MBartLayout layout)
        : m_sp(std::move(sp)), m_codes(mbartLanguages(layout)), m_pieces(m_sp->GetPieceSize())
    {
    }

    std::string kind() const override { return "SentencePiece BPE (mBART)"; }
    int vocabSize() const override { return m_pieces + kOffset + int(m_codes.size()) + 1; }

    Status encode(std::string_view text, std::vector<TraceToken> &out) const override
    {
        out.clear();
        const sentencepiece::ImmutableSentencePieceText spt = m_sp->EncodeAsImmutableProto(absl::string_view(text.data(), text.size()));
        for (const auto &p : spt.pieces()) {
            TraceToken t;
            t.unknown = p.id() == 0 || m_sp->IsUnknown(int(p.id()));
            t.id = t.unknown ? kUnk : int(p.id()) + kOffset;
            t.text = p.piece();
            t.display = SentencePieceTokenizer::display(t.text);
            t.begin = p.begin();
            t.end = p.end();
            out.push_back(std::move(t));
        }
        return {};
    }

    // The text of the pieces, the specials and language codes left out (decode's
    // skip_special_tokens, as generated text is shown).
    std::string decode(const std::vector<int> &ids) const override
    {
        std::vector<int> in;
        for (int id : ids)
            if (id > kUnk && id - kOffset < m_pieces)
                in.push_back(id - kOffset);
            else if (id == kUnk)
                in.push_back(m_sp->unk_id());
        std::string text;
        if (!m_sp->Decode(in, &text).ok())
            return std::string();
        return text;
    }

    std::string token(int id) const override
    {
        static const char *const fairseq[] = {"<s>", "<pad>", "</s>", "<unk>"};
        if (id >= 0 && id <= kUnk)
            return fairseq[id];
        if (id > kUnk && id - kOffset < m_pieces)
            return m_sp->IdToPiece(id - kOffset);
        const int code = id - kOffset - m_pieces;
        if (code >= 0 && code < int(m_codes.size()))
            return m_codes[size_t(code)];
        return code == int(m_codes.size()) ? "<mask>" : std::string();
    }

    int id(std::string_view token) const override
    {
        static const char *const fairseq[] = {"<s>", "<pad>", "</s>", "<unk>"};
        for (int i = 0; i <= kUnk; ++i)
            if (token == fairseq[i])
                return i;
        for (size_t c = 0; c < m_codes.size(); ++c)
            if (token == m_codes[c])
                return m_pieces + kOffset + int(c);
        if (token == "<mask>")
            return vocabSize() - 1;
        const int i = m_sp->PieceToId(absl::string_view(token.data(), token.size()));
        return i > 0 && !m_sp->IsControl(i) ? i + kOffset : -1;
    }

private:
    static constexpr int kOffset = 1, kUnk = 3;
    std::unique_ptr<sentencepiece::SentencePieceProcessor> m_sp;
    const std::vector<std::string> &m_codes;
    int m_pieces = 0;
};

} // namespace

Status loadMarianTokenizer(const std::string &spmFile, const std::string &vocabJson, std::unique_ptr<SubwordTokenizer> &out)
{
    std::string bytes;
    if (Status st = readRegularFile(spmFile, kMaxTokenizerFileBytes, bytes); !st)
        return st;
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    if (const auto st = sp->LoadFromSerializedProto(absl::string_view(bytes.data(), bytes.size())); !st.ok())
        return Status::error(StatusCode::ParseError, spmFile + ": not a SentencePiece model (" + st.ToString() + ")");
    nlohmann::json j;
    if (Status st = detail::readJsonFile(vocabJson, kMaxTokenizerFileBytes, j); !st)
        return st;
    if (!j.is_object())
        return Status::error(StatusCode::ParseError, vocabJson + ": not a JSON object of pieces and ids");
    std::map<std::string, int> vocab;
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > 10000000)
            return Status::error(StatusCode::ParseError, vocabJson + ": " + detail::oneLine(it.key()) + ": not an id from 0 to 10,000,000");
        vocab[it.key()] = int(it.value().get<int64_t>());
    }
    for (const char *needed : {"</s>", "<unk>"})
        if (!vocab.count(needed))
            return Status::error(StatusCode::ParseError, vocabJson + ": no " + needed + " (MarianTokenizer's end and unknown tokens)");
    out = std::make_unique<MarianTokenizer>(std::move(sp), std::move(vocab));
    return {};
}

const std::vector<std::string> &mbartLanguages(MBartLayout layout)
{
    // FAIRSEQ_LANGUAGE_CODES of tokenization_mbart.py, and of tokenization_mbart50.py (the same 25,
    // then 27 more)
    static const std::vector<std::string> cc25 = {"ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI",
                                                  "fr_XX", "gu_IN", "hi_IN", "it_IT", "ja_XX", "kk_KZ", "ko_KR",
                                                  "lt_LT", "lv_LV", "my_MM", "ne_NP", "nl_XX", "ro_RO", "ru_RU",
                                                  "si_LK", "tr_TR", "vi_VN", "zh_CN"};
    static const std::vector<std::string> fifty = [] {
        std::vector<std::string> v = cc25;
        for (const char *c : {"af_ZA", "az_AZ", "bn_IN", "fa_IR", "he_IL", "hr_HR", "id_ID", "ka_GE", "km_KH",
                              "mk_MK", "ml_IN", "mn_MN", "mr_IN", "pl_PL", "ps_AF", "pt_XX", "sv_SE", "sw_KE",
                              "ta_IN", "te_IN", "th_TH", "tl_XX", "uk_UA", "ur_PK", "xh_ZA", "gl_ES", "sl_SI"})
            v.emplace_back(c);
        return v;
    }();
    return layout == MBartLayout::Fifty ? fifty : cc25;
}

Status loadMBartTokenizer(const std::string &modelFile, MBartLayout layout, std::unique_ptr<SubwordTokenizer> &out)
{
    std::string bytes;
    if (Status st = readRegularFile(modelFile, kMaxTokenizerFileBytes, bytes); !st)
        return st;
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    if (const auto st = sp->LoadFromSerializedProto(absl::string_view(bytes.data(), bytes.size())); !st.ok())
        return Status::error(StatusCode::ParseError, modelFile + ": not a SentencePiece model (" + st.ToString() + ")");
    if (sp->GetPieceSize() < 4 || sp->unk_id() != 0)
        return Status::error(StatusCode::ParseError, modelFile + ": <unk> is not piece 0 of " + std::to_string(sp->GetPieceSize()) +
                                                         " (mBART's ids are the model's shifted by one, its <unk> at 3)");
    out = std::make_unique<MBartTokenizer>(std::move(sp), layout);
    return {};
}

Status parseSentencePiece(const std::string &modelBytes, const std::string &name, bool appendEos,
                          std::unique_ptr<SubwordTokenizer> &out)
{
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    if (const auto st = sp->LoadFromSerializedProto(absl::string_view(modelBytes.data(), modelBytes.size())); !st.ok())
        return Status::error(StatusCode::ParseError, name + ": not a SentencePiece model (" + st.ToString() + ")");
    if (sp->GetPieceSize() < 1)
        return Status::error(StatusCode::ParseError, name + ": a SentencePiece model without pieces");
    out = std::make_unique<SentencePieceTokenizer>(std::move(sp), appendEos);
    return {};
}

Status loadSentencePiece(const std::string &modelFile, bool appendEos, std::unique_ptr<SubwordTokenizer> &out)
{
    std::string bytes;
    if (Status st = readRegularFile(modelFile, kMaxTokenizerFileBytes, bytes); !st)
        return st;
    return parseSentencePiece(bytes, modelFile, appendEos, out);
}

} // namespace attnviz
