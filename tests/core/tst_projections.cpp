// SPDX-License-Identifier: GPL-3.0-or-later
// Seeded projections and dropout reproduce PyTorch bit for bit: against weights drawn by torch
// itself (fixtures/torch/rng_torch.json, made by make_fixtures.py) and against the numbers the
// seed notebooks print (seed 001: torch.manual_seed(123) / (789) examples, its dropout mask).
#include "testpaths.h"
#include "attnviz/attention.h"
#include "attnviz/projections.h"
#include "attnviz/torchrng.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace attnviz;

namespace {

Mat<double> journey()
{
    Mat<double> x(6, 3);
    x << 0.43, 0.15, 0.89, 0.55, 0.87, 0.66, 0.57, 0.85, 0.64, 0.22, 0.58, 0.33, 0.77, 0.25, 0.10, 0.05, 0.80, 0.55;
    return x;
}

Mat<double> toMat(const QJsonValue &v)
{
    const QJsonArray rows = v.toArray();
    Mat<double> m(rows.size(), rows.isEmpty() ? 0 : rows[0].toArray().size());
    for (int i = 0; i < rows.size(); ++i)
        for (int j = 0; j < m.cols(); ++j)
            m(i, j) = rows[i].toArray()[j].toDouble();
    return m;
}

QJsonObject rngFixture()
{
    QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/torch/rng_torch.json")));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// Printed to 4 decimals in the notebook: compare at half a unit of the last place.
void compare4dp(const Mat<double> &got, const Mat<double> &printed, const char *what)
{
    QCOMPARE(got.rows(), printed.rows());
    QCOMPARE(got.cols(), printed.cols());
    const double d = (got - printed).cwiseAbs().maxCoeff();
    QVERIFY2(d <= 0.5e-4 + 1e-12, qPrintable(QStringLiteral("%1: max |diff| %2").arg(QLatin1String(what)).arg(d)));
}

AttentionResult<double> run(const Projections<double> &proj, int heads, bool causal, double dropout = 0.0,
                            uint64_t dropoutSeed = 0)
{
    AttentionInput<double> in;
    in.batch.push_back({journey(), {}, {}, {}});
    in.proj = proj;
    AttentionConfig cfg;
    cfg.numHeads = heads;
    cfg.dHead = proj.q.isIdentity() ? 0 : int(proj.q.W.rows()) / heads;
    cfg.scaleRule = ScaleRule::InvSqrtDHead;
    cfg.causal = causal;
    cfg.dropout = dropout;
    cfg.dropoutSeed = dropoutSeed;
    AttentionResult<double> r;
    const Status st = computeAttention(cfg, in, r);
    if (!st.ok())
        qWarning("%s", st.message.c_str());
    return r;
}

} // namespace

class TestProjections : public QObject {
    Q_OBJECT
private slots:
    void torchRandMatchesKnownValues();
    void drawsMatchTorch_data();
    void drawsMatchTorch();
    void seed001SelfAttentionV1();
    void seed001SelfAttentionV2Causal();
    void seed001MultiHeadWrapper();
    void seed001MultiHeadAttention();
    void seed001DropoutMask();
    void dropoutTorchCpuStream();
    void invalidSpecIsRefused();
};

void TestProjections::torchRandMatchesKnownValues()
{
    // torch.manual_seed(123); torch.rand(3, 2) -> 0.2961 0.5166 0.2517 0.6886 0.0740 0.8665
    TorchGenerator g(123);
    const float expected[] = {0.2961f, 0.5166f, 0.2517f, 0.6886f, 0.0740f, 0.8665f};
    for (float e : expected)
        QVERIFY(std::abs(g.uniformFloat(0.0f, 1.0f) - e) < 0.5e-4f);
}

void TestProjections::drawsMatchTorch_data()
{
    QTest::addColumn<QString>("key");
    QTest::addColumn<int>("scheme");
    QTest::addColumn<int>("order");
    QTest::addColumn<int>("seed");
    QTest::addColumn<int>("dModel");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("dHead");
    QTest::addColumn<bool>("outProj");
    QTest::addColumn<bool>("qkvBias");
    QTest::addRow("uniform01 seed 123") << "uniform01_seed123_3x2" << int(InitScheme::Uniform01) << int(DrawOrder::Fused)
                                        << 123 << 3 << 1 << 2 << false << false;
    QTest::addRow("linear seed 789") << "linear_seed789_3to2_nobias" << int(InitScheme::TorchLinear)
                                     << int(DrawOrder::Fused) << 789 << 3 << 1 << 2 << false << false;
    QTest::addRow("linear mha seed 123") << "linear_seed123_mha_3to2" << int(InitScheme::TorchLinear)
                                         << int(DrawOrder::Fused) << 123 << 3 << 2 << 1 << true << false;
    QTest::addRow("wrapper per head seed 123") << "linear_seed123_wrapper_2heads_3to2" << int(InitScheme::TorchLinear)
                                               << int(DrawOrder::PerHead) << 123 << 3 << 2 << 2 << false << false;
    QTest::addRow("xavier mha seed 1234") << "mha_xavier_seed1234_d4_h1_nobias" << int(InitScheme::XavierUniform)
                                          << int(DrawOrder::Fused) << 1234 << 4 << 1 << 4 << true << false;
    QTest::addRow("xavier mha seed 5 bias") << "mha_xavier_seed5_d8_h2_bias" << int(InitScheme::XavierUniform)
                                            << int(DrawOrder::Fused) << 5 << 8 << 2 << 4 << true << true;
}

void TestProjections::drawsMatchTorch()
{
    QFETCH(QString, key);
    QFETCH(int, scheme);
    QFETCH(int, order);
    QFETCH(int, seed);
    QFETCH(int, dModel);
    QFETCH(int, heads);
    QFETCH(int, dHead);
    QFETCH(bool, outProj);
    QFETCH(bool, qkvBias);
    const QJsonObject fx = rngFixture().value(key).toObject();
    QVERIFY2(!fx.isEmpty(), qPrintable(key));
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = dModel;
    spec.numHeads = heads;
    spec.dHead = dHead;
    spec.outProj = outProj;
    spec.qkvBias = qkvBias;
    spec.outBias = scheme == int(InitScheme::XavierUniform) ? qkvBias : true;
    spec.scheme = InitScheme(scheme);
    spec.order = DrawOrder(order);
    spec.seed = uint64_t(seed);
    Projections<double> p;
    QVERIFY(randomProjections(spec, p).ok());
    // torch draws float32: exact equality after the cast.
    if (fx.contains(QStringLiteral("W_query"))) { // torch.rand(d_in, d_out), used as x @ W
        QCOMPARE(Mat<double>(p.q.W.transpose()), toMat(fx[QStringLiteral("W_query")]));
        QCOMPARE(Mat<double>(p.k.W.transpose()), toMat(fx[QStringLiteral("W_key")]));
        QCOMPARE(Mat<double>(p.v.W.transpose()), toMat(fx[QStringLiteral("W_value")]));
        return;
    }
    if (fx.contains(QStringLiteral("in_proj_weight"))) {
        const Mat<double> in = toMat(fx[QStringLiteral("in_proj_weight")]);
        const int inner = heads * dHead;
        QCOMPARE(p.q.W, Mat<double>(in.topRows(inner)));
        QCOMPARE(p.k.W, Mat<double>(in.middleRows(inner, inner)));
        QCOMPARE(p.v.W, Mat<double>(in.bottomRows(inner)));
        if (qkvBias)
            QCOMPARE(p.q.b.norm(), 0.0);
    } else {
        QCOMPARE(p.q.W, toMat(fx[QStringLiteral("W_q")]));
        QCOMPARE(p.k.W, toMat(fx[QStringLiteral("W_k")]));
        QCOMPARE(p.v.W, toMat(fx[QStringLiteral("W_v")]));
    }
    if (outProj)
        QCOMPARE(p.o.W, toMat(fx[QStringLiteral("W_o")]));
    else
        QVERIFY(p.o.isIdentity());
    if (fx.contains(QStringLiteral("b_o"))) {
        const QJsonArray b = fx[QStringLiteral("b_o")].toArray();
        QCOMPARE(int(p.o.b.size()), int(b.size()));
        for (int i = 0; i < b.size(); ++i)
            QCOMPARE(p.o.b[i], b[i].toDouble());
    }
}

// SelfAttention_v1(3, 2) after torch.manual_seed(123): W = torch.rand(d_in, d_out), softmax(qk^T/sqrt(2)).
void TestProjections::seed001SelfAttentionV1()
{
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = 3;
    spec.numHeads = 1;
    spec.dHead = 2;
    spec.outProj = false;
    spec.scheme = InitScheme::Uniform01;
    spec.seed = 123;
    Projections<double> p;
    QVERIFY(randomProjections(spec, p).ok());
    Mat<double> printed(6, 2);
    printed << 0.2996, 0.8053, 0.3061, 0.8210, 0.3058, 0.8203, 0.2948, 0.7939, 0.2927, 0.7891, 0.2990, 0.8040;
    compare4dp(run(p, 1, false).batch[0].output, printed, "SelfAttention_v1 context");
}

// SelfAttention_v2(3, 2) after torch.manual_seed(789): nn.Linear weights; softmax weights, then causal.
void TestProjections::seed001SelfAttentionV2Causal()
{
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = 3;
    spec.numHeads = 1;
    spec.dHead = 2;
    spec.outProj = false;
    spec.scheme = InitScheme::TorchLinear;
    spec.seed = 789;
    Projections<double> p;
    QVERIFY(randomProjections(spec, p).ok());
    Mat<double> weights(6, 6);
    weights << 0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510, 0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477, 0.2036,
        0.1659, 0.1662, 0.1498, 0.1664, 0.1480, 0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564, 0.1830, 0.1669, 0.1670,
        0.1588, 0.1658, 0.1585, 0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529;
    const auto plain = run(p, 1, false);
    compare4dp(plain.batch[0].weights[0], weights, "v2 softmax weights");
    // masked raw scores (queries @ keys.T with -inf above the diagonal), printed row by row
    Mat<double> rawLower(6, 6);
    rawLower << 0.2899, 0, 0, 0, 0, 0, 0.4656, 0.1723, 0, 0, 0, 0, 0.4594, 0.1703, 0.1731, 0, 0, 0, 0.2642, 0.1024,
        0.1036, 0.0186, 0, 0, 0.2183, 0.0874, 0.0882, 0.0177, 0.0786, 0, 0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078;
    const auto causal = run(p, 1, true);
    Mat<double> raw = rawScores(causal, 0, 0);
    compare4dp(Mat<double>(raw.triangularView<Eigen::Lower>()), rawLower, "v2 masked raw scores");
    Mat<double> cw(6, 6);
    cw << 1, 0, 0, 0, 0, 0, 0.5517, 0.4483, 0, 0, 0, 0, 0.3800, 0.3097, 0.3103, 0, 0, 0, 0.2758, 0.2460, 0.2462, 0.2319,
        0, 0, 0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0, 0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529;
    compare4dp(causal.batch[0].weights[0], cw, "v2 causal weights");
    QCOMPARE(causal.batch[0].weights[0](0, 5), 0.0); // masked cells are exactly zero
}

// MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2) after torch.manual_seed(123): heads drawn one after
// another (q, k, v each), causal, 1/sqrt(2), heads concatenated, no output projection.
void TestProjections::seed001MultiHeadWrapper()
{
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = 3;
    spec.numHeads = 2;
    spec.dHead = 2;
    spec.outProj = false;
    spec.scheme = InitScheme::TorchLinear;
    spec.order = DrawOrder::PerHead;
    spec.seed = 123;
    Projections<double> p;
    QVERIFY(randomProjections(spec, p).ok());
    Mat<double> printed(6, 4);
    printed << -0.4519, 0.2216, 0.4772, 0.1063, -0.5874, 0.0058, 0.5891, 0.3257, -0.6300, -0.0632, 0.6202, 0.3860,
        -0.5675, -0.0843, 0.5478, 0.3589, -0.5526, -0.0981, 0.5321, 0.3428, -0.5299, -0.1081, 0.5077, 0.3493;
    compare4dp(run(p, 2, true).batch[0].output, printed, "wrapper context");
}

// MultiHeadAttention(3, 2, 6, 0.0, num_heads=2) after torch.manual_seed(123): fused q, k, v, out_proj with bias.
void TestProjections::seed001MultiHeadAttention()
{
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = 3;
    spec.numHeads = 2;
    spec.dHead = 1;
    spec.outProj = true;
    spec.outBias = true;
    spec.scheme = InitScheme::TorchLinear;
    spec.seed = 123;
    Projections<double> p;
    QVERIFY(randomProjections(spec, p).ok());
    Mat<double> printed(6, 2);
    printed << 0.3190, 0.4858, 0.2943, 0.3897, 0.2856, 0.3593, 0.2693, 0.3873, 0.2639, 0.3928, 0.2575, 0.4028;
    compare4dp(run(p, 2, true).batch[0].output, printed, "MultiHeadAttention output");
}

// torch.manual_seed(123); nn.Dropout(0.5)(attn_weights): the causal v2 weights with the seed's printed mask.
void TestProjections::seed001DropoutMask()
{
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = 3;
    spec.numHeads = 1;
    spec.dHead = 2;
    spec.outProj = false;
    spec.seed = 789;
    Projections<double> p;
    QVERIFY(randomProjections(spec, p).ok());
    const auto r = run(p, 1, true, 0.5, 123);
    Mat<double> printed(6, 6);
    printed << 2.0, 0, 0, 0, 0, 0, 0, 0.8966, 0, 0, 0, 0, 0, 0, 0.6206, 0, 0, 0, 0.5517, 0.4921, 0, 0, 0, 0, 0.4350, 0, 0,
        0, 0, 0, 0, 0.3327, 0, 0, 0, 0;
    compare4dp(r.batch[0].weights[0], printed, "dropout(attn_weights)");
    QCOMPARE(int(r.batch[0].weightsPreDropout.size()), 1);
    QCOMPARE(r.batch[0].weightsPreDropout[0](0, 0), 1.0);
}

// Debian's torch (no MKL) draws dropout from the Mersenne Twister: nn.Dropout(0.5)(ones(6, 6)) after seed 123.
void TestProjections::dropoutTorchCpuStream()
{
    const Mat<double> expected = toMat(rngFixture().value(QStringLiteral("dropout_torch_cpu_seed123_p05_6x6")));
    QCOMPARE(expected.rows(), 6);
    AttentionInput<double> in;
    in.batch.push_back({Mat<double>::Zero(6, 2), {}, {}, {}}); // all scores equal: weights 1/6
    AttentionConfig cfg;
    cfg.dropout = 0.5;
    cfg.dropoutSeed = 123;
    cfg.dropoutStream = DropoutStream::TorchCpu;
    AttentionResult<double> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    const Mat<double> scaledBack = r.batch[0].weights[0].toDense() * 6.0; // ones * mask / (1-p) == weights * 6
    QVERIFY((scaledBack - expected).cwiseAbs().maxCoeff() < 1e-12);
}

void TestProjections::invalidSpecIsRefused()
{
    RandomProjectionSpec spec;
    Projections<float> p;
    QCOMPARE(randomProjections(spec, p).code, StatusCode::InvalidInput);
    spec.dModel = spec.kdim = spec.vdim = 4;
    spec.numHeads = 2;
    spec.dHead = 2;
    spec.outProj = false;
    spec.dOut = 3;
    QCOMPARE(randomProjections(spec, p).code, StatusCode::InvalidInput);
}

QTEST_GUILESS_MAIN(TestProjections)
#include "tst_projections.moc"
