// SPDX-License-Identifier: GPL-3.0-or-later
// GpuBackend::pooledMap (core/gpu/src/rhipooledmap.cpp, shaders/pooledmap.comp): a pooled map of one
// head recomputed from a trace's q, k and log-sum-exp on the GPU equals AttentionTiles<float>'s on
// the CPU (max and mean, within 1e-5 relative; masked cells 0 on both), one _data() row per backend
// and region: a seeded model of SmolLM2-135M's shape (9 heads on 3 key/value heads) at 3,000 tokens,
// its second layer with a sliding window and soft-capped scores, with and without a padded key and
// masked cells; whole map, ragged edges, one cell over the whole region, a region past the causal
// diagonal (all 0), cells of one weight each (the tile's weights); the gemma2-tiny fixture (its
// soft-capping and local layers); qwen2-tiny with q and k kept in 16 bits. The head mean, a layer
// without q, k and log-sum-exp and a region larger than a storage buffer are Unavailable, for the
// CPU, the device kept; `bench --map-device gpu` times the map and says why where no GPU starts.
// Runs under xvfb-run (label xvfb): Vulkan on lavapipe, OpenGL 4.3 on llvmpipe in CI; a backend that
// cannot start is skipped with QSKIP.
#include "gpubackends.h"
#include "rungpufault.h"
#include "testpaths.h"
#include "attnviz/attentiontiles.h"
#include "attnviz/architecture.h"
#include "attnviz/gpubackend.h"
#include "attnviz/pretrained.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <map>
#include <memory>

using namespace attnviz;

Q_DECLARE_METATYPE(attnviz::GpuApi)
Q_DECLARE_METATYPE(attnviz::Pooling)

namespace {

constexpr int kTokens = 3000;

// A seeded model of SmolLM2-135M's shape, two layers, the second with a sliding window of 40 keys
// and scores soft-capped at 30.
Model *seeded()
{
    static std::unique_ptr<Model> m;
    if (!m) {
        Architecture a;
        if (!seededShape("smollm2-135m", a))
            return nullptr;
        a.layers = 2;
        a.window = {0, 40};
        a.vocabulary = 500;
        a.attentionSoftcap = 30;
        if (!seededPretrained(a, 7, m).ok())
            return nullptr;
    }
    return m.get();
}

// The trace of the seeded model at kTokens tokens (with a padded key and masked cells where `masks`),
// or of a fixture (its name; "name:16": q and k kept in 16 bits, Observe::sixteenBit), keeping q, k
// and the log-sum-exp but no weights.
const Trace<float> *traceOf(const QString &source, bool masks)
{
    static std::map<std::pair<QString, bool>, std::unique_ptr<Trace<float>>> traces;
    std::unique_ptr<Trace<float>> &kept = traces[{source, masks}];
    if (kept)
        return kept.get();
    static std::map<QString, std::unique_ptr<Model>> fixtures;
    Model *m = nullptr;
    const QString folder = source.section(QLatin1Char(':'), 0, 0);
    TraceRequest req;
    if (source == QLatin1String("seeded")) {
        m = seeded();
        for (int i = 0; i < kTokens; ++i)
            req.ids.push_back((37 * i + 11) % 500);
    } else {
        std::unique_ptr<Model> &f = fixtures[folder];
        if (!f && !openPretrained(std::string(ATTNVIZ_FIXTURE("/models/")) + folder.toStdString(), {}, f).ok())
            return nullptr;
        m = f.get();
        req.observe.sixteenBit = source.endsWith(QLatin1String(":16"));
        req.text = "The cat sat on the mat. The cat sat on the mat again, and the dog watched it.";
    }
    if (!m)
        return nullptr;
    req.observe.weights = false;
    req.observe.stages = false;
    auto tr = std::make_unique<Trace<float>>();
    if (!m->trace(req, *tr).ok())
        return nullptr;
    const int t = int(tr->tokens.size());
    if (masks) { // a second trace: the masks change the log-sum-exp
        req.ids.clear();
        for (const auto &tok : tr->tokens)
            req.ids.push_back(tok.id);
        req.text.clear();
        req.paddedKeys = {1, t / 2};
        req.maskedCells = {{t - 1, 0}, {t / 2, 2}, {t - 2, t - 3}, {t - 2, t - 7}};
        tr = std::make_unique<Trace<float>>();
        if (!m->trace(req, *tr).ok())
            return nullptr;
    }
    kept = std::move(tr);
    return kept.get();
}

} // namespace

class TestGpuMap : public QObject {
    Q_OBJECT
private slots:
    void cleanupTestCase() { m_backends.clear(); }
    void matchesCpu_data();
    void matchesCpu();
    void singleWeights_data();
    void singleWeights();
    void whatStaysOnTheCpu_data();
    void whatStaysOnTheCpu();
    void benchMapDevice();

private:
    test::GpuBackends m_backends;
};

void TestGpuMap::matchesCpu_data()
{
    QTest::addColumn<GpuApi>("api");
    QTest::addColumn<QString>("source");
    QTest::addColumn<bool>("masks");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addColumn<QVector<int>>("region"); // rowBegin, rowEnd, colBegin, colEnd, outRows, outCols
    struct Case {
        const char *name, *source;
        bool masks;
        int layer, head;
        QVector<int> region;
    };
    const int T = kTokens;
    const Case cases[] = {
        {"whole", "seeded", false, 0, 4, {0, T, 0, T, 64, 64}},
        {"whole masked", "seeded", true, 0, 8, {0, T, 0, T, 64, 64}},
        {"ragged", "seeded", false, 0, 1, {17, T - 1, 5, 2001, 333, 257}},
        {"one cell", "seeded", true, 0, 2, {0, T, 0, T, 1, 1}},
        {"window softcap", "seeded", false, 1, 7, {1000, 2500, 900, 2600, 50, 70}},
        {"window softcap masked", "seeded", true, 1, 0, {0, T, 0, T, 97, 89}},
        {"window one cell", "seeded", false, 1, 3, {0, T, 0, T, 1, 1}},
        {"past the diagonal", "seeded", false, 0, 5, {0, 500, 1000, 2000, 10, 10}},
        {"beyond the text (clamped)", "seeded", false, 0, 6, {-5, T + 10, 2990, T + 99, 4, 100}},
        {"gemma2-tiny", "gemma2-tiny", false, 0, 1, {0, 999, 0, 999, 5, 7}},
        {"gemma2-tiny local masked", "gemma2-tiny", true, 1, 0, {0, 999, 0, 999, 999, 999}},
        {"qwen2-tiny 16-bit", "qwen2-tiny:16", false, 1, 1, {0, 999, 0, 999, 3, 4}},
        {"qwen2-tiny 16-bit masked", "qwen2-tiny:16", true, 0, 0, {0, 999, 0, 999, 999, 999}},
    };
    for (GpuApi api : {GpuApi::Vulkan, GpuApi::OpenGL})
        for (const Case &c : cases)
            QTest::addRow("%s %s", toString(api), c.name)
                << api << QString::fromLatin1(c.source) << c.masks << c.layer << c.head << c.region;
}

// The GPU's map equals the CPU's, max and mean, within 1e-5 relative (zeros exactly).
void TestGpuMap::matchesCpu()
{
    QFETCH(GpuApi, api);
    QFETCH(QString, source);
    QFETCH(bool, masks);
    QFETCH(int, layer);
    QFETCH(int, head);
    QFETCH(QVector<int>, region);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    const Trace<float> *tr = traceOf(source, masks);
    QVERIFY(tr);
    QVERIFY(AttentionTiles<float>::recomputable(*tr, layer));
    QCOMPARE(tr->layers[size_t(layer)].attention.batch[0].q16.empty(), !source.endsWith(QLatin1String(":16")));
    AttentionTiles<float> tiles(*tr, layer, AttentionTiles<float>::Source::Recompute);
    QVERIFY(tiles.valid());
    for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
        const Mat<float> cpu =
            tiles.pooled(head, region[0], region[1], region[2], region[3], region[4], region[5], pool);
        Mat<float> dev;
        const Status st =
            gpu->pooledMap(*tr, layer, head, region[0], region[1], region[2], region[3], region[4], region[5], pool, dev);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(dev.rows(), cpu.rows());
        QCOMPARE(dev.cols(), cpu.cols());
        double worst = 0;
        int bad = 0, zeros = 0;
        for (Eigen::Index i = 0; i < cpu.size(); ++i) {
            const double c = cpu.data()[i], g = dev.data()[i];
            if (c == 0) {
                ++zeros;
                bad += g != 0;
                continue;
            }
            const double rel = std::abs(g - c) / std::abs(c);
            worst = std::max(worst, rel);
            bad += !(rel <= 1e-5);
        }
        QVERIFY2(bad == 0, qPrintable(QStringLiteral("%1 of %2 cells differ (%3 zeros), worst relative %4")
                                          .arg(bad)
                                          .arg(cpu.size())
                                          .arg(zeros)
                                          .arg(worst)));
        if (QTest::currentDataTag() == QByteArray(toString(api)) + " past the diagonal")
            QCOMPARE(zeros, int(cpu.size()));
    }
}

void TestGpuMap::singleWeights_data()
{
    QTest::addColumn<GpuApi>("api");
    QTest::addColumn<int>("layer");
    for (GpuApi api : {GpuApi::Vulkan, GpuApi::OpenGL})
        for (int layer : {0, 1})
            QTest::addRow("%s layer %d", toString(api), layer) << api << layer;
}

// A map with one cell per weight (max and mean alike) is the tile: each weight within 1e-5 relative,
// the masked ones 0.
void TestGpuMap::singleWeights()
{
    QFETCH(GpuApi, api);
    QFETCH(int, layer);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    const Trace<float> *tr = traceOf(QStringLiteral("seeded"), true);
    QVERIFY(tr);
    AttentionTiles<float> tiles(*tr, layer, AttentionTiles<float>::Source::Recompute);
    const int t = kTokens, r0 = t - 16, c0 = t - 48;
    for (int head : {0, 5}) {
        const Mat<float> tile = tiles.tile(head, r0, t, c0, t);
        for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
            Mat<float> dev;
            const Status st = gpu->pooledMap(*tr, layer, head, r0, t, c0, t, 16, 48, pool, dev);
            QVERIFY2(st.ok(), st.message.c_str());
            QCOMPARE(dev.rows(), 16);
            QCOMPARE(dev.cols(), 48);
            for (int i = 0; i < 16; ++i)
                for (int j = 0; j < 48; ++j) {
                    const float c = tile(i, j), g = dev(i, j);
                    if (tiles.masked(r0 + i, c0 + j) || c == 0)
                        QCOMPARE(g, 0.0f);
                    else
                        QVERIFY2(std::abs(g - c) <= 1e-5 * std::abs(c),
                                 qPrintable(QStringLiteral("(%1, %2): %3 vs %4").arg(i).arg(j).arg(g).arg(c)));
                }
        }
    }
}

void TestGpuMap::whatStaysOnTheCpu_data()
{
    QTest::addColumn<GpuApi>("api");
    for (GpuApi api : {GpuApi::Vulkan, GpuApi::OpenGL})
        QTest::addRow("%s", toString(api)) << api;
}

// The head mean, a layer that keeps no q, k and log-sum-exp and a region larger than the device's
// storage buffers are Unavailable, each with a message naming why; the output is left as it was; the
// backend keeps working.
void TestGpuMap::whatStaysOnTheCpu()
{
    QFETCH(GpuApi, api);
    GPU_BACKEND_OR_SKIP(gpu, m_backends, api);
    const Trace<float> *tr = traceOf(QStringLiteral("gemma2-tiny"), false);
    QVERIFY(tr);
    Mat<float> out = Mat<float>::Constant(2, 2, 7.0f);
    Status st = gpu->pooledMap(*tr, 0, -1, 0, 10, 0, 10, 2, 2, Pooling::Max, out);
    QCOMPARE(st.code, StatusCode::Unavailable);
    QVERIFY2(st.message.find("mean over heads") != std::string::npos, st.message.c_str());
    st = gpu->pooledMap(*tr, 99, 0, 0, 10, 0, 10, 2, 2, Pooling::Max, out);
    QCOMPARE(st.code, StatusCode::Unavailable);
    QVERIFY2(st.message.find("log-sum-exp") != std::string::npos, st.message.c_str());
    QCOMPARE(out, Mat<float>(Mat<float>::Constant(2, 2, 7.0f)));
    // a region whose q or k is larger than a storage buffer may be: Unavailable, the device kept
    const Trace<float> *longer = traceOf(QStringLiteral("seeded"), false);
    QVERIFY(longer);
    gpu->setMaxBufferBytes(64 << 10); // 64 KiB: 256 rows of a 64-wide head
    st = gpu->pooledMap(*longer, 0, 0, 0, kTokens, 0, kTokens, 8, 8, Pooling::Max, out);
    gpu->setMaxBufferBytes(0);
    QCOMPARE(st.code, StatusCode::Unavailable);
    QVERIFY2(st.message.find("do not fit one storage buffer") != std::string::npos, st.message.c_str());
    QCOMPARE(out, Mat<float>(Mat<float>::Constant(2, 2, 7.0f)));
    st = gpu->pooledMap(*tr, 0, 0, 0, 10, 0, 10, 2, 2, Pooling::Max, out);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(out.rows(), 2);
}

// `bench --map N --map-device gpu`: the map and the zoom drawn on the GPU too, their rows naming the
// device and a relative difference from the CPU's map within 1e-5; where the GPU does not start (a
// pipeline that does not build), one note on stderr saying why and the CPU's rows only.
void TestGpuMap::benchMapDevice()
{
    {
        GpuBackend probe;
        if (Status st = probe.start(); !st)
            QSKIP(st.message.c_str());
    }
    const QStringList args{QStringLiteral("bench"),       QStringLiteral("--model"),
                           QString::fromUtf8(ATTNVIZ_FIXTURE("/models/llama-tiny")),
                           QStringLiteral("--tokens"),    QStringLiteral("40"),
                           QStringLiteral("--repeat"),    QStringLiteral("1"),
                           QStringLiteral("--full-only"), QStringLiteral("--observe"),
                           QStringLiteral("tiles-attention"), QStringLiteral("--map"),
                           QStringLiteral("8"),           QStringLiteral("--map-device"),
                           QStringLiteral("gpu"),         QStringLiteral("--json")};
    QString err;
    QByteArray out;
    QVERIFY2(test::runWithGpuFault("", args, err, out), qPrintable(err));
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QStringList onGpu;
    for (const QJsonValue &v : QJsonDocument::fromJson(out).object().value(QStringLiteral("rows")).toArray())
        if (const QString what = v.toObject().value(QStringLiteral("what")).toString(); what.contains(QLatin1String(" on ")))
            onGpu << what;
    QCOMPARE(onGpu.size(), 2);
    QVERIFY2(onGpu[0].startsWith(QLatin1String("pooled map 8 x 8, one head on ")), qPrintable(onGpu[0]));
    const qsizetype at = onGpu[0].indexOf(QLatin1String("largest relative difference "));
    QVERIFY2(at > 0, qPrintable(onGpu[0]));
    bool ok = false;
    const double diff = onGpu[0].mid(at + 28).toDouble(&ok);
    QVERIFY2(ok && diff <= 1e-5, qPrintable(onGpu[0]));
    QVERIFY2(onGpu[1].startsWith(QLatin1String("zoom to 40 x 40 cells mid-text on ")), qPrintable(onGpu[1]));

    QVERIFY2(test::runWithGpuFault("shader", args, err, out), qPrintable(err));
    const QStringList lines = err.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY2(lines.size() == 1 && lines[0].startsWith(QLatin1String("attnviz bench: note: --map-device gpu: ")) &&
                 lines[0].contains(QLatin1String("the compute pipeline of attend.comp failed to build")) &&
                 lines[0].endsWith(QLatin1String("; the map is timed on the CPU only")),
             qPrintable(err));
    const QJsonArray rows = QJsonDocument::fromJson(out).object().value(QStringLiteral("rows")).toArray();
    QCOMPARE(rows.size(), 4); // the full trace, the map, the block, the zoom: the CPU's
    for (const QJsonValue &v : rows)
        QVERIFY(!v.toObject().value(QStringLiteral("what")).toString().contains(QLatin1String(" on ")));
}

QTEST_MAIN(TestGpuMap)
#include "tst_gpumap.moc"
