// SPDX-License-Identifier: GPL-3.0-or-later
// The GPU forward device (GpuBackend as a ForwardDevice, core/gpu/src/rhiforward.cpp) against the
// CPU forward, one _data() row per backend and model: every fixture folder of every family, the
// GGUF fixtures (BF16-free llama, Q8_0 widened on upload, Gemma 3) and both bundled models, on the
// texts of their expected.json. Every stage of every layer and head, the hidden states and the
// top-10 predictions within 1e-4 (absolute + relative, as llm.c's validate_result; masked weights
// are 0 on both). Also: an appended token computes one row on the GPU and equals the full trace;
// only observed layers and heads come back; masks, scores and MLP stages; a device that cannot run
// a forward leaves it to the CPU, which says why. Runs under xvfb-run (label xvfb): Vulkan on
// lavapipe, OpenGL 4.3 on llvmpipe in CI; a backend that cannot start is skipped with QSKIP.
#include "gpubackends.h"
#include "testpaths.h"
#include "attnviz/device.h"
#include "attnviz/gpubackend.h"
#include "attnviz/pretrained.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <map>
#include <memory>

using namespace attnviz;

Q_DECLARE_METATYPE(attnviz::GpuApi)

namespace {

const char *const kFixtures[] = {"gpt2-tiny",  "bert-tiny",   "distilbert-tiny", "llama-tiny", "llama2-tiny",
                                 "mistral-tiny", "qwen2-tiny", "qwen3-tiny",      "gemma2-tiny", "gemma3-tiny",
                                 "gemma3-wrapper-tiny", "phi3-tiny"};

QString modelPath(const QString &name)
{
    if (name == QLatin1String("attnviz-tiny-2") || name == QLatin1String("attnviz-tiny"))
        return QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/resources/models/")) + name;
    if (name.endsWith(QLatin1String(".gguf")))
        return QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/")) + name;
    return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + name;
}

// The texts to trace: the fixture's expected.json cases, or sentences for the rest.
std::vector<std::string> textsOf(const QString &name)
{
    QFile f(modelPath(name) + QStringLiteral("/expected.json"));
    std::vector<std::string> out;
    if (f.open(QIODevice::ReadOnly))
        for (const QJsonValue &c : QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("cases")).toArray())
            out.push_back(c.toObject().value(QStringLiteral("text")).toString().toStdString());
    if (out.empty())
        out = {"The cat sat on the mat. The cat sat on the", "Attention reads every token once, then again."};
    return out;
}

Model *opened(const QString &name)
{
    static std::map<QString, std::unique_ptr<Model>> models;
    std::unique_ptr<Model> &m = models[name];
    if (!m) {
        const Status st = openPretrained(modelPath(name).toStdString(), {}, m);
        if (!st)
            qWarning("%s", st.message.c_str());
    }
    return m.get();
}

// max |a - b|; `bad` counts entries over atol + rtol |b| (NaN only against NaN).
double compareMat(const Mat<float> &a, const Mat<float> &b, double tol, int &bad)
{
    if (a.rows() != b.rows() || a.cols() != b.cols()) {
        ++bad;
        return INFINITY;
    }
    double mx = 0;
    for (Eigen::Index i = 0; i < a.size(); ++i) {
        const double x = a.data()[i], y = b.data()[i];
        if (std::isnan(x) || std::isnan(y)) {
            bad += !(std::isnan(x) && std::isnan(y));
            continue;
        }
        const double e = std::abs(x - y);
        mx = std::max(mx, e);
        bad += e > tol + tol * std::abs(y);
    }
    return mx;
}

// Every matrix of two traces, and their predictions; the first mismatch named in `why`.
bool sameTrace(const Trace<float> &gpu, const Trace<float> &cpu, double tol, QString &why)
{
    auto check = [&](const Mat<float> &a, const Mat<float> &b, const QString &what) {
        int bad = 0;
        const double mx = compareMat(a, b, tol, bad);
        if (bad && qEnvironmentVariableIsSet("ATTNVIZ_TEST_VERBOSE"))
            qInfo("%s: %d off, max %g", qPrintable(what), bad, mx);
        if (bad && why.isEmpty())
            why = QStringLiteral("%1: %2 entries off, max |diff| %3 (%4 x %5 vs %6 x %7)")
                      .arg(what)
                      .arg(bad)
                      .arg(mx)
                      .arg(a.rows())
                      .arg(a.cols())
                      .arg(b.rows())
                      .arg(b.cols());
        return bad == 0;
    };
    check(gpu.embeddings, cpu.embeddings, QStringLiteral("embeddings"));
    check(gpu.input, cpu.input, QStringLiteral("input"));
    check(gpu.final, cpu.final, QStringLiteral("final"));
    if (gpu.layers.size() != cpu.layers.size())
        why = QStringLiteral("layers %1 vs %2").arg(gpu.layers.size()).arg(cpu.layers.size());
    for (size_t l = 0; l < std::min(gpu.layers.size(), cpu.layers.size()); ++l) {
        const LayerTrace<float> &a = gpu.layers[l], &b = cpu.layers[l];
        const QString L = QStringLiteral("layer %1 ").arg(l);
        check(a.residualIn, b.residualIn, L + QStringLiteral("residualIn"));
        check(a.attentionIn, b.attentionIn, L + QStringLiteral("attentionIn"));
        check(a.afterAttention, b.afterAttention, L + QStringLiteral("afterAttention"));
        check(a.output, b.output, L + QStringLiteral("output"));
        check(a.mlpPre, b.mlpPre, L + QStringLiteral("mlpPre"));
        check(a.mlpPreLinear, b.mlpPreLinear, L + QStringLiteral("mlpPreLinear"));
        const SequenceResult<float> &s = a.attention.batch.front(), &r = b.attention.batch.front();
        check(s.q, r.q, L + QStringLiteral("q"));
        check(s.k, r.k, L + QStringLiteral("k"));
        check(s.v, r.v, L + QStringLiteral("v"));
        check(s.qPre, r.qPre, L + QStringLiteral("qPre"));
        check(s.kPre, r.kPre, L + QStringLiteral("kPre"));
        check(s.context, r.context, L + QStringLiteral("context"));
        check(s.output, r.output, L + QStringLiteral("attention output"));
        check(s.weightsAvg, r.weightsAvg, L + QStringLiteral("head mean"));
        if (s.weights.size() != r.weights.size() || s.scores.size() != r.scores.size())
            why = L + QStringLiteral("heads %1 vs %2").arg(s.weights.size()).arg(r.weights.size());
        for (size_t h = 0; h < std::min(s.weights.size(), r.weights.size()); ++h)
            check(s.weights[h], r.weights[h], L + QStringLiteral("head %1 weights").arg(h));
        for (size_t h = 0; h < std::min(s.scores.size(), r.scores.size()); ++h)
            check(s.scores[h], r.scores[h], L + QStringLiteral("head %1 scores").arg(h));
        if (s.mask != r.mask && why.isEmpty())
            why = L + QStringLiteral("mask differs");
        if (s.fullyMaskedRows != r.fullyMaskedRows && why.isEmpty())
            why = L + QStringLiteral("fully masked rows differ");
        if ((a.attention.numHeads != b.attention.numHeads || a.attention.kvHeads != b.attention.kvHeads ||
             a.attention.dHead != b.attention.dHead || std::abs(a.attention.scale - b.attention.scale) > 1e-12 ||
             a.projections != b.projections) &&
            why.isEmpty())
            why = L + QStringLiteral("shape or projections differ");
    }
    const Predictions &p = gpu.predictions, &q = cpu.predictions;
    if (p.next.size() != q.next.size() || p.masked.size() != q.masked.size() || p.topK != q.topK) {
        if (why.isEmpty())
            why = QStringLiteral("predictions: %1 / %2 positions").arg(p.next.size()).arg(q.next.size());
        return false;
    }
    auto sameTop = [&](const std::vector<TokenProb> &a, const std::vector<TokenProb> &b, const QString &what) {
        if (a.size() != b.size()) {
            if (why.isEmpty())
                why = what + QStringLiteral(": %1 vs %2 entries").arg(a.size()).arg(b.size());
            return;
        }
        for (size_t k = 0; k < a.size(); ++k) {
            // a tie within float32 may order two tokens either way: the probabilities decide
            const bool sameId = a[k].id == b[k].id;
            if ((!sameId && std::abs(a[k].p - b[k].p) > tol) || std::abs(a[k].p - b[k].p) > tol + tol * b[k].p) {
                if (why.isEmpty())
                    why = what + QStringLiteral(" #%1: %2 (%3) vs %4 (%5)").arg(k).arg(a[k].id).arg(a[k].p).arg(b[k].id).arg(b[k].p);
                return;
            }
            if (!sameId || a[k].token != b[k].token) {
                if (std::abs(a[k].p - b[k].p) > tol && why.isEmpty())
                    why = what + QStringLiteral(" #%1 spelled differently").arg(k);
            }
        }
    };
    for (size_t i = 0; i < p.next.size(); ++i) {
        sameTop(p.next[i], q.next[i], QStringLiteral("next after %1").arg(i));
        const double a = p.actualNext[i], b = q.actualNext[i];
        if ((std::isnan(a) != std::isnan(b) || (!std::isnan(a) && std::abs(a - b) > tol + tol * b)) && why.isEmpty())
            why = QStringLiteral("actual next after %1: %2 vs %3").arg(i).arg(a).arg(b);
    }
    for (size_t k = 0; k < p.masked.size(); ++k) {
        if (p.masked[k].position != q.masked[k].position && why.isEmpty())
            why = QStringLiteral("masked positions differ");
        sameTop(p.masked[k].top, q.masked[k].top, QStringLiteral("[MASK] %1").arg(k));
    }
    return why.isEmpty();
}

} // namespace

class TestGpuModel : public QObject {
    Q_OBJECT
private slots:
    void cleanupTestCase();
    void matchesCpu_data();
    void matchesCpu();
    void stagesMasksAndEveryPrediction_data();
    void stagesMasksAndEveryPrediction();
    void topKOnTheDevice_data();
    void topKOnTheDevice();
    void appendComputesOnlyNewRows_data();
    void appendComputesOnlyNewRows();
    void observedOnly_data();
    void observedOnly();
    void cpuTakesWhatTheDeviceCannot_data();
    void cpuTakesWhatTheDeviceCannot();
    void backendsEndInAnyOrder();
    void aClosedModelLeavesTheGpu();
    void weightsInChunks_data();
    void weightsInChunks();

private:
    void apiRows(const char *const *models, size_t count);
    test::GpuBackends m_backends;
};

void TestGpuModel::cleanupTestCase() { m_backends.clear(); }

void TestGpuModel::apiRows(const char *const *models, size_t count)
{
    QTest::addColumn<GpuApi>("api");
    QTest::addColumn<QString>("model");
    for (GpuApi api : {GpuApi::Vulkan, GpuApi::OpenGL})
        for (size_t k = 0; k < count; ++k)
            QTest::addRow("%s %s", toString(api), models[k]) << api << QString::fromLatin1(models[k]);
}

void TestGpuModel::matchesCpu_data()
{
    static const char *const all[] = {"gpt2-tiny",   "bert-tiny",    "distilbert-tiny", "llama-tiny",
                                      "llama2-tiny", "mistral-tiny", "qwen2-tiny",      "qwen3-tiny",
                                      "gemma2-tiny", "gemma3-tiny",  "gemma3-wrapper-tiny", "phi3-tiny",
                                      "llama.gguf",  "llama-q8_0.gguf", "gemma3.gguf", "attnviz-tiny-2",
                                      "attnviz-tiny"};
    static_assert(sizeof(all) / sizeof(all[0]) == sizeof(kFixtures) / sizeof(kFixtures[0]) + 5, "every fixture");
    apiRows(all, sizeof(all) / sizeof(all[0]));
}

// Every text of every model: the GPU's trace equals the CPU's, stage by stage.
void TestGpuModel::matchesCpu()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, model);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    Model *m = opened(model);
    QVERIFY(m);
    for (const std::string &text : textsOf(model)) {
        TraceRequest req;
        req.text = text;
        Trace<float> cpu, dev;
        QVERIFY(m->trace(req, cpu));
        QCOMPARE(cpu.device, std::string("cpu"));
        QVERIFY(cpu.deviceNote.empty());
        req.device = gpu;
        const Status st = m->trace(req, dev);
        QVERIFY2(st, st.message.c_str());
        QVERIFY2(dev.device == gpu->name(), (dev.device + " / " + dev.deviceNote).c_str());
        QCOMPARE(dev.deviceNote, gpu->device());
        QString why;
        QVERIFY2(sameTrace(dev, cpu, 1e-4, why), qPrintable(QString::fromStdString(text) + QStringLiteral(": ") + why));
        QCOMPARE(dev.producer, cpu.producer); // every stage came back: the model may continue it
        // the views' on-demand predictions read a GPU trace as a CPU one
        if (m->info().causal && dev.tokens.size() > 1) {
            NextTokens a, b;
            QVERIFY(m->nextTokens(dev, 0, a));
            QVERIFY(m->nextTokens(cpu, 0, b));
            QCOMPARE(a.top.front().id, b.top.front().id);
        }
    }
}

void TestGpuModel::stagesMasksAndEveryPrediction_data()
{
    static const char *const some[] = {"gpt2-tiny", "bert-tiny", "qwen3-tiny", "gemma2-tiny", "mistral-tiny", "phi3-tiny"};
    apiRows(some, sizeof(some) / sizeof(some[0]));
}

// Scores, a gated MLP's products, predictions at every position, a padded key and masked cells.
void TestGpuModel::stagesMasksAndEveryPrediction()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, model);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    Model *m = opened(model);
    QVERIFY(m);
    TraceRequest req;
    req.text = textsOf(model).front();
    req.keepScores = true;
    req.keepMlp = true;
    req.allPredictions = true;
    req.paddedKeys = {2};
    req.maskedCells = {{4, 1}, {5, 0}, {5, 1}, {5, 2}, {5, 3}, {5, 4}, {5, 5}}; // row 5 whole (causal)
    Trace<float> cpu, dev;
    QVERIFY(m->trace(req, cpu));
    req.device = gpu;
    QVERIFY(m->trace(req, dev));
    QCOMPARE(dev.device, gpu->name());
    QVERIFY(!dev.layers.front().attention.batch.front().scores.empty());
    QVERIFY(dev.layers.front().attention.batch.front().mask.size() != 0);
    QString why;
    QVERIFY2(sameTrace(dev, cpu, 1e-4, why), qPrintable(why));
}

void TestGpuModel::topKOnTheDevice_data()
{
    static const char *const some[] = {"gpt2-tiny", "gemma2-tiny", "llama-tiny"}; // gemma2: the final soft-cap
    apiRows(some, sizeof(some) / sizeof(some[0]));
}

// The LM head's top-k, normalizer and actual next token at every position: on the GPU up to 16
// (topk.comp), from the logits rows read back beyond; equal to the CPU's either way.
void TestGpuModel::topKOnTheDevice()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, model);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    Model *m = opened(model);
    QVERIFY(m);
    const int V = m->info().vocabulary;
    QVERIFY(V > 64);
    for (int k : {1, 10, 16, 17, 64}) {
        TraceRequest req;
        req.text = textsOf(model).front();
        req.topK = k;
        req.allPredictions = true;
        Trace<float> cpu, dev;
        QVERIFY(m->trace(req, cpu));
        req.device = gpu;
        QVERIFY(m->trace(req, dev));
        QCOMPARE(dev.device, gpu->name());
        QString why;
        QVERIFY2(sameTrace(dev, cpu, 1e-4, why), qPrintable(QStringLiteral("top-%1: ").arg(k) + why));
        const Predictions &p = dev.predictions, &q = cpu.predictions;
        QCOMPARE(p.topK, k);
        QCOMPARE(p.next.size(), dev.tokens.size());
        for (size_t i = 0; i < p.next.size(); ++i) {
            QCOMPARE(int(p.next[i].size()), k);
            QVERIFY2(std::abs(p.logNormalizer[i] - q.logNormalizer[i]) <= 1e-4 + 1e-4 * std::abs(q.logNormalizer[i]),
                     qPrintable(QStringLiteral("top-%1, position %2: log normalizer %3 vs %4")
                                    .arg(k).arg(i).arg(p.logNormalizer[i]).arg(q.logNormalizer[i])));
        }
        QVERIFY(std::isnan(p.actualNext.back()));
        QVERIFY(!std::isnan(p.actualNext.front()));
    }
}

void TestGpuModel::appendComputesOnlyNewRows_data()
{
    static const char *const some[] = {"gpt2-tiny", "llama-tiny", "mistral-tiny", "gemma3-tiny", "qwen2-tiny"};
    apiRows(some, sizeof(some) / sizeof(some[0]));
}

// A causal text with tokens appended: the device computes the new rows only (its keys and values of
// the prefix stay on the GPU), and the trace equals a full one, on the GPU and on the CPU.
void TestGpuModel::appendComputesOnlyNewRows()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, model);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    Model *m = opened(model);
    QVERIFY(m);
    std::vector<TraceToken> tokens;
    QVERIFY(m->tokenize(textsOf(model).front(), tokens));
    std::vector<int> ids;
    for (const TraceToken &t : tokens)
        ids.push_back(t.id);
    QVERIFY(ids.size() > 6);
    TraceRequest req;
    req.device = gpu;
    req.ids.assign(ids.begin(), ids.end() - 3);
    Trace<float> grown;
    QVERIFY(m->trace(req, grown));
    QCOMPARE(gpu->lastForwardRows(), int(ids.size()) - 3);
    for (int k = 2; k >= 0; --k) {
        req.ids.assign(ids.begin(), ids.end() - k);
        QVERIFY(m->trace(req, grown));
        QCOMPARE(gpu->lastForwardRows(), 1); // one new token, one row
    }
    TraceRequest fresh;
    fresh.ids = ids;
    Trace<float> cpu;
    QVERIFY(m->trace(fresh, cpu));
    QString why;
    QVERIFY2(sameTrace(grown, cpu, 1e-4, why), qPrintable(QStringLiteral("appended vs CPU: ") + why));
    // a changed token in the middle: recomputed from there, still equal
    std::vector<int> changed = ids;
    changed[3] = ids[1];
    req.ids = changed;
    QVERIFY(m->trace(req, grown));
    QCOMPARE(gpu->lastForwardRows(), int(ids.size()) - 3);
    fresh.ids = changed;
    QVERIFY(m->trace(fresh, cpu));
    why.clear();
    QVERIFY2(sameTrace(grown, cpu, 1e-4, why), qPrintable(QStringLiteral("edited vs CPU: ") + why));
}

void TestGpuModel::observedOnly_data()
{
    static const char *const some[] = {"llama-tiny", "attnviz-tiny-2"};
    apiRows(some, sizeof(some) / sizeof(some[0]));
}

// Only the observed layers and heads come back (weights only, no stages): the rest is empty, what
// came back equals the CPU's, and the trace is nobody's to continue.
void TestGpuModel::observedOnly()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, model);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    Model *m = opened(model);
    QVERIFY(m);
    const int L = m->info().layers, H = m->info().heads;
    QVERIFY(L >= 2 && H >= 2);
    TraceRequest req;
    req.text = textsOf(model).front();
    Trace<float> cpu, dev;
    QVERIFY(m->trace(req, cpu));
    req.device = gpu;
    req.observe.layers = {L - 1};
    req.observe.heads = {1};
    req.observe.stages = false;
    QVERIFY(m->trace(req, dev));
    QCOMPARE(dev.device, gpu->name());
    QCOMPARE(dev.producer, uint64_t(0));
    QCOMPARE(dev.numLayers(), L);
    const SequenceResult<float> &first = dev.layers.front().attention.batch.front();
    QVERIFY(first.weights.empty() && first.weightsAvg.size() == 0 && first.q.size() == 0);
    QCOMPARE(dev.layers.front().output.size(), Eigen::Index(0));
    const SequenceResult<float> &s = dev.layers.back().attention.batch.front(), &r = cpu.layers.back().attention.batch.front();
    QCOMPARE(int(s.weights.size()), H);
    QCOMPARE(s.weights[0].size(), Eigen::Index(0));
    QCOMPARE(s.q.size(), Eigen::Index(0));
    int bad = 0;
    compareMat(s.weights[1], r.weights[1], 1e-4, bad);
    compareMat(s.weightsAvg, r.weightsAvg, 1e-4, bad);
    compareMat(dev.final, cpu.final, 1e-4, bad);
    QCOMPARE(bad, 0);
    QCOMPARE(dev.predictions.next.back().front().id, cpu.predictions.next.back().front().id);
}

void TestGpuModel::cpuTakesWhatTheDeviceCannot_data()
{
    static const char *const one[] = {"llama-tiny"};
    apiRows(one, 1);
}

// A forward the device cannot hold (its buffers capped below one layer's attention): computed on
// the CPU, the trace saying which device and why; the next one that fits runs on the GPU again.
void TestGpuModel::cpuTakesWhatTheDeviceCannot()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, model);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    Model *m = opened(model);
    QVERIFY(m);
    TraceRequest req;
    req.text = textsOf(model).front();
    req.device = gpu;
    Trace<float> tr;
    gpu->setMaxBufferBytes(256);
    QVERIFY(m->trace(req, tr));
    gpu->setMaxBufferBytes(0);
    QCOMPARE(tr.device, std::string("cpu"));
    QVERIFY2(tr.deviceNote.find("largest storage buffer") != std::string::npos, tr.deviceNote.c_str());
    QVERIFY2(tr.deviceNote.find("computed on the CPU") != std::string::npos, tr.deviceNote.c_str());
    QVERIFY(tr.layers.front().attention.batch.front().weights.front().size() != 0);
    QVERIFY(m->trace(req, tr));
    QCOMPARE(tr.device, gpu->name());
}

// Two GPU backends alive at once (the window's and its Compare tab's), both having computed: each
// ends in either order without touching the other's device.
void TestGpuModel::backendsEndInAnyOrder()
{
    Model *m = opened(QStringLiteral("llama-tiny"));
    QVERIFY(m);
    for (bool firstEndsFirst : {false, true}) {
        auto a = std::make_unique<GpuBackend>(GpuApi::Vulkan);
        auto b = std::make_unique<GpuBackend>(GpuApi::Vulkan);
        if (!a->start() || !b->start())
            QSKIP("no Vulkan device");
        TraceRequest req;
        req.text = "a b c";
        Trace<float> ta, tb;
        req.device = b.get();
        QVERIFY(m->trace(req, tb));
        if (firstEndsFirst) {
            req.device = a.get();
            QVERIFY(m->trace(req, ta));
            a.reset();
        }
        b.reset();
        a.reset();
    }
}

// A model closed (its weights gone) leaves the GPU at the device's next call; the next model, and a
// model opened again, compute as before.
void TestGpuModel::aClosedModelLeavesTheGpu()
{
    GPU_BACKEND_OR_SKIP(gpu, m_backends, GpuApi::Vulkan);
    TraceRequest req;
    req.text = "The cat sat on the mat.";
    req.device = gpu;
    for (int round = 0; round < 2; ++round) {
        std::unique_ptr<Model> m;
        QVERIFY(openPretrained(modelPath(QStringLiteral("qwen3-tiny")).toStdString(), {}, m));
        Trace<float> tr, cpu;
        QVERIFY(m->trace(req, tr));
        QCOMPARE(tr.device, gpu->name());
        TraceRequest onCpu = req;
        onCpu.device = nullptr;
        QVERIFY(m->trace(onCpu, cpu));
        QString why;
        QVERIFY2(sameTrace(tr, cpu, 1e-4, why), qPrintable(why));
    } // closed: its weights expire; the next call releases them
    Model *other = opened(QStringLiteral("gpt2-tiny"));
    QVERIFY(other);
    Trace<float> tr;
    QVERIFY(other->trace(req, tr));
    QCOMPARE(tr.device, gpu->name());
}

void TestGpuModel::weightsInChunks_data()
{
    static const char *const some[] = {"gpt2-tiny", "llama-tiny", "attnviz-tiny-2", "llama-q8_0.gguf"};
    apiRows(some, sizeof(some) / sizeof(some[0]));
}

// Storage buffers capped at 128 KiB (lavapipe's limit is 128 MiB; GPT-2 small's float32 unembedding
// is 147): every weight matrix larger than that goes up in chunks of rows, each product a dispatch
// per chunk, and the trace still equals the CPU's.
void TestGpuModel::weightsInChunks()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, model);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    Model *m = opened(model);
    QVERIFY(m);
    TraceRequest req;
    req.text = textsOf(model).front();
    Trace<float> cpu, dev;
    QVERIFY(m->trace(req, cpu));
    req.device = gpu;
    gpu->setMaxBufferBytes(128 << 10);
    const Status st = m->trace(req, dev);
    gpu->setMaxBufferBytes(0);
    QVERIFY2(st, st.message.c_str());
    QVERIFY2(dev.device == gpu->name(), dev.deviceNote.c_str());
    QString why;
    QVERIFY2(sameTrace(dev, cpu, 1e-4, why), qPrintable(why));
}

QTEST_MAIN(TestGpuModel)
#include "tst_gpumodel.moc"
