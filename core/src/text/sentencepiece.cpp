// SPDX-License-Identifier: GPL-3.0-or-later
// SentencePiece models (subword.h: loadSentencePiece) run by the SentencePiece library: the file's
// own normalizer and pieces, so that ids are the library's; pieces shown with "▁" as "␣", byte
// pieces (<0xE2>) as they are, unknown pieces flagged.
#include "attnviz/fileio.h"
#include "attnviz/model.h"
#include "attnviz/subword.h"

#include <sentencepiece_processor.h>

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

private:
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

    std::unique_ptr<sentencepiece::SentencePieceProcessor> m_sp;
    bool m_appendEos = true;
};

} // namespace

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
