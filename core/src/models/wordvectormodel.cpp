// SPDX-License-Identifier: GPL-3.0-or-later
// The word-vector attention layer and the seed-002 stack as Models (wordvectormodel.h).
#include "attnviz/wordvectormodel.h"

#include "attnviz/headslices.h"
#include "attnviz/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnviz {

namespace {

std::string fmtG4(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

// Unicode White_Space, as QString::trimmed() sees it: a text of only these is "blank" (the window
// then asks for a sentence instead of saying the text has no words). Decodes UTF-8 by hand because
// the only question is whether a code point is one of these few; invalid bytes are not blank.
bool isBlank(std::string_view s)
{
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        uint32_t cp = 0;
        int n = 0;
        if (c < 0x80) {
            cp = c;
            n = 1;
        } else if ((c >> 5) == 0x6) {
            cp = c & 0x1f;
            n = 2;
        } else if ((c >> 4) == 0xe) {
            cp = c & 0x0f;
            n = 3;
        } else if ((c >> 3) == 0x1e) {
            cp = c & 0x07;
            n = 4;
        } else {
            return false;
        }
        if (i + size_t(n) > s.size())
            return false;
        for (int k = 1; k < n; ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + size_t(k)]) & 0x3f);
        const bool space = (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
                           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
                           cp == 0x205f || cp == 0x3000;
        if (!space)
            return false;
        i += size_t(n);
    }
    return true;
}

void truncateTo(EmbeddedSentence &e, int limit)
{
    if (int(e.tokens.size()) <= limit)
        return;
    e.tokens.resize(size_t(limit));
    e.unknown.resize(size_t(limit));
    Mat<float> m = e.matrix.topRows(limit);
    e.matrix = std::move(m);
}

std::vector<TraceToken> traceTokens(const EmbeddedSentence &e)
{
    std::vector<TraceToken> out(e.tokens.size());
    for (size_t i = 0; i < e.tokens.size(); ++i) {
        const Token &t = e.tokens[i];
        out[i].text = t.text;
        out[i].display = t.text;
        out[i].begin = t.begin;
        out[i].end = t.end;
        out[i].unknown = i < e.unknown.size() && e.unknown[i] != 0;
    }
    return out;
}

} // namespace

AttentionConfig attentionConfig(const WordVectorSettings &s, int dModel)
{
    AttentionConfig cfg;
    cfg.numHeads = s.numHeads;
    cfg.dHead = s.projection == ProjectionSource::Identity ? 0 : s.dHead;
    if (s.projection == ProjectionSource::Random && s.numHeads > 0)
        cfg.dHead = s.dHead > 0 ? s.dHead : autoHeadWidth(dModel, s.numHeads);
    else if (s.projection == ProjectionSource::Identity && s.numHeads > 0 && dModel > 0 && dModel % s.numHeads != 0)
        cfg.dHead = autoHeadWidth(dModel, s.numHeads); // unequal identity slices (headslices.h)
    cfg.scaleRule = s.scaleRule;
    cfg.temperature = s.temperature;
    cfg.normalization = s.normalization;
    cfg.maskMethod = s.maskMethod;
    cfg.causal = s.causal;
    cfg.fullyMasked = FullyMaskedPolicy::NaN;
    cfg.dropout = s.dropout;
    cfg.dropoutSeed = s.dropoutSeed;
    cfg.keepScores = false;
    return cfg;
}

int tokenLimit(int numHeads)
{
    const double budget = 256.0 * 1024 * 1024;
    const int h = std::max(1, numHeads);
    int t = int(std::sqrt(budget / (4.0 * (h + 1))));
    t = std::min(4096, std::max(256, (t / 256) * 256));
    return t;
}

int stackTokenLimit(int numHeads, int depth)
{
    // every layer keeps (heads + 1) t x t matrices (the heads and their average)
    return tokenLimit(std::max(1, depth) * (std::max(1, numHeads) + 1) - 1);
}

std::string divisorsOf(int n)
{
    std::string d;
    for (int i = 1; i <= n; ++i)
        if (n % i == 0)
            d += (d.empty() ? "" : ", ") + std::to_string(i);
    return d;
}

std::string headsProblem(int, int heads, int, ProjectionSource)
{
    // a head count that does not divide d_model still gives a view (headslices.h)
    if (heads < 1)
        return "At least one head is needed.";
    return {};
}

std::string stackHeadsProblem(int dModel, int heads)
{
    if (heads < 1)
        return "At least one head is needed.";
    if (dModel > 0 && dModel % heads != 0)
        return std::to_string(heads) + " heads do not divide d_model " + std::to_string(dModel) + " (d_head would be " +
               fmtG4(double(dModel) / heads) +
               "). In a transformer stack every layer splits d_model into equal heads: "
               "choose " +
               divisorsOf(dModel) + ".";
    return {};
}

// --- WordVectorModel ---------------------------------------------------------------------------

WordVectorModel::WordVectorModel(Backend *backend) : m_backend(backend) {}

ModelInfo WordVectorModel::info() const
{
    ModelInfo i;
    i.family = "word-vectors";
    i.name = m_table ? m_table->source() : std::string("word vectors");
    i.layers = 1;
    i.heads = m_settings.numHeads;
    i.dModel = m_table ? m_table->dim() : 0;
    i.dHead = m_settings.dHead > 0 && m_settings.projection != ProjectionSource::Identity
        ? m_settings.dHead
        : autoHeadWidth(i.dModel, m_settings.numHeads);
    i.maxPositions = tokenLimit(m_settings.numHeads);
    i.tokenizer = "words";
    i.causal = m_settings.causal;
    return i;
}

Status WordVectorModel::tokenize(std::string_view text, std::vector<TraceToken> &out) const
{
    if (!m_table || m_table->empty())
        return Status::error(StatusCode::Unavailable, "no word vectors loaded");
    out = traceTokens(embedSentence(*m_table, std::string(text)));
    return {};
}

Status WordVectorModel::prepare(const TraceRequest &req, int limit, const std::string &problemText, Trace<float> &out,
                                Prepared &prepared) const
{
    if (!m_table || m_table->empty())
        return Status::error(StatusCode::Unavailable,
                             "No word vectors loaded: this build has no bundled vectors. Use \"Load embeddings…\" to "
                             "open a GloVe, word2vec, fastText or .avec table.");
    const bool cross = !req.keyText.empty();
    EmbeddedSentence query = embedSentence(*m_table, req.text);
    EmbeddedSentence key;
    if (cross)
        key = embedSentence(*m_table, req.keyText);
    out.totalTokens = int(query.tokens.size());
    out.totalKeyTokens = cross ? int(key.tokens.size()) : out.totalTokens;
    if (req.maxTokens > 0)
        limit = req.maxTokens;
    truncateTo(query, limit);
    if (cross)
        truncateTo(key, limit);
    if (out.totalTokens > limit || out.totalKeyTokens > limit)
        out.cutReason = "the live limit for " + std::to_string(m_settings.numHeads) +
                        " heads keeps the t × t weights of every head in memory";
    out.tokens = traceTokens(query);
    out.keyTokens = cross ? traceTokens(key) : std::vector<TraceToken>{};
    if (query.tokens.empty())
        return Status::error(StatusCode::InvalidInput,
                             isBlank(req.text) ? "Type a sentence above: each word becomes a token, and this view "
                                                 "shows how much each token attends to every other."
                                               : "The text has no words or symbols to attend to.");
    if (cross && key.tokens.empty())
        return Status::error(StatusCode::InvalidInput, "The key/value sentence has no tokens.");
    if (!problemText.empty())
        return Status::error(StatusCode::InvalidInput, problemText);

    const int tq = int(query.tokens.size()), tk = cross ? int(key.tokens.size()) : tq;
    SequenceInput<float> &seq = prepared.sequence;
    seq = {};
    if (m_settings.padding) {
        seq.keyPadding.assign(size_t(tk), 0);
        for (int j : req.paddedKeys)
            if (j >= 0 && j < tk)
                seq.keyPadding[size_t(j)] = 1;
    }
    prepared.attnMask.resize(0, 0);
    if (m_settings.customMask && !req.maskedCells.empty()) {
        prepared.attnMask = BoolMat::Zero(tq, tk);
        for (const auto &[i, j] : req.maskedCells)
            if (i >= 0 && i < tq && j >= 0 && j < tk)
                prepared.attnMask(i, j) = 1;
    }
    out.embeddings = std::move(query.matrix);
    if (cross)
        out.keyEmbeddings = std::move(key.matrix);
    return {};
}

std::shared_ptr<const Projections<float>> WordVectorModel::randomProjections(const RandomProjectionSpec &spec,
                                                                             Status &status)
{
    auto same = [](const RandomProjectionSpec &a, const RandomProjectionSpec &b) {
        return a.dModel == b.dModel && a.kdim == b.kdim && a.vdim == b.vdim && a.numHeads == b.numHeads &&
               a.dHead == b.dHead && a.dOut == b.dOut && a.outProj == b.outProj && a.qkvBias == b.qkvBias &&
               a.outBias == b.outBias && a.scheme == b.scheme && a.order == b.order && a.seed == b.seed;
    };
    if (m_specValid && same(spec, m_spec))
        return m_random;
    auto p = std::make_shared<Projections<float>>();
    status = attnviz::randomProjections(spec, *p);
    if (!status.ok())
        return {};
    m_spec = spec;
    m_specValid = true;
    m_random = p;
    return m_random;
}

Status WordVectorModel::trace(const TraceRequest &req, Trace<float> &out)
{
    if (!req.edits.empty())
        return Status::error(StatusCode::Unavailable, info().name + ": no interventions (edits apply to transformer checkpoints)");
    const WordVectorSettings &s = m_settings;
    const int dModel = m_table ? m_table->dim() : 0;
    Prepared prep;
    if (Status st = prepare(req, liveLimit(), headsProblem(dModel, s.numHeads, s.dHead, s.projection), out, prep);
        !st.ok())
        return st;
    if (!m_backend)
        return Status::error(StatusCode::Unavailable, "no backend to compute with");

    AttentionInput<float> &input = m_input;
    input.batch.clear();
    input.attnMask = std::move(prep.attnMask);
    auto useProjections = [&](std::shared_ptr<const Projections<float>> p) {
        if (p == m_inputProj)
            return;
        input.proj = p ? *p : Projections<float>{};
        m_inputProj = std::move(p);
    };
    const AttentionConfig cfg = attentionConfig(s, dModel);
    if (s.projection == ProjectionSource::Random) {
        RandomProjectionSpec spec;
        spec.dModel = spec.kdim = spec.vdim = dModel;
        spec.numHeads = s.numHeads;
        spec.dHead = cfg.dHead;
        spec.outProj = s.outWidth >= 0;
        spec.dOut = s.outWidth > 0 ? s.outWidth : s.outWidth == 0 ? dModel : 0;
        spec.qkvBias = false;
        spec.outBias = spec.outProj;
        spec.scheme = s.initScheme;
        spec.order = s.drawOrder;
        spec.seed = s.projectionSeed;
        Status st;
        auto p = randomProjections(spec, st);
        if (!p)
            return st;
        useProjections(std::move(p));
    } else if (s.projection == ProjectionSource::Loaded) {
        if (!s.loadedProjections)
            return Status::error(StatusCode::InvalidInput, "No projection file loaded.");
        useProjections(s.loadedProjections);
    } else if (dModel % s.numHeads != 0) { // unequal identity slices (headslices.h)
        if (!m_slices || m_slicesKey != std::pair(dModel, s.numHeads)) {
            m_slices = std::make_shared<const Projections<float>>(identitySliceProjections(dModel, s.numHeads));
            m_slicesKey = {dModel, s.numHeads};
        }
        useProjections(m_slices);
    } else {
        useProjections(nullptr);
    }

    // The attention reads the vectors as looked up; the trace keeps them once (embeddings, input).
    prep.sequence.query = out.embeddings;
    if (out.cross())
        prep.sequence.key = out.keyEmbeddings;
    input.batch.push_back(std::move(prep.sequence));
    out.layers.resize(1);
    LayerTrace<float> &layer = out.layers.front();
    const Status st = m_backend->compute(cfg, input, layer.attention);
    input.batch.clear(); // the input's vectors live in the trace
    out.device = m_backend->device();
    if (!st.ok()) {
        out.layers.clear();
        return st;
    }
    out.input = out.embeddings;
    layer.residualIn = out.embeddings;
    layer.attentionIn = out.embeddings;
    if (out.cross())
        layer.keyIn = out.keyEmbeddings;
    layer.output = layer.attention.batch.front().output;
    layer.projections = m_inputProj;
    out.final = layer.output;
    return {};
}

// --- WordStackModel ----------------------------------------------------------------------------

ModelInfo WordStackModel::info() const
{
    ModelInfo i = WordVectorModel::info();
    i.family = "stack";
    i.layers = m_stack.depth;
    i.dHead = m_settings.numHeads > 0 ? i.dModel / m_settings.numHeads : 0;
    i.dFeedForward = 4 * i.dModel;
    i.maxPositions = stackTokenLimit(m_settings.numHeads, m_stack.depth);
    if (m_stack.fromFile)
        i.source = m_stack.loadedSource;
    return i;
}

std::shared_ptr<const StackWeights<float>> WordStackModel::seeded(int dModel, Status &status)
{
    // Learned positions are drawn after the blocks, so they belong to the key; sinusoidal and none
    // draw the same weights.
    const PositionEncoding drawn =
        m_stack.positions == PositionEncoding::Learned ? m_stack.positions : PositionEncoding::None;
    if (m_weights && m_d == dModel && m_depth == m_stack.depth && m_seed == m_stack.seed && m_pos == drawn)
        return m_weights;
    m_weights.reset(); // frees the old set before drawing a new one
    auto w = std::make_shared<StackWeights<float>>();
    status = seededStackWeights<float>(dModel, m_stack.depth, m_stack.seed, drawn, kMaxPositions, *w);
    if (!status.ok())
        return {};
    m_d = dModel;
    m_depth = m_stack.depth;
    m_seed = m_stack.seed;
    m_pos = drawn;
    m_weights = std::move(w);
    return m_weights;
}

Status WordStackModel::trace(const TraceRequest &req, Trace<float> &out)
{
    if (!req.edits.empty())
        return Status::error(StatusCode::Unavailable, info().name + ": no interventions (edits apply to transformer checkpoints)");
    const int dModel = m_table ? m_table->dim() : 0;
    Prepared prep;
    if (Status st = prepare(req, liveLimit(), stackHeadsProblem(dModel, m_settings.numHeads), out, prep); !st.ok())
        return st;
    const StackModelSettings &ss = m_stack;
    if (out.cross())
        return Status::error(StatusCode::InvalidInput,
                             "The transformer stack is self-attention: clear the key/value sentence, or set the depth "
                             "to 1 for cross-attention.");
    const int d = int(out.embeddings.cols());
    std::shared_ptr<const StackWeights<float>> weights;
    if (ss.fromFile) {
        if (!ss.loaded)
            return Status::error(StatusCode::InvalidInput, "No stack weights loaded: use \"Load weights…\".");
        if (ss.depth > int(ss.loaded->blocks.size()))
            return Status::error(StatusCode::InvalidInput, "Depth " + std::to_string(ss.depth) + ": " +
                                                               ss.loadedSource + " holds " +
                                                               std::to_string(ss.loaded->blocks.size()) + " blocks.");
        const Linear<float> &q = ss.loaded->blocks.front().attn.q;
        if (!q.isIdentity() && q.W.cols() != d)
            return Status::error(StatusCode::InvalidInput, ss.loadedSource + " has d_model " +
                                                               std::to_string(q.W.cols()) + ", the word vectors " +
                                                               std::to_string(d) + ": load a table of the same width.");
        weights = ss.loaded;
    } else {
        Status st;
        weights = seeded(d, st);
        if (!weights)
            return st;
    }
    StackConfig cfg;
    cfg.depth = ss.depth;
    cfg.attention = attentionConfig(m_settings, d);
    cfg.attention.dHead = 0; // every layer splits d_model into equal heads
    cfg.norm = ss.norm;
    cfg.activation = ss.activation;
    cfg.positions = ss.positions;
    cfg.finalNorm = ss.norm == NormPlacement::Pre; // GPT-2's ln_f (ones/zeros when not loaded)
    cfg.keyPadding = std::move(prep.sequence.keyPadding);
    cfg.attnMask = std::move(prep.attnMask);
    if (Status st = m_forward.run(cfg, weights, out.embeddings, out); !st.ok())
        return st;
    out.device = cpuDeviceName();
    return {};
}

} // namespace attnviz
