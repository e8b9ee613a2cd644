// SPDX-License-Identifier: GPL-3.0-or-later
// Transformer stacks (seed 002) against PyTorch float64 forward passes at every layer
// (fixtures/torch/stack_*.{safetensors,json}, made by make_stack_fixtures.py), and the safetensors
// reader's refusals: missing tensors, wrong shapes or dtypes, truncated files, lying headers.
#include "testpaths.h"
#include "attnviz/transformer.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace attnviz;

namespace {

QByteArray readFixture(const QString &name)
{
    QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/torch/")) + name);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

Mat<double> toMat(const QJsonArray &rows)
{
    Mat<double> m(rows.size(), rows.isEmpty() ? 0 : rows[0].toArray().size());
    for (int i = 0; i < rows.size(); ++i)
        for (int j = 0; j < m.cols(); ++j)
            m(i, j) = rows[i].toArray()[j].toDouble();
    return m;
}

std::string bytes(const QByteArray &b) { return std::string(b.constData(), size_t(b.size())); }

// Rewrites a safetensors file's JSON header (keeping the data block).
std::string withHeader(const std::string &file, const std::function<void(QJsonObject &)> &edit)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(file[size_t(i)]);
    QJsonObject head = QJsonDocument::fromJson(QByteArray::fromStdString(file.substr(8, n))).object();
    edit(head);
    const QByteArray h = QJsonDocument(head).toJson(QJsonDocument::Compact);
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[size_t(i)] = char((uint64_t(h.size()) >> (8 * i)) & 0xFF);
    return out + bytes(h) + file.substr(8 + n);
}

} // namespace

class TestTransformer : public QObject {
    Q_OBJECT
private slots:
    void matchesPyTorch_data();
    void matchesPyTorch();
    void badFiles_data();
    void badFiles();
    void sinusoidal();
    void seededStackAndClassifier();
    void depthBeyondWeights();
};

void TestTransformer::matchesPyTorch_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("f64");
    for (const char *n : {"postnorm_relu_sinusoidal", "gpt2style_prenorm_gelu_learned_causal"}) {
        QTest::addRow("%s/float64", n) << QString::fromLatin1(n) << true;
        QTest::addRow("%s/float32", n) << QString::fromLatin1(n) << false;
    }
}

void TestTransformer::matchesPyTorch()
{
    QFETCH(QString, name);
    QFETCH(bool, f64);
    const QJsonObject fx = QJsonDocument::fromJson(readFixture(QStringLiteral("stack_%1.json").arg(name))).object();
    QVERIFY(!fx.isEmpty());
    SafetensorsFile file;
    const Status rs = parseSafetensors(bytes(readFixture(QStringLiteral("stack_%1.safetensors").arg(name))), "fixture", file);
    QVERIFY2(rs.ok(), rs.message.c_str());
    const QJsonObject c = fx[QStringLiteral("config")].toObject();
    StackConfig cfg;
    cfg.depth = c[QStringLiteral("depth")].toInt();
    cfg.attention.numHeads = c[QStringLiteral("num_heads")].toInt();
    cfg.attention.causal = c[QStringLiteral("causal")].toBool();
    cfg.norm = c[QStringLiteral("norm")].toString() == QLatin1String("pre") ? NormPlacement::Pre : NormPlacement::Post;
    cfg.activation = c[QStringLiteral("activation")].toString() == QLatin1String("relu") ? Activation::Relu : Activation::GeluTanh;
    cfg.positions = c[QStringLiteral("positions")].toString() == QLatin1String("learned") ? PositionEncoding::Learned
                                                                                          : PositionEncoding::Sinusoidal;
    cfg.finalNorm = c[QStringLiteral("final_norm")].toBool();
    const Mat<double> tokens = toMat(fx[QStringLiteral("tokens")].toArray());
    const QJsonArray layers = fx[QStringLiteral("expected")].toObject()[QStringLiteral("layers")].toArray();
    QCOMPARE(layers.size(), 2);
    auto check = [&](auto tag, double tol) {
        using T = decltype(tag);
        StackWeights<T> w;
        int depth = 0;
        const Status st = stackWeightsFromGpt2(file, w, depth);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(depth, 2);
        StackResult<T> r;
        const Status cs = computeStack(cfg, w, Mat<T>(tokens.cast<T>()), r);
        QVERIFY2(cs.ok(), cs.message.c_str());
        for (int l = 0; l < 2; ++l) {
            const QJsonObject e = layers[l].toObject();
            const QJsonArray wh = e[QStringLiteral("weights")].toArray();
            QCOMPARE(int(r.layers[size_t(l)].attention.batch[0].weights.size()), 4);
            for (int h = 0; h < 4; ++h) {
                const double d = (r.layers[size_t(l)].attention.batch[0].weights[size_t(h)].template cast<double>() -
                                  toMat(wh[h].toArray())).cwiseAbs().maxCoeff();
                QVERIFY2(d < tol, qPrintable(QStringLiteral("layer %1 head %2 weights: %3").arg(l).arg(h).arg(d)));
            }
            const double da = (r.layers[size_t(l)].afterAttention.template cast<double>() -
                               toMat(e[QStringLiteral("after_attention")].toArray())).cwiseAbs().maxCoeff();
            const double dout = (r.layers[size_t(l)].output.template cast<double>() -
                                 toMat(e[QStringLiteral("output")].toArray())).cwiseAbs().maxCoeff();
            QVERIFY2(da < tol && dout < tol, qPrintable(QStringLiteral("layer %1: %2 %3").arg(l).arg(da).arg(dout)));
        }
        const double df = (r.final.template cast<double>() -
                           toMat(fx[QStringLiteral("expected")].toObject()[QStringLiteral("final")].toArray()))
                              .cwiseAbs().maxCoeff();
        QVERIFY2(df < tol, qPrintable(QStringLiteral("final: %1").arg(df)));
    };
    if (f64)
        check(double{}, 1e-10);
    else
        check(float{}, 1e-4);
}

void TestTransformer::badFiles_data()
{
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("message");
    QTest::addRow("missing tensor") << 0 << "h.1.mlp.c_fc.weight: missing from the file";
    QTest::addRow("wrong shape") << 1 << "h.0.attn.c_proj.weight: data_offsets span";
    QTest::addRow("wrong dtype") << 2 << "h.0.ln_1.bias: dtype I32 is not supported";
    QTest::addRow("truncated") << 3 << "lie outside the";
    QTest::addRow("lying offsets") << 4 << "h.0.ln_2.weight: data_offsets [";
    QTest::addRow("header length") << 5 << "header length";
    QTest::addRow("not json") << 6 << "malformed JSON header";
    QTest::addRow("shape consistent but wrong") << 7 << "h.0.attn.c_proj.weight: shape (64, 4), expected (16, 16)";
    QTest::addRow("empty") << 8 << "no header length";
}

void TestTransformer::badFiles()
{
    QFETCH(int, which);
    QFETCH(QString, message);
    const std::string good = bytes(readFixture(QStringLiteral("stack_postnorm_relu_sinusoidal.safetensors")));
    std::string bad;
    switch (which) {
    case 0: // renamed, so that its bytes stay covered (offsets must tile the data block)
        bad = withHeader(good, [](QJsonObject &h) { h.insert(QStringLiteral("unused"), h.take(QStringLiteral("h.1.mlp.c_fc.weight"))); });
        break;
    case 1:
        bad = withHeader(good, [](QJsonObject &h) {
            QJsonObject e = h[QStringLiteral("h.0.attn.c_proj.weight")].toObject();
            e[QStringLiteral("shape")] = QJsonArray{16, 15};
            h[QStringLiteral("h.0.attn.c_proj.weight")] = e;
        });
        break;
    case 2:
        bad = withHeader(good, [](QJsonObject &h) {
            QJsonObject e = h[QStringLiteral("h.0.ln_1.bias")].toObject();
            e[QStringLiteral("dtype")] = QStringLiteral("I32");
            h[QStringLiteral("h.0.ln_1.bias")] = e;
        });
        break;
    case 3: bad = good.substr(0, good.size() - 100); break;
    case 4:
        bad = withHeader(good, [](QJsonObject &h) {
            QJsonObject e = h[QStringLiteral("h.0.ln_2.weight")].toObject();
            e[QStringLiteral("data_offsets")] = QJsonArray{8, 4};
            h[QStringLiteral("h.0.ln_2.weight")] = e;
        });
        break;
    case 5: bad = good; bad[6] = char(0x7F); break;
    case 6: bad = good; bad[8] = '#'; break;
    case 7:
        bad = withHeader(good, [](QJsonObject &h) {
            QJsonObject e = h[QStringLiteral("h.0.attn.c_proj.weight")].toObject();
            e[QStringLiteral("shape")] = QJsonArray{64, 4};
            h[QStringLiteral("h.0.attn.c_proj.weight")] = e;
        });
        break;
    case 8: bad = std::string(); break;
    }
    SafetensorsFile file;
    file.metadata["kept"] = "yes";
    StackWeights<double> w;
    w.blocks.resize(3); // current state, must survive
    int depth = -1;
    Status st = parseSafetensors(bad, "model.safetensors", file);
    if (st.ok()) {
        st = stackWeightsFromGpt2(file, w, depth);
        QCOMPARE(depth, -1);
    } else {
        QCOMPARE(file.metadata.at("kept"), std::string("yes"));
    }
    QVERIFY(!st.ok());
    QVERIFY2(QString::fromStdString(st.message).contains(message), st.message.c_str());
    QCOMPARE(int(w.blocks.size()), 3);
}

void TestTransformer::sinusoidal()
{
    const Mat<double> p = sinusoidalPositions(4, 6);
    QCOMPARE(p(0, 0), 0.0);
    QCOMPARE(p(0, 1), 1.0);
    QCOMPARE(p(1, 0), std::sin(1.0));
    QCOMPARE(p(1, 1), std::cos(1.0));
    QCOMPARE(p(3, 4), std::sin(3.0 / std::pow(10000.0, 4.0 / 6.0)));
}

void TestTransformer::seededStackAndClassifier()
{
    StackWeights<double> a, b;
    QVERIFY(seededStackWeights(12, 3, 7, PositionEncoding::Learned, 16, a).ok());
    QVERIFY(seededStackWeights(12, 3, 7, PositionEncoding::Learned, 16, b).ok());
    QCOMPARE(a.blocks[2].ff2.W, b.blocks[2].ff2.W);
    QCOMPARE(a.positions, b.positions);
    QCOMPARE(a.blocks[0].ff1.W.rows(), 48);
    a.classifier.W = Mat<double>::Random(3, 12);
    a.classifier.b = Vec<double>::Random(3);
    StackConfig cfg;
    cfg.depth = 3;
    cfg.attention.numHeads = 3;
    cfg.positions = PositionEncoding::Learned;
    StackResult<double> r;
    const Status st = computeStack(cfg, a, Mat<double>(Mat<double>::Random(5, 12)), r);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(int(r.layers.size()), 3);
    QCOMPARE(r.layers[1].attention.batch[0].weights.size(), size_t(3));
    QVERIFY(std::abs(r.logProbs.array().exp().sum() - 1.0) < 1e-12);
    QVERIFY((r.pooled - r.final.colwise().mean().transpose()).norm() < 1e-14);
    // post-norm: every layer's output rows have mean 0 and variance 1 (LayerNorm ones/zeros)
    QVERIFY(std::abs(r.layers[2].output.row(4).mean()) < 1e-12);
}

void TestTransformer::depthBeyondWeights()
{
    StackWeights<float> w;
    QVERIFY(seededStackWeights(8, 2, 1, PositionEncoding::None, 0, w).ok());
    StackConfig cfg;
    cfg.depth = 3;
    cfg.attention.numHeads = 2;
    StackResult<float> r;
    const Status st = computeStack(cfg, w, Mat<float>(Mat<float>::Ones(4, 8)), r);
    QCOMPARE(st.code, StatusCode::InvalidInput);
    QVERIFY(st.message.find("3 layers asked, 2 in the weights") != std::string::npos);
    cfg.depth = 2;
    cfg.positions = PositionEncoding::Learned;
    QCOMPARE(computeStack(cfg, w, Mat<float>(Mat<float>::Ones(4, 8)), r).code, StatusCode::InvalidInput);
}

QTEST_GUILESS_MAIN(TestTransformer)
#include "tst_transformer.moc"
