// SPDX-License-Identifier: GPL-3.0-or-later
// An encoder-decoder model folder (seq2seqmodel.h): config.json's architecture, the weights of both
// stacks (forward/seq2seq.h), teacher-forced traces that keep the encoder's, the decoder's and the
// cross attentions (Trace::seq2seq), float32 and float64, and greedy decoding (encoderdecoder.h).
#include "seq2seqmodel.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/fileio.h"
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
    EncoderDecoderModel(Architecture arch, std::string dir, std::shared_ptr<const Seq2SeqWeights<float>> w, std::string dtype)
        : m_arch(std::move(arch)), m_dir(std::move(dir)), m_float(std::move(w)), m_dtype(std::move(dtype))
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
        i.maxPositions = 0;
        i.parameters = m_float->parameters;
        i.tokenizer = "none (ids only)";
        i.dtype = m_dtype;
        i.weightBytes = m_float->parameters * int64_t(sizeof(float));
        i.causal = true;
        i.architecture = m_arch;
        return i;
    }

    Status tokenize(std::string_view, std::vector<TraceToken> &out) const override
    {
        out.clear();
        return Status::error(StatusCode::Unavailable, m_dir + ": T5's tokenizer (spiece.model) is not read yet: trace token ids");
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
    template <typename T>
    Status run(const TraceRequest &request, const Seq2SeqWeights<T> &w, Trace<T> &out)
    {
        Seq2SeqInput in;
        std::vector<TraceToken> source, target;
        if (!request.ids.empty()) {
            in.source = request.ids;
        } else {
            if (Status st = tokenize(request.text, source); !st)
                return st;
            for (const TraceToken &t : source)
                in.source.push_back(t.id);
        }
        in.decoder.push_back(m_arch.seq2seq.decoderStartId);
        if (!request.targetIds.empty()) {
            in.decoder.insert(in.decoder.end(), request.targetIds.begin(), request.targetIds.end());
        } else if (!request.target.empty()) {
            if (Status st = tokenize(request.target, target); !st)
                return st;
            for (const TraceToken &t : target)
                if (t.id != m_arch.seq2seq.eosId)
                    in.decoder.push_back(t.id);
        }
        Trace<T> r;
        r.totalKeyTokens = 0;
        r.totalTokens = int(in.decoder.size());
        if (request.maxTokens > 0) {
            if (int(in.source.size()) > request.maxTokens || int(in.decoder.size()) > request.maxTokens)
                r.cutReason = "cut at " + std::to_string(request.maxTokens) + " tokens (source and target each)";
            in.source.resize(std::min(in.source.size(), size_t(request.maxTokens)));
            in.decoder.resize(std::min(in.decoder.size(), size_t(request.maxTokens)));
        }
        in.topK = request.topK;
        in.allPredictions = request.allPredictions;
        in.keepScores = request.keepScores;
        in.cancel = request.cancel;
        if (Status st = runSeq2Seq(m_arch, w, in, r); !st)
            return st;
        auto tokensOf = [](const std::vector<int> &ids) {
            std::vector<TraceToken> t(ids.size());
            for (size_t i = 0; i < ids.size(); ++i) {
                t[i].id = ids[i];
                t[i].text = t[i].display = std::to_string(ids[i]);
            }
            return t;
        };
        r.seq2seq.sourceTokens = tokensOf(in.source);
        r.tokens = tokensOf(in.decoder);
        r.tokens.front().special = true; // the decoder's start token
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
};

} // namespace seq2seqmodel

using seq2seqmodel::EncoderDecoderModel;

Status detail::openEncoderDecoder(const std::string &dir, const Architecture &arch, const PretrainedLoadOptions &options,
                                  std::unique_ptr<Model> &out)
{
    const families::Family *family = families::familyNamed(arch.family);
    if (!family)
        return Status::error(StatusCode::InvalidInput, dir + ": no family named " + arch.family);
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
    out = std::make_unique<EncoderDecoderModel>(arch, dir, std::move(w), archive.dtypeSummary());
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
