// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the encoder-decoder family tests (tst_t5, tst_bart, tst_marian): opening a fixture folder once,
// its expected.json (written by tests/fixtures/models/make_bart.py / make_marian.py), a trace of one
// case against every stage of the float64 reference, a fixture's tensors read directly, a copy of a
// fixture folder with edited config fields or tensor values.
#pragma once

#include "attnviz/architecture.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/pretrained.h"
#include "attnviz/tensorarchive.h"
#include "modelchecks.h"
#include "testpaths.h"

#include <QDir>
#include <QTemporaryDir>

#include <cstring>
#include <functional>
#include <map>

namespace attnviz::testing {

inline Model *opened(const QString &model)
{
    static std::map<QString, std::unique_ptr<Model>> models;
    std::unique_ptr<Model> &m = models[model];
    if (!m)
        m = open(model);
    return m.get();
}

inline QJsonObject expected(const QString &model)
{
    static std::map<QString, QJsonObject> docs;
    QJsonObject &o = docs[model];
    if (o.isEmpty()) {
        QFile f(fixture(model) + QStringLiteral("/expected.json"));
        if (f.open(QIODevice::ReadOnly))
            o = QJsonDocument::fromJson(f.readAll()).object();
    }
    return o;
}

inline QJsonObject expectedCase(const QString &model, int index)
{
    return expected(model).value(QStringLiteral("cases")).toArray()[index].toObject();
}

inline std::vector<int> intsOf(const QJsonArray &a)
{
    std::vector<int> v;
    for (const QJsonValue &x : a)
        v.push_back(x.toInt());
    return v;
}

inline QJsonObject fixtureConfig(const QString &model)
{
    QFile f(fixture(model) + QStringLiteral("/config.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// The message parseArchitecture gives for the fixture's config.json after `edit` ("accepted" if none).
inline std::string configError(const QString &model, const std::function<void(QJsonObject &)> &edit)
{
    QJsonObject o = fixtureConfig(model);
    edit(o);
    Architecture a;
    const Status st = parseArchitecture(QJsonDocument(o).toJson().toStdString(), "config.json", a);
    return st ? std::string("accepted") : st.message;
}

// A tensor of a fixture as float64, row-major.
inline std::vector<double> tensor(const QString &model, const std::string &name, std::vector<int64_t> *shape = nullptr)
{
    TensorArchive a;
    if (!a.openFolder(fixture(model).toStdString()))
        return {};
    const TensorEntry *e = a.find(name);
    if (!e)
        return {};
    std::vector<double> v(e->count);
    if (!a.read(*e, v.data()))
        return {};
    if (shape)
        *shape = e->shape;
    return v;
}

// A copy of a fixture folder in `dir`: config.json with `edit` applied, model.safetensors with the
// F32 values of `tensors` (name -> values) written over the stored ones.
inline bool copyFixture(const QString &model, const QTemporaryDir &dir, const std::function<void(QJsonObject &)> &edit,
                        const std::map<std::string, std::vector<float>> &tensors = {})
{
    const QString from = fixture(model);
    QFile in(from + QStringLiteral("/model.safetensors"));
    if (!in.open(QIODevice::ReadOnly))
        return false;
    QByteArray bytes = in.readAll();
    if (!tensors.empty()) {
        TensorArchive a;
        if (!a.openFolder(from.toStdString()))
            return false;
        for (const auto &[name, values] : tensors) {
            const TensorEntry *e = a.find(name);
            if (!e || e->dtype != "F32" || e->count != values.size() || e->offset + e->bytes > uint64_t(bytes.size()))
                return false;
            std::memcpy(bytes.data() + e->offset, values.data(), e->bytes);
        }
    }
    QFile out(dir.filePath(QStringLiteral("model.safetensors")));
    if (!out.open(QIODevice::WriteOnly) || out.write(bytes) != bytes.size())
        return false;
    QJsonObject o = fixtureConfig(model);
    edit(o);
    QFile c(dir.filePath(QStringLiteral("config.json")));
    return c.open(QIODevice::WriteOnly) && c.write(QJsonDocument(o).toJson()) > 0;
}

// Every layer's and head's weights of one attention against [layer][head][[...]].
template <typename T> double attentionDeviation(const std::vector<LayerTrace<T>> &layers, const QJsonArray &want)
{
    if (int(layers.size()) != want.size())
        return INFINITY;
    double worst = 0;
    for (int l = 0; l < want.size(); ++l) {
        const QJsonArray heads = want[l].toArray();
        const SequenceResult<T> &s = layers[size_t(l)].attention.batch.front();
        if (int(s.weights.size()) != heads.size())
            return INFINITY;
        for (int h = 0; h < heads.size(); ++h) {
            const WeightMatrix<T> &w = s.weights[size_t(h)];
            Mat<T> m(w.rows(), w.cols());
            for (Eigen::Index i = 0; i < w.rows(); ++i)
                m.row(i) = w.row(i);
            worst = std::max(worst, deviation(m, heads[h].toArray()));
        }
    }
    return worst;
}

// A teacher-forced trace of case `index` of `model`, every logit kept.
template <typename T> bool traceCase(const QString &model, int index, Trace<T> &t, std::string &error)
{
    Model *m = opened(model);
    if (!m) {
        error = "no model";
        return false;
    }
    const QJsonObject c = expectedCase(model, index);
    TraceRequest r;
    r.ids = intsOf(c.value(QStringLiteral("source")).toArray());
    r.targetIds = intsOf(c.value(QStringLiteral("target")).toArray());
    r.allPredictions = true;
    r.topK = m->info().vocabulary; // every logit comes back: log p + the log normalizer
    const Status st = m->trace(r, t);
    error = st.message;
    return st.ok();
}

// Every logit of a trace that kept them all: log p + the row's log normalizer.
template <typename T> Mat<double> logitsOf(const Trace<T> &t, int vocabulary)
{
    Mat<double> got(Eigen::Index(t.predictions.next.size()), vocabulary);
    got.setConstant(NAN);
    for (size_t i = 0; i < t.predictions.next.size(); ++i)
        for (const TokenProb &p : t.predictions.next[i])
            got(Eigen::Index(i), p.id) = std::log(p.p) + t.predictions.logNormalizer[i];
    return got;
}

// Case `c` of a fixture's expected.json traced by `m` (the folder's model, or a file converted from
// it) against every stage of the reference, within `tol`.
template <typename T> void checkSeq2SeqTraceOf(Model &m, const QJsonObject &c, double tol)
{
    TraceRequest r;
    r.ids = intsOf(c.value(QStringLiteral("source")).toArray());
    r.targetIds = intsOf(c.value(QStringLiteral("target")).toArray());
    r.allPredictions = true;
    r.topK = m.info().vocabulary; // every logit comes back: log p + the log normalizer
    Trace<T> t;
    const Status st = m.trace(r, t);
    QVERIFY2(st.ok(), st.message.c_str());
    QVERIFY(t.encoderDecoder());
    const std::vector<int> decoder = intsOf(c.value(QStringLiteral("decoder")).toArray());
    QCOMPARE(int(t.seq2seq.sourceTokens.size()), c.value(QStringLiteral("source")).toArray().size());
    QCOMPARE(int(t.tokens.size()), int(decoder.size()));
    for (size_t i = 0; i < decoder.size(); ++i)
        QCOMPARE(t.tokens[i].id, decoder[i]);
    struct Stage {
        const char *name;
        double dev;
    };
    std::vector<Stage> stages{
        {"encoder attentions",
         attentionDeviation(t.seq2seq.encoder, c.value(QStringLiteral("encoder_attentions")).toArray())},
        {"decoder attentions", attentionDeviation(t.layers, c.value(QStringLiteral("decoder_attentions")).toArray())},
        {"cross attentions",
         attentionDeviation(t.seq2seq.cross, c.value(QStringLiteral("cross_attentions")).toArray())},
        {"encoder final", deviation(t.seq2seq.encoderFinal, c.value(QStringLiteral("encoder_final")).toArray())},
        {"decoder final", deviation(t.final, c.value(QStringLiteral("decoder_final")).toArray())},
    };
    // the embeddings as the stacks read them: in BART's and Marian's references (T5's has none)
    if (c.contains(QStringLiteral("encoder_input")) || c.contains(QStringLiteral("decoder_input"))) {
        stages.push_back({"encoder input", deviation(t.seq2seq.sourceEmbeddings, c.value(QStringLiteral("encoder_input")).toArray())});
        stages.push_back({"decoder input", deviation(t.input, c.value(QStringLiteral("decoder_input")).toArray())});
    }
    const QJsonArray encBlocks = c.value(QStringLiteral("encoder_blocks")).toArray();
    const QJsonArray decBlocks = c.value(QStringLiteral("decoder_blocks")).toArray();
    QCOMPARE(int(t.seq2seq.encoder.size()), encBlocks.size());
    QCOMPARE(int(t.layers.size()), decBlocks.size());
    for (int l = 0; l < encBlocks.size(); ++l)
        stages.push_back({"encoder block", deviation(t.seq2seq.encoder[size_t(l)].output, encBlocks[l].toArray())});
    for (int l = 0; l < decBlocks.size(); ++l)
        stages.push_back({"decoder block", deviation(t.layers[size_t(l)].output, decBlocks[l].toArray())});
    const QJsonArray logits = c.value(QStringLiteral("logits")).toArray();
    QCOMPARE(int(t.predictions.next.size()), logits.size());
    stages.push_back({"logits", deviation(logitsOf(t, m.info().vocabulary), logits)});
    for (const Stage &s : stages)
        QVERIFY2(s.dev <= tol, qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(s.name)).arg(s.dev)));
}

// Case `index` of `model` against every stage of the reference, within `tol`.
template <typename T> void checkSeq2SeqTrace(const QString &model, int index, double tol)
{
    Model *m = opened(model);
    QVERIFY(m);
    checkSeq2SeqTraceOf<T>(*m, expectedCase(model, index), tol);
}

inline void checkGreedy(const QString &model, int index)
{
    Model *m = opened(model);
    QVERIFY(m);
    const QJsonObject c = expectedCase(model, index);
    TraceRequest r;
    r.ids = intsOf(c.value(QStringLiteral("source")).toArray());
    std::vector<int> ids;
    const Status st = greedyTarget(*m, r, 10, ids);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(ids, intsOf(c.value(QStringLiteral("greedy")).toArray()));
}

} // namespace attnviz::testing
