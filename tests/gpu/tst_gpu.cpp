// SPDX-License-Identifier: GPL-3.0-or-later
// The GPU backend (Qt RHI compute) against the CPU core, one _data() row per backend:
//  - every reference case (tests/fixtures/cases) within float32 tolerance (rtol 1e-4, atol 1e-5);
//  - random inputs at t = 8, 100, 1000 and 3000 for every mask, scaling rule and normalization,
//    GPU vs CPU (float32), max abs difference reported per stage;
//  - heads split across storage buffers (self and cross attention), softmax-then-renormalize whose
//    kept share underflows;
//  - readback of chosen heads only, refusals (dropout, APIs this platform lacks) as Status;
//  - `model run --backend gpu` on a GPU that fails: the CPU computes, one line of attnviz's says why.
// Runs under xvfb-run (label xvfb): Vulkan on lavapipe, OpenGL 4.3 on llvmpipe in CI. A backend that
// cannot start is skipped with QSKIP, never passed. Mesa's software GPUs stop a shader invocation
// after 65535 loop iterations: t = 3000 checks that the tiled shaders stay below that.
#include "gpubackends.h"
#include "rungpufault.h"
#include "testpaths.h"
#include "attnviz/attention.h"
#include "attnviz/caseio.h"
#include "attnviz/gpubackend.h"

#include <QDir>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QProcess>
#include <QtTest>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>

using namespace attnviz;

Q_DECLARE_METATYPE(attnviz::GpuApi)

namespace {

AttentionInput<float> toFloat(const AttentionInput<double> &in)
{
    AttentionInput<float> out;
    out.attnMask = in.attnMask;
    for (const auto &s : in.batch)
        out.batch.push_back({s.query.cast<float>(), s.key.cast<float>(), s.value.cast<float>(), s.keyPadding});
    auto lin = [](const Linear<double> &l) { return Linear<float>{l.W.cast<float>(), l.b.cast<float>()}; };
    out.proj = {lin(in.proj.q), lin(in.proj.k), lin(in.proj.v), lin(in.proj.o)};
    return out;
}

// max |a - b| over entries; `ok` false where |a-b| > atol + rtol |b| or NaN does not meet NaN.
double compareMat(const Mat<float> &a, const Mat<float> &b, double rtol, double atol, bool &ok)
{
    if (a.rows() != b.rows() || a.cols() != b.cols()) {
        ok = false;
        return INFINITY;
    }
    double mx = 0;
    for (Eigen::Index i = 0; i < a.size(); ++i) {
        const double x = a.data()[i], y = b.data()[i];
        if (std::isnan(y) || std::isnan(x)) {
            ok &= std::isnan(x) && std::isnan(y);
            continue;
        }
        if (std::isinf(y) || std::isinf(x)) {
            ok &= x == y;
            continue;
        }
        const double d = std::abs(x - y);
        mx = std::max(mx, d);
        ok &= d <= atol + rtol * std::abs(y);
    }
    return mx;
}

enum class MaskCase { None, Causal, KeyPadding, Arbitrary, CausalKeyPadding };
const char *maskName(MaskCase m)
{
    switch (m) {
    case MaskCase::None: return "none";
    case MaskCase::Causal: return "causal";
    case MaskCase::KeyPadding: return "keypad";
    case MaskCase::Arbitrary: return "arbitrary";
    case MaskCase::CausalKeyPadding: return "causal+keypad";
    }
    return "?";
}

struct NormCase {
    Normalization norm;
    MaskMethod method;
    const char *name;
};
const NormCase kNorms[] = {{Normalization::Softmax, MaskMethod::NegInf, "softmax"},
                           {Normalization::Softmax, MaskMethod::MultiplyRenormalize, "softmax-mulrenorm"},
                           {Normalization::Sum, MaskMethod::NegInf, "sum"},
                           {Normalization::Cosine, MaskMethod::NegInf, "cosine"}};
struct ScaleCase {
    ScaleRule rule;
    const char *name;
};
const ScaleCase kScales[] = {{ScaleRule::InvSqrtDHead, "1/sqrt(dh)"},
                             {ScaleRule::InvSqrtDModel, "1/sqrt(d)"},
                             {ScaleRule::None, "unscaled"},
                             {ScaleRule::Temperature, "T=0.7"}};
const MaskCase kMasks[] = {MaskCase::None, MaskCase::Causal, MaskCase::KeyPadding, MaskCase::Arbitrary,
                           MaskCase::CausalKeyPadding};

struct RandomSpec {
    int batch = 1, tq = 8, tk = 8, dModel = 16, kdim = 16, vdim = 16, heads = 2;
    MaskCase mask = MaskCase::None;
    NormCase norm = kNorms[0];
    ScaleCase scale = kScales[0];
    FullyMaskedPolicy policy = FullyMaskedPolicy::NaN;
    bool biases = true;
    unsigned seed = 1;
};

// Sum normalization divides by the row sum: positive inputs and weights keep it far from zero,
// as in seed 001; the other normalizations take inputs and weights of both signs.
void makeRandom(const RandomSpec &s, AttentionConfig &cfg, AttentionInput<float> &in)
{
    std::mt19937 rng(s.seed);
    const bool positive = s.norm.norm == Normalization::Sum;
    std::uniform_real_distribution<float> x(positive ? 0.0f : -1.0f, 1.0f);
    auto fill = [&](Mat<float> &m, int r, int c, float scale) {
        m.resize(r, c);
        for (Eigen::Index i = 0; i < m.size(); ++i)
            m.data()[i] = x(rng) * scale;
    };
    in = {};
    in.batch.resize(size_t(s.batch));
    for (auto &seq : in.batch) {
        fill(seq.query, s.tq, s.dModel, 1.0f);
        fill(seq.key, s.tk, s.kdim, 1.0f);
        fill(seq.value, s.tk, s.vdim, 1.0f);
        if (s.mask == MaskCase::KeyPadding || s.mask == MaskCase::CausalKeyPadding) {
            seq.keyPadding.assign(size_t(s.tk), 0);
            for (int j = s.tk - std::max(1, s.tk / 5); j < s.tk; ++j)
                seq.keyPadding[size_t(j)] = 1; // right padding, as a tokenizer would
        }
    }
    const int dIn = s.dModel;
    auto lin = [&](Linear<float> &l, int out, int inW) {
        fill(l.W, out, inW, 1.0f / std::sqrt(float(inW)));
        if (s.biases) {
            l.b.resize(out);
            for (int i = 0; i < out; ++i)
                l.b[i] = x(rng) * 0.1f;
        }
    };
    lin(in.proj.q, dIn, s.dModel);
    lin(in.proj.k, dIn, s.kdim);
    lin(in.proj.v, dIn, s.vdim);
    lin(in.proj.o, s.dModel, dIn);
    if (s.mask == MaskCase::Arbitrary) {
        in.attnMask.resize(s.tq, s.tk);
        std::bernoulli_distribution drop(0.3);
        for (Eigen::Index i = 0; i < in.attnMask.size(); ++i)
            in.attnMask.data()[i] = drop(rng) ? 1 : 0;
        in.attnMask.row(s.tq / 2).setOnes(); // one fully masked row: the policy decides
    }
    cfg = {};
    cfg.numHeads = s.heads;
    cfg.scaleRule = s.scale.rule;
    cfg.temperature = 0.7;
    cfg.normalization = s.norm.norm;
    cfg.maskMethod = s.norm.method;
    cfg.causal = s.mask == MaskCase::Causal || s.mask == MaskCase::CausalKeyPadding;
    cfg.fullyMasked = s.policy;
}

} // namespace

class TestGpu : public QObject {
    Q_OBJECT
private slots:
    void cleanupTestCase();
    void cases_data();
    void cases();
    void randomVsCpu_data();
    void randomVsCpu();
    void headsSplitAcrossBuffers_data();
    void headsSplitAcrossBuffers();
    void readbackChosenHeads_data();
    void readbackChosenHeads();
    void renormalizeUnderflow_data();
    void renormalizeUnderflow();
    void refusals_data();
    void refusals();
    void unavailableApi();
    void cliNamesBackendAndDevice();
    void cliFallsBackToTheCpu_data();
    void cliFallsBackToTheCpu();
    void benchSaysWhyItTimesTheCpu();

private:
    void addBackendRows(const std::function<void(const char *, GpuApi)> &add);
    test::GpuBackends m_backends;
};

void TestGpu::cleanupTestCase()
{
    m_backends.clear(); // before QGuiApplication goes
}

void TestGpu::addBackendRows(const std::function<void(const char *, GpuApi)> &add)
{
    add("vulkan", GpuApi::Vulkan);
    add("opengl", GpuApi::OpenGL);
}

#define GPU_OR_SKIP(var, api)                                                                                          \
    GpuBackend *var = m_backends.get(api);                                                                             \
    if (!var)                                                                                                          \
        QSKIP(qPrintable(QStringLiteral("%1 cannot start here: %2")                                                    \
                             .arg(QLatin1String(toString(api)), m_backends.why(api))));

void TestGpu::cases_data()
{
    QTest::addColumn<GpuApi>("api");
    QTest::addColumn<QString>("path");
    const QDir dir(QString::fromUtf8(ATTNVIZ_FIXTURE("/cases")));
    const QStringList files = dir.entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
    QVERIFY(files.size() >= 13);
    addBackendRows([&](const char *name, GpuApi api) {
        for (const QString &f : files)
            QTest::addRow("%s/%s", name, qPrintable(QFileInfo(f).baseName())) << api << dir.filePath(f);
    });
}

void TestGpu::cases()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, path);
    GPU_OR_SKIP(gpu, api);
    CaseFile c;
    const Status ls = loadCase(path.toStdString(), c);
    QVERIFY2(ls.ok(), ls.message.c_str());
    AttentionResult<float> r;
    const Status st = gpu->compute(c.config, toFloat(c.input), r);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(int(c.expected.size()), 8);
    for (const auto &stage : stageNames()) {
        bool ok = false;
        std::string detail;
        const double d = compareStage(c, r, stage, 1e-4, 1e-5, ok, &detail);
        QVERIFY2(ok, (stage + " max|diff| " + std::to_string(d) + ": " + detail).c_str());
    }
}

void TestGpu::randomVsCpu_data()
{
    QTest::addColumn<GpuApi>("api");
    QTest::addColumn<int>("t");
    QTest::addColumn<int>("variant");
    // t = 8 and 100: every mask x scaling x normalization. t = 1000 and 3000: each mask, each scaling
    // and each normalization at least once (5 rows, diagonal), with fewer dimensions at 3000 so that
    // the software rasterizers finish in CI.
    addBackendRows([&](const char *name, GpuApi api) {
        for (int t : {8, 100}) {
            for (int v = 0; v < 5 * 4 * 4; ++v)
                QTest::addRow("%s/t%d/%s/%s/%s", name, t, maskName(kMasks[v / 16]), kScales[(v / 4) % 4].name,
                              kNorms[v % 4].name)
                    << api << t << v;
        }
        for (int t : {1000, 3000}) {
            for (int i = 0; i < 5; ++i) {
                const int v = i * 16 + (i % 4) * 4 + (i + 1) % 4;
                QTest::addRow("%s/t%d/%s/%s/%s", name, t, maskName(kMasks[v / 16]), kScales[(v / 4) % 4].name,
                              kNorms[v % 4].name)
                    << api << t << v;
            }
        }
    });
}

void TestGpu::randomVsCpu()
{
    QFETCH(GpuApi, api);
    QFETCH(int, t);
    QFETCH(int, variant);
    GPU_OR_SKIP(gpu, api);
    RandomSpec s;
    s.mask = kMasks[variant / 16];
    s.scale = kScales[(variant / 4) % 4];
    s.norm = kNorms[variant % 4];
    s.tq = s.tk = t;
    s.seed = unsigned(1000 * t + variant);
    if (t <= 100) {
        // Cross-attention shapes and a batch of two at the small sizes.
        s.tk = t + t / 3 + 1;
        s.kdim = 12;
        s.vdim = 20;
        s.dModel = 24;
        s.heads = 3;
        s.batch = 2;
        s.policy = FullyMaskedPolicy(variant % 3);
    } else if (t >= 3000) {
        // One head of 16: software rasterizers take seconds per t^2 matrix product here.
        s.dModel = s.kdim = s.vdim = 16;
        s.heads = 1;
    } else {
        s.dModel = s.kdim = s.vdim = 32;
        s.heads = 2;
    }
    AttentionConfig cfg;
    AttentionInput<float> in;
    makeRandom(s, cfg, in);

    AttentionResult<float> ref, got;
    QElapsedTimer timer;
    timer.start();
    const Status cs = computeAttention(cfg, in, ref);
    const qint64 cpuMs = timer.restart();
    QVERIFY2(cs.ok(), cs.message.c_str());
    const Status gs = gpu->compute(cfg, in, got);
    const qint64 gpuMs = timer.elapsed();
    QVERIFY2(gs.ok(), gs.message.c_str());

    QCOMPARE(got.batch.size(), ref.batch.size());
    const double rtol = 1e-4, atol = 1e-5;
    double maxQkv = 0, maxScores = 0, maxWeights = 0, maxAvg = 0, maxCtx = 0, maxOut = 0;
    for (size_t b = 0; b < ref.batch.size(); ++b) {
        const auto &R = ref.batch[b];
        const auto &G = got.batch[b];
        bool ok = true;
        maxQkv = std::max({maxQkv, compareMat(G.q, R.q, rtol, atol, ok), compareMat(G.k, R.k, rtol, atol, ok),
                           compareMat(G.v, R.v, rtol, atol, ok)});
        QVERIFY2(ok, "q/k/v differ");
        QCOMPARE(G.scores.size(), R.scores.size());
        QCOMPARE(G.weights.size(), R.weights.size());
        for (size_t h = 0; h < R.weights.size(); ++h) {
            maxScores = std::max(maxScores, compareMat(G.scores[h], R.scores[h], rtol, atol, ok));
            QVERIFY2(ok, qPrintable(QStringLiteral("scores differ (batch %1, head %2)").arg(b).arg(h)));
            maxWeights = std::max(maxWeights, compareMat(G.weights[h], R.weights[h], rtol, atol, ok));
            QVERIFY2(ok, qPrintable(QStringLiteral("weights differ (batch %1, head %2)").arg(b).arg(h)));
        }
        maxAvg = std::max(maxAvg, compareMat(G.weightsAvg, R.weightsAvg, rtol, atol, ok));
        QVERIFY2(ok, "weights_avg differs");
        // Cosine weights are not normalized: a context entry sums t_k terms of size ~1 that cancel,
        // so float32's error scales with the terms, not with the (small) sum. There the absolute
        // tolerance is taken relative to the largest entry of the matrix.
        const bool cosine = s.norm.norm == Normalization::Cosine;
        const double atolCtx = cosine ? atol + rtol * R.context.cwiseAbs().maxCoeff() : atol;
        const double atolOut = cosine ? atol + rtol * R.output.cwiseAbs().maxCoeff() : atol;
        maxCtx = std::max(maxCtx, compareMat(G.context, R.context, rtol, atolCtx, ok));
        QVERIFY2(ok, "context differs");
        maxOut = std::max(maxOut, compareMat(G.output, R.output, rtol, atolOut, ok));
        QVERIFY2(ok, "output differs");
        QVERIFY(G.mask == R.mask);
        QCOMPARE(G.fullyMaskedRows, R.fullyMaskedRows);
        QCOMPARE(G.degenerateRows, R.degenerateRows);
        if (s.mask == MaskCase::Arbitrary)
            QVERIFY(!G.fullyMaskedRows.empty()); // the policy was exercised
    }
    qInfo("t=%d h=%d: max|gpu-cpu| qkv %.2e scores %.2e weights %.2e avg %.2e context %.2e output %.2e "
          "(cpu %lld ms, %s %lld ms)",
          t, s.heads, maxQkv, maxScores, maxWeights, maxAvg, maxCtx, maxOut, cpuMs, gpu->name().c_str(), gpuMs);
}

void TestGpu::headsSplitAcrossBuffers_data()
{
    QTest::addColumn<GpuApi>("api");
    QTest::addColumn<int>("norm");
    QTest::addColumn<bool>("cross");
    addBackendRows([](const char *name, GpuApi api) {
        for (int n = 0; n < 4; ++n)
            QTest::addRow("%s/%s", name, kNorms[n].name) << api << n << false;
        for (int n = 0; n < 4; ++n)
            QTest::addRow("%s/cross/%s", name, kNorms[n].name) << api << n << true;
    });
}

// Heads in several storage buffers (as at large t, or on llvmpipe's 128 MiB limit): 5 heads, at
// most 2 per buffer. The head mean adds up across buffers; cosine finds its head's q and k. Cross
// attention (t_q != t_k, keys and values of other widths) with a mask that leaves a row fully
// masked, under the uniform policy.
void TestGpu::headsSplitAcrossBuffers()
{
    QFETCH(GpuApi, api);
    QFETCH(int, norm);
    QFETCH(bool, cross);
    GPU_OR_SKIP(gpu, api);
    RandomSpec s;
    s.tq = s.tk = 200;
    s.heads = 5;
    s.dModel = s.kdim = s.vdim = 40;
    s.mask = MaskCase::Causal;
    s.norm = kNorms[norm];
    if (cross) {
        s.tq = 150;
        s.tk = 230;
        s.kdim = 24;
        s.vdim = 32;
        s.mask = MaskCase::Arbitrary;
        s.policy = FullyMaskedPolicy::Uniform;
    }
    AttentionConfig cfg;
    AttentionInput<float> in;
    makeRandom(s, cfg, in);
    AttentionResult<float> ref, got;
    QVERIFY(computeAttention(cfg, in, ref).ok());
    gpu->setMaxBufferBytes(2LL * s.tq * s.tk * 4);
    const Status st = gpu->compute(cfg, in, got);
    gpu->setMaxBufferBytes(0);
    QVERIFY2(st.ok(), st.message.c_str());
    bool ok = true;
    for (int h = 0; h < s.heads; ++h) {
        compareMat(got.batch[0].scores[size_t(h)], ref.batch[0].scores[size_t(h)], 1e-4, 1e-5, ok);
        compareMat(got.batch[0].weights[size_t(h)], ref.batch[0].weights[size_t(h)], 1e-4, 1e-5, ok);
        QVERIFY2(ok, qPrintable(QStringLiteral("head %1 differs").arg(h)));
    }
    compareMat(got.batch[0].weightsAvg, ref.batch[0].weightsAvg, 1e-4, 1e-5, ok);
    QVERIFY2(ok, "weights_avg differs");
    const double atol = 1e-5 + 1e-4 * ref.batch[0].context.cwiseAbs().maxCoeff();
    compareMat(got.batch[0].context, ref.batch[0].context, 1e-4, atol, ok);
    QVERIFY2(ok, "context differs");
    QCOMPARE(got.batch[0].fullyMaskedRows, ref.batch[0].fullyMaskedRows);
    QCOMPARE(got.batch[0].degenerateRows, ref.batch[0].degenerateRows);
    // A cap below one head's matrix: refused with a reason, not a crash.
    gpu->setMaxBufferBytes(1024);
    const Status small = gpu->compute(cfg, in, got);
    gpu->setMaxBufferBytes(0);
    QCOMPARE(small.code, StatusCode::Unavailable);
    QVERIFY2(small.message.find("storage buffer") != std::string::npos, small.message.c_str());
    QVERIFY(gpu->compute(cfg, in, got).ok());
}

void TestGpu::readbackChosenHeads_data()
{
    QTest::addColumn<GpuApi>("api");
    addBackendRows([](const char *name, GpuApi api) { QTest::addRow("%s", name) << api; });
}

// Only the displayed head comes back when asked; what comes back equals a full run.
void TestGpu::readbackChosenHeads()
{
    QFETCH(GpuApi, api);
    GPU_OR_SKIP(gpu, api);
    RandomSpec s;
    s.tq = s.tk = 300;
    s.heads = 4;
    s.mask = MaskCase::Causal;
    AttentionConfig cfg;
    AttentionInput<float> in;
    makeRandom(s, cfg, in);
    AttentionResult<float> all, one;
    QVERIFY(gpu->compute(cfg, in, all).ok());
    cfg.readbackHeads = {2, -1}; // head 2 and the head mean
    QVERIFY(gpu->compute(cfg, in, one).ok());
    const auto &A = all.batch[0];
    const auto &O = one.batch[0];
    QCOMPARE(O.weights.size(), size_t(4));
    for (int h : {0, 1, 3}) {
        QCOMPARE(O.weights[size_t(h)].size(), Eigen::Index(0));
        QCOMPARE(O.scores[size_t(h)].size(), Eigen::Index(0));
    }
    QVERIFY(O.weights[2] == A.weights[2]);
    QVERIFY(O.scores[2] == A.scores[2]);
    QVERIFY(O.weightsAvg == A.weightsAvg);
    QVERIFY(O.output == A.output);
    cfg.readbackHeads = {1}; // one head, no mean
    QVERIFY(gpu->compute(cfg, in, one).ok());
    QCOMPARE(one.batch[0].weightsAvg.size(), Eigen::Index(0));
    QVERIFY(one.batch[0].weights[1] == A.weights[1]);
    QCOMPARE(one.batch[0].weights[2].size(), Eigen::Index(0));
    QVERIFY(one.batch[0].context == A.context);
}

void TestGpu::renormalizeUnderflow_data()
{
    QTest::addColumn<GpuApi>("api");
    addBackendRows([](const char *name, GpuApi api) { QTest::addRow("%s", name) << api; });
}

// Softmax then renormalize where the kept key's share underflows (a masked key scores 195 above
// it): the core falls back to the softmax over the keys left, and so does the GPU (1, not 0 / 0);
// no row is degenerate.
void TestGpu::renormalizeUnderflow()
{
    QFETCH(GpuApi, api);
    GPU_OR_SKIP(gpu, api);
    AttentionConfig cfg;
    cfg.numHeads = 1;
    cfg.scaleRule = ScaleRule::None;
    cfg.normalization = Normalization::Softmax;
    cfg.maskMethod = MaskMethod::MultiplyRenormalize;
    AttentionInput<float> in;
    in.batch.resize(1);
    in.batch[0].query.resize(2, 4);
    in.batch[0].query << 10, 0, 0, 0, 0.1f, 0, 0, 0;
    in.batch[0].key.resize(3, 4);
    in.batch[0].key << 20, 0, 0, 0, 0.5f, 1, 0, 0, -0.3f, 0, 0, 0;
    in.batch[0].value = in.batch[0].key;
    in.attnMask = BoolMat::Zero(2, 3);
    in.attnMask(0, 0) = 1;
    in.attnMask(0, 2) = 1;
    AttentionResult<float> ref, got;
    QVERIFY(computeAttention(cfg, in, ref).ok());
    const Status st = gpu->compute(cfg, in, got);
    QVERIFY2(st.ok(), st.message.c_str());
    const Mat<float> &w = got.batch[0].weights[0];
    QCOMPARE(w(0, 0), 0.0f);
    QCOMPARE(w(0, 1), 1.0f);
    QCOMPARE(w(0, 2), 0.0f);
    bool ok = true;
    compareMat(w, ref.batch[0].weights[0], 1e-4, 1e-5, ok);
    QVERIFY2(ok, "weights differ");
    QVERIFY(got.batch[0].degenerateRows.empty());
}

void TestGpu::refusals_data()
{
    QTest::addColumn<GpuApi>("api");
    addBackendRows([](const char *name, GpuApi api) { QTest::addRow("%s", name) << api; });
}

// Problems the GPU path does not take come back as a Status the caller can fall back on, and the
// backend keeps working afterwards.
void TestGpu::refusals()
{
    QFETCH(GpuApi, api);
    GPU_OR_SKIP(gpu, api);
    RandomSpec s;
    AttentionConfig cfg;
    AttentionInput<float> in;
    makeRandom(s, cfg, in);
    AttentionResult<float> r;
    cfg.dropout = 0.1;
    Status st = gpu->compute(cfg, in, r);
    QCOMPARE(st.code, StatusCode::Unavailable);
    QVERIFY2(st.message.find("dropout") != std::string::npos, st.message.c_str());
    cfg.dropout = 0;
    for (float bad : {NAN, INFINITY}) {
        AttentionInput<float> nonFinite = in;
        nonFinite.batch[0].value(3, 5) = bad;
        st = gpu->compute(cfg, nonFinite, r);
        QCOMPARE(st.code, StatusCode::NonFinite);
        QVERIFY2(st.message.find("inputs.value") != std::string::npos, st.message.c_str());
    }
    cfg.numHeads = 3; // does not divide 16
    st = gpu->compute(cfg, in, r);
    QCOMPARE(st.code, StatusCode::InvalidInput);
    cfg.numHeads = 2;
    QVERIFY(gpu->compute(cfg, in, r).ok());
    AttentionResult<float> ref;
    QVERIFY(computeAttention(cfg, in, ref).ok());
    bool ok = true;
    compareMat(r.batch[0].output, ref.batch[0].output, 1e-4, 1e-5, ok);
    QVERIFY(ok);
}

// An API this platform does not have: Unavailable with a reason, no crash; compute() says the same.
void TestGpu::unavailableApi()
{
#if defined(Q_OS_WIN) || defined(Q_OS_MACOS)
    QSKIP("checks an API missing on Linux");
#else
    for (GpuApi api : {GpuApi::D3D11, GpuApi::Metal}) {
        GpuBackend b(api);
        const Status st = b.start();
        QCOMPARE(st.code, StatusCode::Unavailable);
        QVERIFY2(st.message.find(toString(api)) != std::string::npos, st.message.c_str());
        AttentionConfig cfg;
        AttentionInput<float> in;
        RandomSpec s;
        makeRandom(s, cfg, in);
        AttentionResult<float> r;
        QCOMPARE(b.compute(cfg, in, r).code, StatusCode::Unavailable);
        QCOMPARE(b.name(), std::string("gpu"));
    }
#endif
}

// `attnviz compute --backend gpu` names the GPU backend and its device in the result JSON and
// passes --check; `--backend auto` on a tiny case stays on the CPU and says so.
void TestGpu::cliNamesBackendAndDevice()
{
    const QString exe = QString::fromUtf8(ATTNVIZ_BINARY);
    const QString c = QString::fromUtf8(ATTNVIZ_FIXTURE("/cases/mha_04_h2_d8_tq3_tk7_b2_cross_key_padding.json"));
    QProcess p;
    p.start(exe, {QStringLiteral("compute"), c, QStringLiteral("--backend"), QStringLiteral("gpu"), QStringLiteral("--check"),
                  QStringLiteral("-o"), QStringLiteral("-")});
    QVERIFY(p.waitForFinished(120000));
    const QByteArray err = p.readAllStandardError();
    if (p.exitCode() == 1 && err.contains("no GPU backend could start"))
        QSKIP(qPrintable(QStringLiteral("no GPU backend here: ") + QString::fromLocal8Bit(err.trimmed().split('\n').last())));
    QVERIFY2(p.exitCode() == 0, err.constData());
    const QJsonObject o = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    const QString backend = o.value(QStringLiteral("backend")).toString();
    QVERIFY2(backend == QLatin1String("vulkan") || backend == QLatin1String("opengl"), qPrintable(backend));
    QVERIFY(!o.value(QStringLiteral("device")).toString().isEmpty());
    QCOMPARE(o.value(QStringLiteral("precision")).toString(), QStringLiteral("float32"));

    p.start(exe, {QStringLiteral("compute"), c, QStringLiteral("--backend"), QStringLiteral("auto"), QStringLiteral("-o"),
                  QStringLiteral("-")});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardError().contains("small problem, computing on the CPU"));
    QCOMPARE(QJsonDocument::fromJson(p.readAllStandardOutput()).object().value(QStringLiteral("backend")).toString(),
             QStringLiteral("cpu"));
}

void TestGpu::cliFallsBackToTheCpu_data()
{
    QTest::addColumn<QByteArray>("fault");
    QTest::addColumn<QString>("why");
    QTest::newRow("a shader that does not build")
        << QByteArray("shader") << QStringLiteral("the compute pipeline of attend.comp failed to build");
    // the driver refuses an allocation for real, and says so in its debug report
    QTest::newRow("weights larger than its memory") << QByteArray("memory") << QStringLiteral("do not fit the GPU's memory");
    // QRhi's copy of a piece would not fit the host's memory (Qt 6.4 leaves a batch broken by it)
    QTest::newRow("the host out of memory during the upload")
        << QByteArray("hostmemory") << QStringLiteral("out of memory on the host while copying the model's weights to the GPU");
}

// `model run --backend gpu` where the GPU fails (ATTNVIZ_GPU_FAULT makes the failure): exit 0, the
// CPU's numbers, and on stderr one line, attnviz's, saying why; none of the platform's own.
void TestGpu::cliFallsBackToTheCpu()
{
    QFETCH(QByteArray, fault);
    QFETCH(QString, why);
    {
        GpuBackend probe;
        if (Status st = probe.start(); !st)
            QSKIP(st.message.c_str());
    }
    QString err;
    QByteArray out;
    QVERIFY2(test::runWithGpuFault(fault.constData(),
                             {QStringLiteral("model"), QStringLiteral("run"), QString::fromUtf8(ATTNVIZ_FIXTURE("/models/llama-tiny")),
                              QStringLiteral("--text"), QStringLiteral("The quick brown fox"), QStringLiteral("--backend"),
                              QStringLiteral("gpu")},
                             err, out),
             qPrintable(err));
    const QStringList lines = err.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY2(lines.size() == 1, qPrintable(err));
    QVERIFY2(lines[0].startsWith(QLatin1String("attnviz model run: note: ")) && lines[0].contains(why) &&
                 lines[0].contains(QLatin1String("on the CPU")),
             qPrintable(err));
    const QJsonObject o = QJsonDocument::fromJson(out).object();
    QCOMPARE(o.value(QStringLiteral("device")).toString(), QStringLiteral("cpu"));
    QVERIFY(!o.value(QStringLiteral("attentions")).toArray().isEmpty());
}

// `bench --backend gpu` where the GPU does not start (a pipeline that does not build): the CPU is
// timed, the table names it, and stderr has one line, attnviz's, saying why.
void TestGpu::benchSaysWhyItTimesTheCpu()
{
    {
        GpuBackend probe;
        if (Status st = probe.start(); !st)
            QSKIP(st.message.c_str());
    }
    QString err;
    QByteArray out;
    QVERIFY2(test::runWithGpuFault("shader",
                             {QStringLiteral("bench"), QStringLiteral("--model"), QString::fromUtf8(ATTNVIZ_FIXTURE("/models/llama-tiny")),
                              QStringLiteral("--tokens"), QStringLiteral("8"), QStringLiteral("--repeat"), QStringLiteral("1"),
                              QStringLiteral("--backend"), QStringLiteral("gpu"), QStringLiteral("--json")},
                             err, out),
             qPrintable(err));
    const QStringList lines = err.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY2(lines.size() == 1 && lines[0].startsWith(QLatin1String("attnviz bench: note: ")) &&
                 lines[0].contains(QLatin1String("the compute pipeline of attend.comp failed to build")),
             qPrintable(err));
    const QJsonObject o = QJsonDocument::fromJson(out).object();
    QVERIFY2(!o.value(QStringLiteral("device")).toString().contains(QLatin1String("vulkan")),
             qPrintable(o.value(QStringLiteral("device")).toString()));
}

QTEST_MAIN(TestGpu)
#include "tst_gpu.moc"
