// SPDX-License-Identifier: GPL-3.0-or-later
// A Hugging Face model folder as a Model (pretrained.h): config.json read as an Architecture
// (families/), the tokenizer files, the canonical weights (forward/weights.cpp), traces
// (forward/forward.cpp) with the cut at the model's positions and the incremental path of causal
// models.
#include "attnviz/pretrained.h"
#include "attnviz/backend.h"
#include "attnviz/device.h"
#include "attnviz/fileio.h"
#include "attnviz/gguf.h"
#include "attnviz/memorybudget.h"
#include "attnviz/modelstores.h"
#include "attnviz/subword.h"
#include "families/family.h"
#include "forward/weights.h"
#include "../reads/readout.h"
#include "ggufmodel.h"
#include "seq2seqmodel.h"
#include "../formats/jsonread.h"
#include "../text/unicodetext.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <new>
#include <type_traits>

namespace attnviz {

namespace {

constexpr uint64_t kConfigCap = 10ull * 1000 * 1000;

std::string withCommas(int64_t v)
{
    std::string s = std::to_string(v < 0 ? -v : v);
    for (int i = int(s.size()) - 3; i > 0; i -= 3)
        s.insert(size_t(i), ",");
    return (v < 0 ? "-" : "") + s;
}

std::string baseName(const std::string &dir)
{
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/')
        d.pop_back();
    const size_t slash = d.rfind('/');
    return slash == std::string::npos ? d : d.substr(slash + 1);
}

// A path that names a GGUF file: by its extension, or a regular file with the GGUF magic (Ollama's
// blobs have no extension).
bool isGgufPath(const std::string &path)
{
    if (path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0)
        return true;
    uint64_t size = 0;
    return regularFileSize(path, size).ok() && looksLikeGguf(path);
}

bool isFile(const std::string &path)
{
    uint64_t size = 0;
    return regularFileSize(path, size).ok();
}

std::atomic<uint64_t> g_producers{0};

// Tokens that tokenizers add of their own, by spelling (for traces of bare ids).
bool isSpecialSpelling(const std::string &t)
{
    for (const char *s : {"[CLS]", "[SEP]", "<|endoftext|>", "<s>", "</s>", "<bos>", "<eos>", "<|begin_of_text|>",
                          "<|end_of_text|>", "<|im_start|>", "<|im_end|>"})
        if (t == s)
            return true;
    return false;
}

// GPT-2's byte-level markers made visible for labels.
std::string displayOf(const std::string &token)
{
    std::string s;
    for (size_t i = 0; i < token.size();) {
        if (token.compare(i, 2, "\xC4\xA0") == 0) { // Ġ (space)
            s += "\xE2\x90\xA3";                    // ␣
            i += 2;
        } else if (token.compare(i, 2, "\xC4\x8A") == 0) { // Ċ (newline)
            s += "\xE2\x86\xB5";                           // ↵
            i += 2;
        } else {
            s += token[i++];
        }
    }
    return s;
}

// A predicted token for labels: its decoded text (GPT-2's byte-level "âĢĻ" reads "’"), a space as
// "␣" and a newline as "↵", and bytes that are only part of a UTF-8 character as \xNN, as the token
// chips write them (the vocabulary's spelling of such a piece, "âĻ", reads as two letters it is not).
std::string predictionDisplay(const std::string &decoded, const std::string &spelling)
{
    std::string out;
    for (const unicode::Char &c : unicode::decodeUtf8(decoded)) {
        if (c.cp == 0xFFFD && decoded.compare(c.begin, c.end - c.begin, "\xEF\xBF\xBD") != 0) {
            for (uint32_t k = c.begin; k < c.end; ++k) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(uint8_t(decoded[k])));
                out += hex;
            }
            continue;
        }
        if (c.cp == ' ')
            out += "\xE2\x90\xA3";
        else if (c.cp == '\n')
            out += "\xE2\x86\xB5";
        else
            out.append(decoded, c.begin, c.end - c.begin);
    }
    return out.empty() ? displayOf(spelling) : out;
}

} // namespace

class PretrainedModel final : public Model {
public:
    PretrainedModel(Architecture config, std::string dir, std::shared_ptr<const ModelWeights<float>> weights,
                    std::unique_ptr<SubwordTokenizer> tokenizer, std::string dtype)
        : m_config(std::move(config)), m_dir(std::move(dir)), m_float(std::move(weights)), m_tokenizer(std::move(tokenizer)),
          m_dtype(std::move(dtype)), m_producerFloat(++g_producers), m_producerDouble(++g_producers)
    {
        if (m_tokenizer && m_config.head == LmHead::MaskedLm)
            m_maskId = m_tokenizer->id("[MASK]");
        keepTraceMemory(); // a trace's ~GB of matrices is reused by the next, not refaulted
    }

    ModelInfo info() const override
    {
        ModelInfo i;
        i.family = m_config.family;
        const std::string cached = hfCacheRepo(m_dir); // "ORG/NAME", not the snapshot's revision hash
        i.name = m_dir.empty() ? "seeded " + m_config.family : !cached.empty() ? cached : baseName(m_dir);
        i.source = m_dir;
        i.layers = m_config.layers;
        i.heads = m_config.heads;
        i.kvHeads = m_config.kvHeads;
        i.dModel = m_config.dModel;
        i.dHead = m_config.dHead;
        i.dFeedForward = m_config.dFeedForward;
        i.vocabulary = int(m_float->tokens.rows());
        i.maxPositions = m_config.maxPositions;
        i.parameters = m_float->parameters;
        i.tokenizer = m_tokenizer ? m_tokenizer->kind() + " (" + withCommas(m_tokenizer->vocabSize()) + ")" : "none (ids only)";
        i.dtype = m_dtype;
        i.weightBytes = weightBytes(*m_float);
        i.causal = m_config.causal;
        i.maskedLm = m_float->hasMlmHead;
        i.architecture = m_config;
        return i;
    }

    Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override
    {
        if (!m_tokenizer)
            return Status::error(StatusCode::Unavailable, info().name + ": no tokenizer (seeded weights take ids)");
        if (Status st = m_tokenizer->encode(text, out); !st)
            return st;
        // An added token beyond the embedding rows (Gemma 3's <image_soft_token> in a text model):
        // only tokenizer.json's added tokens may lie there (openPretrained checks the rest).
        for (const TraceToken &t : out)
            if (t.id >= m_float->tokens.rows()) {
                const std::string what = quoteText(m_tokenizer->token(t.id)) + " (id " + withCommas(t.id) + ")";
                out.clear();
                return Status::error(StatusCode::InvalidInput,
                                     m_dir + "/tokenizer.json: added_tokens: the text gives " + what +
                                         ", which has no embedding row (the model has " +
                                         withCommas(int(m_float->tokens.rows())) + ")");
            }
        return {};
    }

    Status trace(const TraceRequest &request, Trace<float> &out) override
    {
        return run(request, m_float, m_producerFloat, out);
    }

    Status trace(const TraceRequest &request, Trace<double> &out) override
    {
        if (!m_double) {
            if (m_dir.empty()) {
                m_double = castWeights<double>(*m_float);
            } else if (isGgufPath(m_dir)) { // every weight dequantized as the float path widens it
                detail::GgufModelParts parts;
                auto w = std::make_shared<ModelWeights<double>>();
                if (Status st = detail::openGgufParts(m_dir, parts); !st)
                    return st;
                if (Status st = loadWeights(parts.archive, m_config, parts.names, *w); !st)
                    return st;
                m_double = std::move(w);
            } else { // the file's values, not the float copy (an F64 checkpoint keeps its digits)
                TensorArchive archive;
                auto w = std::make_shared<ModelWeights<double>>();
                if (Status st = archive.openFolder(m_dir); !st)
                    return st;
                if (Status st = loadWeights(archive, m_config, namesOf(m_config), *w); !st)
                    return st;
                m_double = std::move(w);
            }
        }
        return run(request, m_double, m_producerDouble, out);
    }

    Status predictAt(Trace<float> &trace, int position) const override
    {
        return fill(m_float, m_producerFloat, trace, position);
    }

    Status predictAt(Trace<double> &trace, int position) const override
    {
        return fill(m_double, m_producerDouble, trace, position);
    }

    Status nextTokens(const Trace<float> &trace, int position, NextTokens &out) const override
    {
        return next(m_float, m_producerFloat, trace, position, out);
    }

    Status nextTokens(const Trace<double> &trace, int position, NextTokens &out) const override
    {
        return next(m_double, m_producerDouble, trace, position, out);
    }

    std::shared_ptr<const ReadoutWeights> readout() const override
    {
        auto r = std::make_shared<ReadoutWeights>();
        r->arch = m_config;
        r->floatWeights = m_float;
        r->doubleWeights = m_double;
        r->producerFloat = m_producerFloat;
        r->producerDouble = m_producerDouble;
        r->name = info().name;
        r->token = [this](int id) {
            TokenProb p;
            p.id = id;
            p.token = tokenText(id);
            p.display = predictionDisplay(m_tokenizer ? m_tokenizer->decode({id}) : std::string(), p.token);
            return p;
        };
        r->id = [this](std::string_view s) { return m_tokenizer ? m_tokenizer->id(s) : -1; };
        r->tokenize = [this](std::string_view s, std::vector<TraceToken> &out) { return tokenize(s, out); };
        r->decode = [this](const std::vector<int> &ids) { return m_tokenizer ? m_tokenizer->decode(ids) : std::string(); };
        return r;
    }

private:
    // The next tokens after `position` of a trace this model made: a copy of what the trace holds,
    // else the LM head on its final row. Reads the weights and `trace` only (Model::nextTokens).
    template <typename T>
    Status next(const std::shared_ptr<const ModelWeights<T>> &weights, uint64_t producer, const Trace<T> &trace,
                int position, NextTokens &out) const
    {
        if (m_config.head != LmHead::CausalLm)
            return Status::error(StatusCode::Unavailable, info().name + ": a masked language model predicts at [MASK] only");
        const int t = int(trace.tokens.size());
        const Predictions &pr = trace.predictions;
        if (!weights || trace.producer != producer || pr.next.size() != size_t(t) || pr.actualNext.size() != size_t(t) ||
            int(trace.final.rows()) != t)
            return Status::error(StatusCode::InvalidInput, "predictions: the trace was not made by " + info().name);
        if (position < 0 || position >= t)
            return Status::error(StatusCode::InvalidInput, "predictions: position " + std::to_string(position) +
                                                               " is not in the trace (0.." + std::to_string(t - 1) + ")");
        const size_t i = size_t(position);
        if (!pr.next[i].empty()) {
            out = pr.at(i);
            return {};
        }
        std::vector<int> ids;
        ids.reserve(size_t(t));
        for (const TraceToken &tok : trace.tokens)
            ids.push_back(tok.id);
        std::vector<NextTokens> one;
        predictNext(m_config, *weights, trace.final, ids, {position}, pr.topK, one);
        out = std::move(one.front());
        for (TokenProb &p : out.top) {
            p.token = tokenText(p.id);
            p.display = predictionDisplay(m_tokenizer ? m_tokenizer->decode({p.id}) : std::string(), p.token);
        }
        return {};
    }

    // predictAt: next() written into the trace.
    template <typename T>
    Status fill(const std::shared_ptr<const ModelWeights<T>> &weights, uint64_t producer, Trace<T> &trace,
                int position) const
    {
        NextTokens n;
        if (Status st = next(weights, producer, trace, position, n); !st)
            return st;
        Predictions &pr = trace.predictions;
        const size_t i = size_t(position);
        if (pr.next[i].empty())
            pr.set(i, std::move(n));
        return {};
    }

    std::string tokenText(int id) const
    {
        const std::string s = m_tokenizer ? m_tokenizer->token(id) : std::string();
        return s.empty() ? "#" + std::to_string(id) : s;
    }

    Status tokensFor(const TraceRequest &request, std::vector<TraceToken> &tokens) const
    {
        tokens.clear();
        if (request.ids.empty())
            return tokenize(request.text, tokens);
        for (int id : request.ids) {
            if (id < 0 || id >= m_float->tokens.rows())
                return Status::error(StatusCode::InvalidInput, "ids: " + std::to_string(id) + " is not in the vocabulary (0.." +
                                                                   std::to_string(m_float->tokens.rows() - 1) + ")");
            TraceToken t;
            t.id = id;
            t.text = tokenText(id);
            t.display = displayOf(t.text);
            t.special = isSpecialSpelling(t.text);
            tokens.push_back(std::move(t));
        }
        return {};
    }

    template <typename T>
    Status run(const TraceRequest &request, const std::shared_ptr<const ModelWeights<T>> &weights, uint64_t producer,
               Trace<T> &out)
    {
        std::vector<TraceToken> tokens;
        if (Status st = tokensFor(request, tokens); !st)
            return st;
        if (tokens.empty())
            return Status::error(StatusCode::InvalidInput, "text: no tokens");
        const int total = int(tokens.size());
        const int limit = request.maxTokens > 0 ? std::min(request.maxTokens, m_config.maxPositions) : m_config.maxPositions;
        std::string cut;
        if (total > limit) {
            const TraceToken last = tokens.back();
            tokens.resize(size_t(limit));
            if (last.special && !m_config.causal) // BERT keeps its closing [SEP]
                tokens.back() = last;
            cut = info().name + " reads at most " + withCommas(limit) + " tokens; the text has " + withCommas(total) +
                  ": the rest is cut";
        }
        // q, k and v in 16 bits where asked and the projections are (forward.cpp halfKept)
        const bool half = request.observe.sixteenBit && sixteenBitKept(info());
        if (Status st = checkTraceMemory(info(), int(tokens.size()), sizeof(T), request.keepScores, 0, request.keepMlp,
                                         request.observe.weights, request.observe.stages, half);
            !st)
            return st; // before anything of the trace is allocated
        ForwardInput in;
        for (const TraceToken &t : tokens)
            in.ids.push_back(t.id);
        in.paddedKeys = request.paddedKeys;
        in.maskedCells = request.maskedCells;
        in.topK = std::max(1, request.topK);
        in.keepScores = request.keepScores;
        in.keepMlp = request.keepMlp;
        in.allPredictions = request.allPredictions;
        in.lmHead = request.lmHead;
        in.maskId = m_maskId;
        in.cancel = request.cancel;
        in.progress = request.progress ? &request.progress : nullptr;
        in.edits = &request.edits;
        in.keepHookOutputs = request.keepHookOutputs;
        if (!request.edits.empty())
            if (Status st = checkEdits(request.edits, m_config.layers, m_config.heads, m_config.dModel, m_config.dHead,
                                       int(tokens.size()));
                !st)
                return st;
        // a causal model reuses the unchanged prefix of a trace it made with the same masks and stages
        // (the one handed back, or rows of request.prefixFrom where that shares more) on the CPU (a
        // device's trace keeps no log-sum-exp for its rows: computed anew)
        auto prefix = [&](const Trace<T> &tr, bool overEdits = false) {
            int r = 0;
            // a trace with edits is computed whole and continues nothing (its rows are the edited model's),
            // except over its own unedited trace (TraceRequest::unedited)
            if (m_config.causal && tr.producer == producer && tr.device == "cpu" && tr.paddedKeys == request.paddedKeys &&
                (overEdits || request.edits.empty()) && tr.edits.empty() && tr.maskedCells == request.maskedCells &&
                tr.numLayers() == m_config.layers && (tr.layers.front().mlpOut.size() != 0) == request.keepHookOutputs &&
                (tr.layers.front().attention.batch.front().scores.empty() != request.keepScores) &&
                (tr.layers.front().mlpPre.size() != 0) == (request.keepMlp && m_config.gatedMlp) &&
                tr.predictions.next.size() == tr.tokens.size() &&
                tr.predictions.topK == std::min(in.topK, int(m_float->tokens.rows())) && tr.observed.covers(in.observe) &&
                tr.observed.weights == in.observe.weights &&
                tr.observed.sixteenBit == in.observe.sixteenBit) { // q, k, v rounded or not (Observe::sixteenBit)
                const size_t n = std::min(tr.tokens.size(), tokens.size());
                while (size_t(r) < n && tr.tokens[size_t(r)].id == tokens[size_t(r)].id)
                    ++r;
                // angles that depend on the length (dynamic NTK, LongRoPE) change past the original positions
                const Rope &rope = m_config.rope;
                if (m_config.positions == PositionKind::Rotary && rope.dependsOnLength() &&
                    std::max(tr.tokens.size(), tokens.size()) > size_t(rope.originalMaxPositions))
                    r = 0;
            }
            return r;
        };
        // the rest of the trace, whoever computed it
        auto finish = [&](const std::string &device, const std::string &note, uint64_t madeBy, const Observe &held) {
            out.observed = held;
            out.tokens = std::move(tokens);
            out.keyTokens.clear();
            out.totalTokens = total;
            out.totalKeyTokens = 0;
            out.cutReason = cut;
            out.keyEmbeddings.resize(0, 0);
            out.device = device;
            out.deviceNote = note;
            out.paddedKeys = request.paddedKeys;
            out.maskedCells = request.maskedCells;
            out.producer = madeBy;
            out.edits = request.edits;
            for (auto &row : out.predictions.next)
                for (TokenProb &p : row)
                    if (p.token.empty()) {
                        p.token = tokenText(p.id);
                        p.display = predictionDisplay(m_tokenizer ? m_tokenizer->decode({p.id}) : std::string(), p.token);
                    }
            for (auto &m : out.predictions.masked)
                for (TokenProb &p : m.top) {
                    p.token = tokenText(p.id);
                    p.display = predictionDisplay(m_tokenizer ? m_tokenizer->decode({p.id}) : std::string(), p.token);
                }
        };
        // Another device where one is asked for and supports this forward; the CPU otherwise, and the
        // trace says why. A trace with every stage observed is whole, as the CPU's: the CPU may
        // continue it; one with stages left on the device is made by no one (nothing reuses it).
        std::string why;
        if constexpr (std::is_same_v<T, float>) {
            if (request.device && !request.edits.empty()) {
                why = "edits (interventions) are applied by the CPU forward only";
            } else if (request.device) {
                ForwardDevice &dev = *request.device;
                in.observe = request.observe;
                Status st = dev.supports(m_config, *weights, in);
                if (st) {
                    out.producer = 0;
                    out.room.release(); // the GPU's trace is sized anew: no room held after its matrices
                    st = dev.forward(m_config, weights, in, out);
                    if (st) {
                        Observe held = in.observe;
                        held.weights = true; // a device computes and reads back the weights themselves
                        finish(dev.name(), dev.device(), held.everything() ? producer : 0, held);
                        return {};
                    }
                    if (st.code == StatusCode::Cancelled || st.code == StatusCode::InvalidInput)
                        return st;
                }
                why = st.message;
            }
        }
        // The CPU keeps every layer's weights, keys and values, and the other stages where
        // request.observe asks for them (everything by default; runForward says why). In place of a
        // device that could not compute it keeps everything: what the caller sized observe for
        // was the device's readback (but no t x t weights where none were asked for).
        Observe everything;
        everything.weights = request.observe.weights;
        in.observe = request.device ? everything : request.observe;
        const int reuse = prefix(out);
        const Trace<T> *source = nullptr;
        int sourceReuse = 0;
        if constexpr (std::is_same_v<T, float>) {
            if (request.prefixFrom && request.prefixFrom != &out && request.edits.empty()) {
                sourceReuse = prefix(*request.prefixFrom);
                if (sourceReuse > reuse)
                    source = request.prefixFrom;
            }
        }
        // edits over the unedited trace: the same tokens throughout; rows before the first position an
        // edit reaches (none where an edit reads every position)
        const Trace<T> *unedited = nullptr;
        if constexpr (std::is_same_v<T, float>)
            unedited = request.unedited;
        else
            unedited = request.uneditedDouble;
        if (!request.edits.empty() && unedited && unedited != &out &&
            unedited->tokens.size() == tokens.size() && prefix(*unedited, true) == int(tokens.size())) {
            int first = int(tokens.size());
            for (const Intervention &e : request.edits) {
                if (e.positions.empty() || e.kind == EditKind::MeanOverText) {
                    first = 0;
                    break;
                }
                first = std::min(first, *std::min_element(e.positions.begin(), e.positions.end()));
            }
            source = unedited;
            sourceReuse = std::max(0, first);
            in.overUnedited = true;
        }
        out.producer = 0; // until this call succeeds
        if (Status st = runForward(m_config, weights, in, reuse, out, source, sourceReuse); !st)
            return st;
        finish("cpu", why.empty() ? std::string() : cpuDeviceName() + " — " + why + "; computed on the CPU", producer,
               Observe(out.observed)); // what runForward kept
        return {};
    }

    static families::TensorNames namesOf(const Architecture &a)
    {
        const families::Family *f = families::familyNamed(a.family);
        return f ? f->names(a) : families::TensorNames();
    }

    Architecture m_config;
    std::string m_dir;
    std::shared_ptr<const ModelWeights<float>> m_float;
    std::shared_ptr<const ModelWeights<double>> m_double;
    std::unique_ptr<SubwordTokenizer> m_tokenizer;
    std::string m_dtype;
    int m_maskId = -1;
    uint64_t m_producerFloat, m_producerDouble;
};

namespace {

// A GGUF file (llama.cpp, Ollama, LM Studio): architecture, tokenizer and weights from the one file;
// quantized matrices of the MLP, embeddings and LM head stay quantized (widened in the products).
Status openGgufModel(const std::string &path, const PretrainedLoadOptions &options, std::unique_ptr<Model> &out)
{
    detail::GgufModelParts parts;
    if (Status st = detail::openGgufParts(path, parts); !st)
        return st;
    std::unique_ptr<SubwordTokenizer> tokenizer;
    if (Status st = detail::ggufTokenizer(parts.file, tokenizer); !st)
        return st;
    if (tokenizer->vocabSize() > parts.arch.vocabulary)
        return Status::error(StatusCode::InvalidInput, path + ": metadata \"tokenizer.ggml.tokens\": " +
                                                           withCommas(tokenizer->vocabSize()) + " tokens, but token_embd has " +
                                                           withCommas(parts.arch.vocabulary) + " rows");
    const std::string dtype = parts.quantization + " (GGUF; " + detail::ggufQuantizationByKind(parts.file) + ")";
    if (const GgufValue *a = parts.file.find("general.architecture"); parts.arch.encoderDecoder && a && a->s == "t5encoder")
        return detail::openT5EncoderGguf(path, parts.arch, parts.archive, parts.names, std::move(tokenizer), dtype, options, out);
    if (parts.arch.encoderDecoder)
        return detail::openEncoderDecoderGguf(path, parts.arch, parts.archive, parts.names, std::move(tokenizer), dtype,
                                              options, out);
    parts.archive.setProgress(options.progress);
    auto weights = std::make_shared<ModelWeights<float>>();
    try {
        if (Status st = loadWeights(parts.archive, parts.arch, parts.names, *weights); !st)
            return st;
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::BackendFailed, path + ": out of memory reading " +
                                                            describeBytes(parts.archive.totalBytes()) + " of weights");
    }
    out = std::make_unique<PretrainedModel>(parts.arch, path, std::move(weights), std::move(tokenizer), dtype);
    return {};
}

} // namespace

Status openPretrained(const std::string &dir, const PretrainedLoadOptions &options, std::unique_ptr<Model> &out)
{
    if (isGgufPath(dir))
        return openGgufModel(dir, options, out);
    uint64_t size = 0;
    if (Status st = regularFileSize(dir, size); st.message.find("is a directory") == std::string::npos)
        return st.ok() ? Status::error(StatusCode::InvalidInput, dir + ": a file, not a model folder") : st;
    Architecture arch;
    if (Status st = readArchitecture(dir, arch); !st)
        return st;
    const families::Family *family = families::familyNamed(arch.family);
    if (!family)
        return Status::error(StatusCode::InvalidInput, dir + ": no family named " + arch.family);
    if (arch.encoderDecoder)
        return detail::openEncoderDecoder(dir, arch, options, out);
    // tokenizer: tokenizer.json where the folder has one, else the family's older files. A file of
    // theirs that is there but not a regular one (a FIFO, a folder) is said to be so, not missing.
    for (const char *name : {"tokenizer.json", "vocab.json", "merges.txt", "vocab.txt"}) {
        uint64_t size = 0;
        if (Status st = regularFileSize(dir + "/" + name, size);
            !st && st.message.find(": no such file") == std::string::npos)
            return st;
    }
    std::unique_ptr<SubwordTokenizer> tokenizer;
    std::string vocabFile;
    const bool gpt2Files = isFile(dir + "/vocab.json") && isFile(dir + "/merges.txt");
    const bool bertFiles = isFile(dir + "/vocab.txt");
    if (isFile(dir + "/tokenizer.json") && !(arch.family == "gpt2" && gpt2Files) &&
        !(arch.head == LmHead::MaskedLm && bertFiles)) {
        vocabFile = dir + "/tokenizer.json";
        if (Status st = loadHfTokenizer(dir, tokenizer, arch.vocabulary); !st)
            return st;
    } else if (arch.head != LmHead::MaskedLm) {
        if (!gpt2Files && !isFile(dir + "/tokenizer.json") && arch.family != "gpt2")
            return Status::error(StatusCode::IoError, dir + "/tokenizer.json: missing (the folder's tokenizer)");
        vocabFile = dir + "/vocab.json";
        if (Status st = loadByteLevelBpe(vocabFile, dir + "/merges.txt", tokenizer); !st)
            return st;
    } else {
        vocabFile = dir + "/vocab.txt";
        WordPieceOptions wp;
        const std::string tc = dir + "/tokenizer_config.json";
        if (isFile(tc)) {
            nlohmann::json j;
            if (Status st = detail::readJsonFile(tc, kConfigCap, j); !st)
                return st;
            if (!j.is_object())
                return Status::error(StatusCode::ParseError, tc + ": not a JSON object");
            if (j.contains("do_lower_case")) {
                if (!j["do_lower_case"].is_boolean())
                    return Status::error(StatusCode::InvalidInput, tc + ": do_lower_case: must be true or false");
                wp.lowerCase = j["do_lower_case"].get<bool>();
                wp.stripAccents = wp.lowerCase;
            }
            if (j.contains("strip_accents") && j["strip_accents"].is_boolean())
                wp.stripAccents = j["strip_accents"].get<bool>();
            if (j.contains("tokenize_chinese_chars") && j["tokenize_chinese_chars"].is_boolean())
                wp.chineseChars = j["tokenize_chinese_chars"].get<bool>();
        }
        if (Status st = loadWordPiece(vocabFile, wp, tokenizer); !st)
            return st;
    }
    // Ids beyond the embedding rows are allowed for added tokens only (a text that gives one is
    // refused by tokenize); a vocabulary token there would have no row.
    for (int id = tokenizer->vocabSize() - 1; id >= arch.vocabulary; --id)
        if (!tokenizer->isAdded(id))
            return Status::error(StatusCode::InvalidInput,
                                 vocabFile + ": " + withCommas(tokenizer->vocabSize()) + " tokens, the token " +
                                     quoteText(tokenizer->token(id)) + " (id " + withCommas(id) +
                                     ") not an added one, but the embeddings have " + withCommas(arch.vocabulary) +
                                     " rows (" + dir + "/config.json: vocab_size)");
    // weights (their shapes are checked against the config: the embeddings have vocab_size rows)
    TensorArchive archive;
    if (Status st = archive.openFolder(dir); !st)
        return st;
    archive.setProgress(options.progress);
    auto weights = std::make_shared<ModelWeights<float>>();
    try { // the machine may have less free than the weights need: a message, and the caller keeps what it had
        if (Status st = loadWeights(archive, arch, family->names(arch), *weights); !st)
            return st;
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::BackendFailed, archive.fileOf(std::string()) + ": out of memory converting " +
                                                            describeBytes(archive.totalBytes()) + " of " + archive.dtypeSummary() +
                                                            " weights to float32 (" + describeCount(arch.layers) + " layers)");
    }
    out = std::make_unique<PretrainedModel>(arch, dir, std::move(weights), std::move(tokenizer), archive.dtypeSummary());
    return {};
}

Status seededPretrained(const Architecture &arch, uint64_t seed, std::unique_ptr<Model> &out, const std::string &dtype)
{
    if (Status st = arch.validate(); !st)
        return Status::error(StatusCode::InvalidInput, "seeded model: " + st.message);
    if (arch.encoderDecoder) {
        if (dtype != "F32")
            return Status::error(StatusCode::InvalidInput, "seeded encoder-decoder model: float32 only, not " + dtype);
        return detail::seededEncoderDecoder(arch, seed, out);
    }
    auto w = std::make_shared<ModelWeights<float>>();
    const bool bf16 = dtype == "BF16";
    int quant = -1;
    if (dtype == "Q8_0" || dtype == "Q4_K") {
        quant = dtype == "Q8_0" ? int(ggml::Q8_0) : int(ggml::Q4_K);
        const int block = dtype == "Q8_0" ? 32 : 256;
        if (arch.dModel % block || arch.dFeedForward % block)
            return Status::error(StatusCode::InvalidInput, "seeded model: " + dtype + " needs d_model and the MLP's width in multiples of " +
                                                               std::to_string(block));
    } else if (dtype != "F32" && !bf16) {
        return Status::error(StatusCode::InvalidInput, "seeded model: dtype " + dtype + " is not one of F32, BF16, Q8_0, Q4_K");
    }
    seedWeights(arch, seed, *w, bf16, quant);
    out = std::make_unique<PretrainedModel>(arch, std::string(), std::move(w), nullptr, dtype + " (seeded)");
    return {};
}

} // namespace attnviz
