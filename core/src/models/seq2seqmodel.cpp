// SPDX-License-Identifier: GPL-3.0-or-later
// An encoder-decoder model folder (seq2seqmodel.h): config.json's architecture, the weights of both
// stacks (forward/seq2seq.h), teacher-forced traces that keep the encoder's, the decoder's and the
// cross attentions (Trace::seq2seq), float32 and float64, and greedy decoding (encoderdecoder.h).
#include "seq2seqmodel.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/fileio.h"
#include "attnviz/subword.h"
#include "families/family.h"
#include "forward/seq2seq.h"

#include <mutex>

namespace attnviz {

namespace seq2seqmodel {

std::string baseName(const std::string &dir)
{
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/')
        d.pop_back();
    const size_t slash = d.rfind('/');
    return slash == std::string::npos ? d : d.substr(slash + 1);
}

class EncoderDecoderModel final : public Model {
public:
    EncoderDecoderModel(Architecture arch, std::string dir, std::shared_ptr<const Seq2SeqWeights<float>> w,
                        std::string dtype, std::unique_ptr<SubwordTokenizer> tokenizer, std::string noTokenizer)
        : m_arch(std::move(arch)), m_dir(std::move(dir)), m_float(std::move(w)), m_dtype(std::move(dtype)),
          m_tokenizer(std::move(tokenizer)), m_noTokenizer(std::move(noTokenizer))
    {
    }

    ModelInfo info() const override
    {
        ModelInfo i;
        i.family = m_arch.family;
        i.name = baseName(m_dir);
        i.source = m_dir;
        i.layers = m_arch.layers;
        i.heads = m_arch.heads;
        i.kvHeads = m_arch.kvHeads;
        i.dModel = m_arch.dModel;
        i.dHead = m_arch.dHead;
        i.dFeedForward = m_arch.dFeedForward;
        i.vocabulary = m_arch.vocabulary;
        i.maxPositions = m_arch.positions == PositionKind::RelativeBuckets ? 0 : m_arch.maxPositions; // T5: no table
        i.parameters = m_float->parameters;
        i.tokenizer = m_tokenizer ? m_tokenizer->kind() + " (" + std::to_string(m_tokenizer->vocabSize()) + ")" : "none (ids only)";
        i.dtype = m_dtype;
        i.weightBytes = m_float->parameters * int64_t(sizeof(float));
        i.causal = true;
        i.architecture = m_arch;
        return i;
    }

    // The source as T5Tokenizer encodes it (SentencePiece's pieces, then </s>) or BartTokenizer
    // (<s>, the byte-level BPE tokens, </s>).
    Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override
    {
        out.clear();
        if (!m_tokenizer)
            return Status::error(StatusCode::Unavailable, m_noTokenizer);
        if (!m_bpe)
            return m_tokenizer->encode(text, out);
        if (m_arch.seq2seq.bosId >= 0)
            out.push_back(tokensOf({m_arch.seq2seq.bosId}).front());
        std::vector<TraceToken> pieces;
        if (Status st = m_tokenizer->encode(text, pieces); !st)
            return st;
        out.insert(out.end(), pieces.begin(), pieces.end());
        out.push_back(tokensOf({m_arch.seq2seq.eosId}).front());
        return {};
    }

    std::string decode(const std::vector<int> &ids) const override
    {
        return m_tokenizer ? m_tokenizer->decode(ids) : std::string();
    }

    Status trace(const TraceRequest &request, Trace<float> &out) override { return run(request, *m_float, out); }

    Status trace(const TraceRequest &request, Trace<double> &out) override
    {
        {
            std::lock_guard<std::mutex> lock(m_doubleMutex);
            if (!m_double)
                m_double = castSeq2SeqWeights<double>(*m_float);
        }
        return run(request, *m_double, out);
    }

private:
    // Tokens of bare ids: their pieces where the folder has a tokenizer, else the ids written out.
    std::vector<TraceToken> tokensOf(const std::vector<int> &ids) const
    {
        std::vector<TraceToken> t(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) {
            t[i].id = ids[i];
            const std::string piece = m_tokenizer ? m_tokenizer->token(ids[i]) : std::string();
            t[i].text = piece.empty() ? std::to_string(ids[i]) : piece;
            const bool special =
                ids[i] == m_arch.seq2seq.eosId || ids[i] == m_arch.seq2seq.padId || ids[i] == m_arch.seq2seq.bosId;
            // a byte-level BPE token as its bytes (Ġ is a space), a SentencePiece piece as written
            t[i].display = m_bpe && !special && !piece.empty() ? m_tokenizer->decode({ids[i]}) : t[i].text;
            for (const char *space : {"\xE2\x96\x81", " "}) // SentencePiece's and BPE's space made visible
                for (size_t k = t[i].display.find(space); m_tokenizer && k != std::string::npos;
                     k = t[i].display.find(space, k))
                    t[i].display.replace(k, std::string_view(space).size(), "\xE2\x90\xA3");
            t[i].special = special;
        }
        return t;
    }

    template <typename T>
    Status run(const TraceRequest &request, const Seq2SeqWeights<T> &w, Trace<T> &out)
    {
        if (!request.edits.empty())
            return Status::error(StatusCode::Unavailable, "interventions in encoder-decoder models (" + m_arch.family +
                                                              ") are not computed yet");
        Seq2SeqInput in;
        std::vector<TraceToken> source, target;
        if (!request.ids.empty()) {
            source = tokensOf(request.ids);
        } else if (Status st = tokenize(request.text, source); !st) {
            return st;
        }
        target.push_back(tokensOf({m_arch.seq2seq.decoderStartId}).front());
        target.front().special = true; // the decoder's start token
        if (!request.targetIds.empty()) {
            for (const TraceToken &t : tokensOf(request.targetIds))
                target.push_back(t);
        } else if (!request.target.empty()) {
            std::vector<TraceToken> typed;
            if (Status st = tokenize(request.target, typed); !st)
                return st;
            // the decoder is fed the target without the </s> a source gets; BART's <s> stays, as
            // shift_tokens_right of its labels keeps it after the start token
            for (const TraceToken &t : typed)
                if (!t.special || (t.id == m_arch.seq2seq.bosId && &t == &typed.front()))
                    target.push_back(t);
        }
        Trace<T> r;
        r.totalKeyTokens = 0;
        r.totalTokens = int(target.size());
        if (request.maxTokens > 0) {
            if (int(source.size()) > request.maxTokens || int(target.size()) > request.maxTokens)
                r.cutReason = "cut at " + std::to_string(request.maxTokens) + " tokens (source and target each)";
            source.resize(std::min(source.size(), size_t(request.maxTokens)));
            target.resize(std::min(target.size(), size_t(request.maxTokens)));
        }
        for (const TraceToken &t : source)
            in.source.push_back(t.id);
        for (const TraceToken &t : target)
            in.decoder.push_back(t.id);
        in.topK = request.topK;
        in.allPredictions = request.allPredictions;
        in.keepScores = request.keepScores;
        in.cancel = request.cancel;
        if (Status st = runSeq2Seq(m_arch, w, in, r); !st)
            return st;
        r.seq2seq.sourceTokens = std::move(source);
        r.tokens = std::move(target);
        for (std::vector<TokenProb> &top : r.predictions.next)
            for (TokenProb &p : top) {
                p.token = m_tokenizer ? m_tokenizer->token(p.id) : std::to_string(p.id);
                p.display = tokensOf({p.id}).front().display;
            }
        r.device = "cpu";
        if (request.device)
            r.deviceNote = "encoder-decoder models do not run on a device yet: the CPU computed";
        out = std::move(r);
        return {};
    }

    Architecture m_arch;
    std::string m_dir;
    std::shared_ptr<const Seq2SeqWeights<float>> m_float;
    std::mutex m_doubleMutex;
    std::shared_ptr<const Seq2SeqWeights<double>> m_double;
    std::string m_dtype;
    std::unique_ptr<SubwordTokenizer> m_tokenizer;
    std::string m_noTokenizer; // why there is none
    bool m_bpe = m_tokenizer && m_tokenizer->kind().find("BPE") != std::string::npos;
};

} // namespace seq2seqmodel

using seq2seqmodel::EncoderDecoderModel;

Status detail::openEncoderDecoder(const std::string &dir, const Architecture &arch, const PretrainedLoadOptions &options,
                                  std::unique_ptr<Model> &out)
{
    const families::Family *family = families::familyNamed(arch.family);
    if (!family)
        return Status::error(StatusCode::InvalidInput, dir + ": no family named " + arch.family);
    // the tokenizer: spiece.model (T5Tokenizer's file) or vocab.json + merges.txt (BartTokenizer's)
    // where the folder has them
    std::unique_ptr<SubwordTokenizer> tokenizer;
    std::string noTokenizer;
    const std::string spiece = dir + "/spiece.model";
    uint64_t size = 0;
    if (arch.family == "bart") {
        const std::string vocab = dir + "/vocab.json", merges = dir + "/merges.txt";
        if (regularFileSize(vocab, size) && regularFileSize(merges, size)) {
            if (Status lt = loadByteLevelBpe(vocab, merges, tokenizer); !lt)
                return lt;
            if (tokenizer->vocabSize() > arch.vocabulary)
                return Status::error(StatusCode::InvalidInput, vocab + ": " + std::to_string(tokenizer->vocabSize()) +
                                                                   " tokens, but the embeddings have " +
                                                                   std::to_string(arch.vocabulary) + " rows (" + dir +
                                                                   "/config.json: vocab_size)");
        } else {
            noTokenizer = dir + "/vocab.json and merges.txt: missing (BART's tokenizer): only token ids trace";
        }
    } else if (arch.family != "t5") {
        noTokenizer = dir + ": " + arch.family + "'s tokenizer (" +
                      (arch.family == "marian" ? "source.spm, target.spm and vocab.json" : "sentencepiece.bpe.model") +
                      ") is not read yet: only token ids trace";
    } else if (Status st = regularFileSize(spiece, size); st) {
        if (Status lt = loadSentencePiece(spiece, true, tokenizer); !lt)
            return lt;
        if (tokenizer->vocabSize() > arch.vocabulary)
            return Status::error(StatusCode::InvalidInput, spiece + ": " + std::to_string(tokenizer->vocabSize()) +
                                                               " pieces, but the embeddings have " + std::to_string(arch.vocabulary) +
                                                               " rows (" + dir + "/config.json: vocab_size)");
    } else if (st.message.find(": no such file") == std::string::npos) {
        return st; // there, but not a regular file
    } else {
        noTokenizer = spiece + ": missing (the folder's tokenizer): only token ids trace";
    }
    TensorArchive archive;
    if (Status st = archive.openFolder(dir); !st)
        return st;
    archive.setProgress(options.progress);
    auto w = std::make_shared<Seq2SeqWeights<float>>();
    try {
        if (Status st = loadSeq2SeqWeights(archive, arch, family->names(arch), *w); !st)
            return st;
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::BackendFailed, archive.fileOf(std::string()) + ": out of memory converting " +
                                                            describeBytes(archive.totalBytes()) + " of weights to float32");
    }
    out = std::make_unique<EncoderDecoderModel>(arch, dir, std::move(w), archive.dtypeSummary(), std::move(tokenizer),
                                                std::move(noTokenizer));
    return {};
}

Status greedyTarget(Model &model, const TraceRequest &source, int maxNew, std::vector<int> &target)
{
    const Architecture arch = model.info().architecture;
    if (!arch.encoderDecoder)
        return Status::error(StatusCode::InvalidInput, model.info().name + ": not an encoder-decoder model");
    std::vector<int> ids;
    TraceRequest r = source;
    r.target.clear();
    r.topK = 1;
    r.allPredictions = false;
    Trace<double> t;
    for (int step = 0; step < maxNew; ++step) {
        r.targetIds = ids;
        if (ids.empty()) // the decoder reads its start token alone
            r.targetIds.clear();
        if (Status st = model.trace(r, t); !st)
            return st;
        const int next = t.predictions.next.back().front().id;
        ids.push_back(next);
        if (next == arch.seq2seq.eosId)
            break;
    }
    target = std::move(ids);
    return {};
}

} // namespace attnviz
