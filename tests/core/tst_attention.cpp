// SPDX-License-Identifier: GPL-3.0-or-later
// Properties of the core over float and double with fixed seeds: weights rows sum to 1, masked
// cells are exactly 0, the head average is the mean, every variant of the seeds is one model
// (free head width, d_out != H*d_head, cross-attention), fully-masked policies, validation errors.
#include "attnviz/attention.h"
#include "attnviz/projections.h"

#include <QtTest>

#include <random>

using namespace attnviz;

namespace {

template <typename T> Mat<T> randomMat(int r, int c, uint32_t seed, double lo = -1.0, double hi = 1.0)
{
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    Mat<T> m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i)
        m.data()[i] = T(u(g));
    return m;
}

template <typename T> AttentionInput<T> selfInput(int t, int d, int heads, uint32_t seed, bool project = true)
{
    AttentionInput<T> in;
    in.batch.push_back({randomMat<T>(t, d, seed), {}, {}, {}});
    if (project) {
        RandomProjectionSpec spec;
        spec.dModel = spec.kdim = spec.vdim = d;
        spec.numHeads = heads;
        spec.dHead = d / heads;
        spec.qkvBias = true;
        spec.seed = seed;
        randomProjections(spec, in.proj);
    }
    return in;
}

// Plain, unoptimized reference for one head, straight from the schema's formulas.
Mat<double> referenceWeights(const Mat<double> &q, const Mat<double> &k, double scale, const BoolMat &mask)
{
    Mat<double> s = scale * q * k.transpose();
    Mat<double> w(s.rows(), s.cols());
    for (int i = 0; i < s.rows(); ++i) {
        double mx = -1e300, sum = 0;
        for (int j = 0; j < s.cols(); ++j)
            if (!(mask.size() && mask(i, j)))
                mx = std::max(mx, s(i, j));
        for (int j = 0; j < s.cols(); ++j) {
            w(i, j) = mask.size() && mask(i, j) ? 0.0 : std::exp(s(i, j) - mx);
            sum += w(i, j);
        }
        w.row(i) /= sum;
    }
    return w;
}

} // namespace

class TestAttention : public QObject {
    Q_OBJECT
private slots:
    void rowsSumToOne_data();
    void rowsSumToOne();
    void maskedCellsAreExactlyZero_data();
    void maskedCellsAreExactlyZero();
    void headAverageIsMean();
    void matchesPlainReferenceFloat();
    void floatKernelsMatchDouble_data();
    void floatKernelsMatchDouble();
    void causalTopLeftWhenTqDiffersFromTk();
    void freeHeadWidth();
    void outputWidthDiffers();
    void cosineWeights();
    void scaleRules_data();
    void scaleRules();
    void fullyMaskedPolicies_data();
    void fullyMaskedPolicies();
    void sumNormalizationZeroRow();
    void renormalizeEqualsNegInf();
    void validationErrors_data();
    void validationErrors();
    void nonFiniteInLargeInputs_data();
    void nonFiniteInLargeInputs();
    void bufferReuse();
    void weightMatrixLayouts();
    void derivedStages();
};

void TestAttention::rowsSumToOne_data()
{
    QTest::addColumn<int>("norm");
    QTest::addColumn<bool>("causal");
    QTest::addColumn<bool>("f64");
    for (int f = 0; f < 2; ++f)
        for (int c = 0; c < 2; ++c) {
            QTest::addRow("softmax causal=%d %s", c, f ? "double" : "float")
                << int(Normalization::Softmax) << bool(c) << bool(f);
            QTest::addRow("sum causal=%d %s", c, f ? "double" : "float")
                << int(Normalization::Sum) << bool(c) << bool(f);
        }
}

void TestAttention::rowsSumToOne()
{
    QFETCH(int, norm);
    QFETCH(bool, causal);
    QFETCH(bool, f64);
    AttentionConfig cfg;
    cfg.numHeads = 4;
    cfg.normalization = Normalization(norm);
    cfg.causal = causal;
    auto check = [&](auto tag) {
        using T = decltype(tag);
        // positive inputs and no projection keep sum-normalization row sums away from 0
        AttentionInput<T> in = selfInput<T>(37, 32, 4, 11, false);
        in.batch[0].query = randomMat<T>(37, 32, 11, 0.0, 1.0);
        AttentionResult<T> r;
        QVERIFY(computeAttention(cfg, in, r).ok());
        QCOMPARE(int(r.batch[0].weights.size()), 4);
        const double tol = f64 ? 1e-12 : 1e-5;
        for (const auto &w : r.batch[0].weights)
            for (int i = 0; i < w.rows(); ++i)
                QVERIFY(std::abs(double(w.row(i).sum()) - 1.0) < tol);
    };
    if (f64)
        check(double{});
    else
        check(float{});
}

void TestAttention::maskedCellsAreExactlyZero_data()
{
    QTest::addColumn<int>("norm");
    QTest::addColumn<int>("method");
    QTest::addRow("softmax -inf") << int(Normalization::Softmax) << int(MaskMethod::NegInf);
    QTest::addRow("softmax renormalize") << int(Normalization::Softmax) << int(MaskMethod::MultiplyRenormalize);
    QTest::addRow("sum") << int(Normalization::Sum) << int(MaskMethod::NegInf);
    QTest::addRow("cosine") << int(Normalization::Cosine) << int(MaskMethod::NegInf);
}

void TestAttention::maskedCellsAreExactlyZero()
{
    QFETCH(int, norm);
    QFETCH(int, method);
    AttentionConfig cfg;
    cfg.numHeads = 2;
    cfg.normalization = Normalization(norm);
    cfg.maskMethod = MaskMethod(method);
    cfg.causal = true;
    AttentionInput<float> in = selfInput<float>(20, 16, 2, 3);
    in.batch[0].keyPadding.assign(20, 0);
    in.batch[0].keyPadding[3] = in.batch[0].keyPadding[7] = 1;
    // a large score gap: exp underflow must not leave tiny values in masked cells
    in.batch[0].query *= 40.0f;
    AttentionResult<float> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    const BoolMat &m = r.batch[0].mask;
    QCOMPARE(m.rows(), 20);
    int masked = 0;
    for (const auto &w : r.batch[0].weights)
        for (int i = 0; i < 20; ++i)
            for (int j = 0; j < 20; ++j)
                if (m(i, j)) {
                    ++masked;
                    QCOMPARE(w(i, j), 0.0f);
                }
    QVERIFY(masked > 2 * 190);
    QCOMPARE(int(m(5, 3)), 1); // padding
    QCOMPARE(int(m(5, 6)), 1); // causal
    QCOMPARE(int(m(5, 4)), 0);
}

void TestAttention::headAverageIsMean()
{
    AttentionConfig cfg;
    cfg.numHeads = 6;
    AttentionInput<double> in = selfInput<double>(15, 24, 6, 5);
    AttentionResult<double> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    Mat<double> mean = Mat<double>::Zero(15, 15);
    for (const auto &w : r.batch[0].weights)
        mean += w.toDense() / 6.0;
    QVERIFY((mean - r.batch[0].weightsAvg.toDense()).cwiseAbs().maxCoeff() < 1e-15);
}

void TestAttention::matchesPlainReferenceFloat()
{
    // float32 path against a float64 straightforward reference, on the same (double) inputs
    AttentionConfig cfg;
    cfg.numHeads = 4;
    cfg.causal = true;
    AttentionInput<double> in = selfInput<double>(64, 32, 4, 9);
    AttentionInput<float> inf;
    inf.batch.push_back({in.batch[0].query.cast<float>(), {}, {}, {}});
    auto lin = [](const Linear<double> &l) { return Linear<float>{l.W.cast<float>(), l.b.cast<float>()}; };
    inf.proj = {lin(in.proj.q), lin(in.proj.k), lin(in.proj.v), lin(in.proj.o)};
    AttentionResult<float> r;
    QVERIFY(computeAttention(cfg, inf, r).ok());
    const Mat<double> q = (in.batch[0].query * in.proj.q.W.transpose()).rowwise() + in.proj.q.b.transpose();
    const Mat<double> k = (in.batch[0].query * in.proj.k.W.transpose()).rowwise() + in.proj.k.b.transpose();
    for (int h = 0; h < 4; ++h) {
        const Mat<double> ref =
            referenceWeights(q.middleCols(h * 8, 8), k.middleCols(h * 8, 8), 1.0 / std::sqrt(8.0), causalMask(64, 64));
        const double d = (r.batch[0].weights[size_t(h)].cast<double>() - ref).cwiseAbs().maxCoeff();
        QVERIFY2(d < 1e-5, qPrintable(QString::number(d)));
    }
}

void TestAttention::floatKernelsMatchDouble_data()
{
    // Shapes around the float kernels' tiles (attentionkernels.cpp): 6 query rows, key panels of 64
    // (AVX-512) / 16 (AVX2) / 8 (SSE), heads a multiple of the packet or not (Eigen's products then).
    QTest::addColumn<int>("tq");
    QTest::addColumn<int>("tk");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("dHead");
    QTest::addColumn<bool>("causal");
    QTest::addColumn<double>("dropout");
    QTest::addRow("one token") << 1 << 1 << 2 << 16 << false << 0.0;
    QTest::addRow("7 x 5, d_head 16") << 7 << 5 << 3 << 16 << false << 0.0;
    QTest::addRow("13 x 65, d_head 64, causal") << 13 << 65 << 2 << 64 << true << 0.0;
    QTest::addRow("50 x 130, d_head 80") << 50 << 130 << 2 << 80 << false << 0.0;
    QTest::addRow("37 x 63, d_head 40") << 37 << 63 << 3 << 40 << true << 0.0;
    QTest::addRow("64 x 64, d_head 8") << 64 << 64 << 4 << 8 << false << 0.0;
    QTest::addRow("200 x 200, d_head 32, causal") << 200 << 200 << 2 << 32 << true << 0.0;
    QTest::addRow("30 x 70, d_head 16, dropout") << 30 << 70 << 2 << 16 << false << 0.25;
}

void TestAttention::floatKernelsMatchDouble()
{
    // Every stage of the float path against the double path on the same inputs, cross-attention so
    // t_q and t_k differ. Differences stay at float rounding (the kernels sum in another order).
    QFETCH(int, tq);
    QFETCH(int, tk);
    QFETCH(int, heads);
    QFETCH(int, dHead);
    QFETCH(bool, causal);
    QFETCH(double, dropout);
    const int d = heads * dHead;
    AttentionConfig cfg;
    cfg.numHeads = heads;
    cfg.causal = causal;
    cfg.dropout = dropout;
    cfg.dropoutSeed = 3;
    AttentionInput<double> in;
    in.batch.push_back({randomMat<double>(tq, d, 21), randomMat<double>(tk, d, 22), randomMat<double>(tk, d, 23), {}});
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = d;
    spec.numHeads = heads;
    spec.dHead = dHead;
    spec.qkvBias = true;
    spec.seed = 4;
    QVERIFY(randomProjections(spec, in.proj).ok());
    AttentionInput<float> inf;
    const auto &seq = in.batch[0];
    inf.batch.push_back({seq.query.cast<float>(), seq.key.cast<float>(), seq.value.cast<float>(), {}});
    auto lin = [](const Linear<double> &l) { return Linear<float>{l.W.cast<float>(), l.b.cast<float>()}; };
    inf.proj = {lin(in.proj.q), lin(in.proj.k), lin(in.proj.v), lin(in.proj.o)};
    AttentionResult<double> rd;
    AttentionResult<float> rf;
    QVERIFY(computeAttention(cfg, in, rd).ok());
    QVERIFY(computeAttention(cfg, inf, rf).ok());
    const auto &a = rf.batch[0];
    const auto &b = rd.batch[0];
    auto diff = [](const Mat<float> &x, const Mat<double> &y) {
        return x.rows() == y.rows() && x.cols() == y.cols() ? (x.cast<double>() - y).cwiseAbs().maxCoeff() : 1e9;
    };
    for (int h = 0; h < heads; ++h) {
        QVERIFY2(diff(a.scores[size_t(h)], b.scores[size_t(h)]) < 2e-5, qPrintable(QString("scores head %1").arg(h)));
        QVERIFY2(diff(a.weights[size_t(h)], b.weights[size_t(h)]) < 2e-6,
                 qPrintable(QString("weights head %1").arg(h)));
    }
    QVERIFY(diff(a.weightsAvg, b.weightsAvg) < 2e-6);
    QVERIFY(diff(a.context, b.context) < 2e-5);
    QVERIFY(diff(a.output, b.output) < 2e-5);
    if (causal)
        for (int i = 0; i < tq; ++i)
            for (int j = i + 1; j < tk; ++j)
                QCOMPARE(a.weights[0](i, j), 0.0f);
}

void TestAttention::causalTopLeftWhenTqDiffersFromTk()
{
    const BoolMat m = causalMask(3, 5);
    QCOMPARE(int(m(0, 0)), 0);
    QCOMPARE(int(m(0, 1)), 1);
    QCOMPARE(int(m(2, 2)), 0);
    QCOMPARE(int(m(2, 3)), 1);
    QCOMPARE(int(m(2, 4)), 1);
    QCOMPARE(int(m.cast<int>().sum()), 4 + 3 + 2);
}

// Seed 000's OneHeadSelfAttention (reduce to low_dim, then low_dim x low_dim projections, 1/sqrt(low_dim)),
// Bloem's wide heads (d_head = d_model per head) and seed 004 (input 4 -> hidden 32 -> output 8) are one model.
void TestAttention::freeHeadWidth()
{
    const int d = 12, t = 7;
    AttentionInput<double> in;
    in.batch.push_back({randomMat<double>(t, d, 1), {}, {}, {}});
    // wide heads: 3 heads of width 12 each (W_q is 36 x 12)
    in.proj.q.W = randomMat<double>(36, d, 2);
    in.proj.k.W = randomMat<double>(36, d, 3);
    in.proj.v.W = randomMat<double>(36, d, 4);
    in.proj.o.W = randomMat<double>(d, 36, 5);
    AttentionConfig cfg;
    cfg.numHeads = 3;
    cfg.dHead = 12;
    AttentionResult<double> r;
    const Status st = computeAttention(cfg, in, r);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(r.dHead, 12);
    QCOMPARE(r.batch[0].context.cols(), 36);
    QCOMPARE(r.batch[0].output.cols(), d);
    // head 1 equals a single-head attention with that head's rows of the projections
    AttentionInput<double> one;
    one.batch = in.batch;
    one.proj.q.W = in.proj.q.W.middleRows(12, 12);
    one.proj.k.W = in.proj.k.W.middleRows(12, 12);
    one.proj.v.W = in.proj.v.W.middleRows(12, 12);
    AttentionConfig c1;
    c1.numHeads = 1;
    AttentionResult<double> r1;
    QVERIFY(computeAttention(c1, one, r1).ok());
    QVERIFY((r1.batch[0].weights[0].toDense() - r.batch[0].weights[1].toDense()).cwiseAbs().maxCoeff() < 1e-14);
    QVERIFY((r1.batch[0].context - r.batch[0].context.middleCols(12, 12)).cwiseAbs().maxCoeff() < 1e-14);

    // seed 000: reduce then project == one projection by the product of the two matrices
    const Mat<double> reduce = randomMat<double>(4, d, 6), wq = randomMat<double>(4, 4, 7);
    AttentionInput<double> low;
    low.batch = in.batch;
    low.proj.q.W = wq * reduce;
    low.proj.k.W = randomMat<double>(4, 4, 8) * reduce;
    low.proj.v.W = randomMat<double>(4, 4, 9) * reduce;
    AttentionConfig cl;
    cl.numHeads = 1;
    cl.dHead = 4;
    AttentionResult<double> rl;
    QVERIFY(computeAttention(cl, low, rl).ok());
    const Mat<double> lowX = in.batch[0].query * reduce.transpose();
    const Mat<double> q = lowX * wq.transpose();
    QVERIFY((rl.batch[0].q - q).cwiseAbs().maxCoeff() < 1e-13);
    QCOMPARE(rl.scale, 0.5); // 1/sqrt(low_dim)
}

void TestAttention::outputWidthDiffers()
{
    // seed 004: input_dim 4, num_hiddens 32, 2 heads of 16, output_size 8, cross-attention 3 queries / 5 keys
    AttentionInput<float> in;
    in.batch.push_back({randomMat<float>(3, 4, 1), randomMat<float>(5, 4, 2), randomMat<float>(5, 4, 3), {}});
    RandomProjectionSpec spec;
    spec.dModel = spec.kdim = spec.vdim = 4;
    spec.numHeads = 2;
    spec.dHead = 16;
    spec.dOut = 8;
    spec.outBias = false;
    spec.seed = 0;
    QVERIFY(randomProjections(spec, in.proj).ok());
    AttentionConfig cfg;
    cfg.numHeads = 2;
    cfg.dHead = 16;
    AttentionResult<float> r;
    const Status st = computeAttention(cfg, in, r);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(r.batch[0].weights[0].rows(), 3);
    QCOMPARE(r.batch[0].weights[0].cols(), 5);
    QCOMPARE(r.batch[0].output.cols(), 8);
    QCOMPARE(r.dOut, 8);
}

void TestAttention::cosineWeights()
{
    // seed 003: weights are the pairwise cosines, diagonal 1 with identity projections
    AttentionInput<double> in = selfInput<double>(9, 10, 1, 4, false);
    AttentionConfig cfg;
    cfg.normalization = Normalization::Cosine;
    AttentionResult<double> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    const Mat<double> &x = in.batch[0].query;
    const Mat<double> &w = r.batch[0].weights[0];
    for (int i = 0; i < 9; ++i) {
        QVERIFY(std::abs(w(i, i) - 1.0) < 1e-14);
        for (int j = 0; j < 9; ++j)
            QVERIFY(std::abs(w(i, j) - x.row(i).dot(x.row(j)) / (x.row(i).norm() * x.row(j).norm())) < 1e-14);
    }
    QVERIFY((r.batch[0].output - w * x).cwiseAbs().maxCoeff() < 1e-13);
}

void TestAttention::scaleRules_data()
{
    QTest::addColumn<int>("rule");
    QTest::addColumn<double>("temperature");
    QTest::addColumn<double>("expected");
    // d_model 32, 4 heads -> d_head 8
    QTest::addRow("1/sqrt(d_head)") << int(ScaleRule::InvSqrtDHead) << 1.0 << 1.0 / std::sqrt(8.0);
    QTest::addRow("1/sqrt(d_model)") << int(ScaleRule::InvSqrtDModel) << 1.0 << 1.0 / std::sqrt(32.0);
    QTest::addRow("none") << int(ScaleRule::None) << 1.0 << 1.0;
    QTest::addRow("temperature 2") << int(ScaleRule::Temperature) << 2.0 << 1.0 / (2.0 * std::sqrt(8.0));
}

void TestAttention::scaleRules()
{
    QFETCH(int, rule);
    QFETCH(double, temperature);
    QFETCH(double, expected);
    AttentionConfig cfg;
    cfg.numHeads = 4;
    cfg.scaleRule = ScaleRule(rule);
    cfg.temperature = temperature;
    AttentionInput<double> in = selfInput<double>(5, 32, 4, 1);
    AttentionResult<double> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    QCOMPARE(r.scale, expected);
    const Mat<double> raw = r.batch[0].q.middleCols(8, 8) * r.batch[0].k.middleCols(8, 8).transpose();
    QVERIFY((r.batch[0].scores[1] - expected * raw).cwiseAbs().maxCoeff() < 1e-13);
}

void TestAttention::fullyMaskedPolicies_data()
{
    QTest::addColumn<int>("policy");
    QTest::addRow("nan") << int(FullyMaskedPolicy::NaN);
    QTest::addRow("zero") << int(FullyMaskedPolicy::Zero);
    QTest::addRow("uniform") << int(FullyMaskedPolicy::Uniform);
}

void TestAttention::fullyMaskedPolicies()
{
    QFETCH(int, policy);
    AttentionConfig cfg;
    cfg.numHeads = 2;
    cfg.fullyMasked = FullyMaskedPolicy(policy);
    AttentionInput<double> in = selfInput<double>(4, 8, 2, 2);
    in.attnMask = BoolMat::Zero(4, 4);
    in.attnMask.row(2).setOnes();
    AttentionResult<double> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    const auto &b = r.batch[0];
    QCOMPARE(b.fullyMaskedRows, std::vector<int>{2});
    for (const auto &w : b.weights) {
        QVERIFY(w.row(1).allFinite());
        if (policy == int(FullyMaskedPolicy::NaN))
            QVERIFY(w.row(2).array().isNaN().all());
        else if (policy == int(FullyMaskedPolicy::Zero))
            QCOMPARE(w.row(2).cwiseAbs().sum(), 0.0);
        else
            QVERIFY((w.row(2).array() - 0.25).abs().maxCoeff() < 1e-15);
    }
    if (policy == int(FullyMaskedPolicy::Zero)) // context row 0, output row = b_o
        QVERIFY((b.output.row(2).transpose() - in.proj.o.b).cwiseAbs().maxCoeff() < 1e-15);
    if (policy == int(FullyMaskedPolicy::NaN))
        QVERIFY(b.output.row(2).array().isNaN().all() && b.output.row(1).allFinite());
}

void TestAttention::sumNormalizationZeroRow()
{
    AttentionConfig cfg;
    cfg.normalization = Normalization::Sum;
    cfg.scaleRule = ScaleRule::None;
    AttentionInput<double> in;
    Mat<double> x(3, 2);
    x << 1, 0, 0, 1, -1, 0; // row 0 scores: 1, 0, -1 -> sum 0
    in.batch.push_back({x, {}, {}, {}});
    AttentionResult<double> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    QCOMPARE(r.batch[0].degenerateRows, std::vector<int>({0, 2}));
    QVERIFY(!r.batch[0].weights[0].row(0).allFinite());
    QVERIFY(r.batch[0].weights[0].row(1).allFinite());
}

void TestAttention::renormalizeEqualsNegInf()
{
    AttentionConfig a, b;
    a.numHeads = b.numHeads = 2;
    a.causal = b.causal = true;
    b.maskMethod = MaskMethod::MultiplyRenormalize;
    AttentionInput<double> in = selfInput<double>(12, 8, 2, 21);
    AttentionResult<double> ra, rb;
    QVERIFY(computeAttention(a, in, ra).ok());
    QVERIFY(computeAttention(b, in, rb).ok());
    QVERIFY((ra.batch[0].output - rb.batch[0].output).cwiseAbs().maxCoeff() < 1e-14);
}

void TestAttention::validationErrors_data()
{
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("field");
    QTest::addColumn<int>("code");
    QTest::addRow("heads do not divide") << 0 << "num_heads" << int(StatusCode::InvalidInput);
    QTest::addRow("NaN in query") << 1 << "inputs.query" << int(StatusCode::NonFinite);
    QTest::addRow("wrong W_q shape") << 2 << "inputs.W_q" << int(StatusCode::InvalidInput);
    QTest::addRow("empty batch") << 3 << "inputs.query" << int(StatusCode::InvalidInput);
    QTest::addRow("mask shape") << 4 << "inputs.attn_mask" << int(StatusCode::InvalidInput);
    QTest::addRow("padding length") << 5 << "inputs.key_padding_mask" << int(StatusCode::InvalidInput);
    QTest::addRow("dropout rate") << 6 << "dropout" << int(StatusCode::InvalidInput);
    QTest::addRow("temperature") << 7 << "temperature" << int(StatusCode::InvalidInput);
    QTest::addRow("value rows") << 8 << "inputs.value" << int(StatusCode::InvalidInput);
    QTest::addRow("Inf in W_o") << 9 << "inputs.W_o" << int(StatusCode::NonFinite);
}

void TestAttention::validationErrors()
{
    QFETCH(int, which);
    QFETCH(QString, field);
    QFETCH(int, code);
    AttentionConfig cfg;
    cfg.numHeads = 2;
    AttentionInput<float> in = selfInput<float>(4, 8, 2, 1);
    switch (which) {
    case 0:
        cfg.numHeads = 3;
        in.proj = {};
        break;
    case 1:
        in.batch[0].query(1, 2) = std::numeric_limits<float>::quiet_NaN();
        break;
    case 2:
        in.proj.q.W = Mat<float>::Ones(8, 5);
        break;
    case 3:
        in.batch.clear();
        break;
    case 4:
        in.attnMask = BoolMat::Zero(4, 3);
        break;
    case 5:
        in.batch[0].keyPadding = {0, 1};
        break;
    case 6:
        cfg.dropout = 1.0;
        break;
    case 7:
        cfg.scaleRule = ScaleRule::Temperature;
        cfg.temperature = 0;
        break;
    case 8:
        in.batch[0].key = in.batch[0].query;
        in.batch[0].value = randomMat<float>(3, 8, 1);
        break;
    case 9:
        in.proj.o.W(0, 0) = std::numeric_limits<float>::infinity();
        break;
    }
    AttentionResult<float> r;
    const Status st = computeAttention(cfg, in, r);
    QCOMPARE(int(st.code), code);
    QVERIFY2(QString::fromStdString(st.message).startsWith(field), st.message.c_str());
    QVERIFY(r.batch.empty()); // nothing computed
}

void TestAttention::nonFiniteInLargeInputs_data()
{
    // Inputs and weights large enough to be checked as chunks over the pool (attention.cpp's
    // FiniteFlags): the value anywhere, the first error in the documented order.
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("field");
    QTest::addRow("NaN in the last entry of W_v") << 0 << "inputs.W_v";
    QTest::addRow("Inf in b_k") << 1 << "inputs.W_k";
    QTest::addRow("NaN in the key (cross-attention)") << 2 << "inputs.key";
    QTest::addRow("NaN in the value of batch item 1") << 3 << "inputs.value";
    QTest::addRow("the query before the weights") << 4 << "inputs.query";
    QTest::addRow("W_q before W_o") << 5 << "inputs.W_q";
}

void TestAttention::nonFiniteInLargeInputs()
{
    QFETCH(int, which);
    QFETCH(QString, field);
    AttentionConfig cfg;
    cfg.numHeads = 4;
    AttentionInput<float> in = selfInput<float>(300, 256, 4, 2);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    switch (which) {
    case 0:
        in.proj.v.W(255, 255) = nan;
        break;
    case 1:
        in.proj.k.b(100) = inf;
        break;
    case 2:
        in.batch[0].key = randomMat<float>(200, 256, 3);
        in.batch[0].key(199, 0) = nan;
        break;
    case 3:
        in.batch.push_back({randomMat<float>(300, 256, 4), {}, randomMat<float>(300, 256, 5), {}});
        in.batch[1].value(150, 70) = nan;
        break;
    case 4:
        in.batch[0].query(299, 255) = inf;
        in.proj.o.W(0, 0) = nan;
        break;
    case 5:
        in.proj.q.W(3, 3) = -inf;
        in.proj.o.W(0, 0) = nan;
        break;
    }
    AttentionResult<float> r;
    const Status st = computeAttention(cfg, in, r);
    QCOMPARE(st.code, StatusCode::NonFinite);
    QVERIFY2(QString::fromStdString(st.message).startsWith(field), st.message.c_str());
    QVERIFY(r.batch.empty());
    // the same input made finite again computes
    in = selfInput<float>(300, 256, 4, 2);
    QVERIFY(computeAttention(cfg, in, r).ok());
}

// A lower WeightMatrix (a causal trace's) reads as the whole matrix with 0 above the diagonal,
// stores t (t + 1) / 2 values, keeps its rows when it grows or shrinks, and equals a whole matrix of
// the same values.
void TestAttention::weightMatrixLayouts()
{
    Mat<float> m(3, 3);
    m << 0.5f, 0, 0, 0.25f, 0.75f, 0, 0.125f, 0.375f, 0.5f;
    WeightMatrix<float> lower;
    lower.resize(3, 3, true);
    for (int i = 0; i < 3; ++i)
        lower.storedRow(i) = m.row(i).head(i + 1);
    QVERIFY(lower.lower());
    QCOMPARE(lower.storedSize(), Eigen::Index(6));
    QCOMPARE(lower.size(), Eigen::Index(9));
    QCOMPARE(lower(0, 2), 0.0f);
    QCOMPARE(lower(2, 1), 0.375f);
    QCOMPARE(lower.stored(1), Eigen::Index(2));
    QVERIFY(lower.row(1) == m.row(1));
    QVERIFY(lower.toDense() == m);
    const WeightMatrix<float> whole(m);
    QVERIFY(!whole.lower());
    QCOMPARE(whole.storedSize(), Eigen::Index(9));
    QVERIFY(lower == whole && whole == lower);
    WeightMatrix<float> other = whole;
    other.dense()(2, 0) = 0.25f;
    QVERIFY(lower != other);
    // one token more: the rows before stay where they are, the new row follows them
    lower.resize(4, 4, true);
    QCOMPARE(lower.storedSize(), Eigen::Index(10));
    QCOMPARE(lower(2, 1), 0.375f);
    QCOMPARE(lower.rowData(3), lower.data() + 6);
    lower.storedRow(3).setConstant(0.25f);
    QCOMPARE(lower(3, 3), 0.25f);
    QCOMPARE(lower(2, 3), 0.0f);
    // one fewer: the first rows kept
    lower.resize(2, 2, true);
    QCOMPARE(lower(1, 0), 0.25f);
    QCOMPARE(lower(1, 1), 0.75f);
    // another layout starts over
    lower.resize(2, 2, false);
    QVERIFY(!lower.lower());
    QCOMPARE(lower.storedSize(), Eigen::Index(4));
    lower.clear();
    QCOMPARE(lower.size(), Eigen::Index(0));
}

void TestAttention::bufferReuse()
{
    // Same sizes, second call: the weight buffers keep their storage (no fresh t^2 allocation per keystroke).
    AttentionConfig cfg;
    cfg.numHeads = 4;
    AttentionInput<float> in = selfInput<float>(64, 32, 4, 1);
    AttentionResult<float> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    const float *w0 = r.batch[0].weights[0].data();
    const float *s0 = r.batch[0].scores[0].data();
    in.batch[0].query(0, 0) += 0.5f;
    QVERIFY(computeAttention(cfg, in, r).ok());
    QCOMPARE(r.batch[0].weights[0].data(), w0);
    QCOMPARE(r.batch[0].scores[0].data(), s0);
}

void TestAttention::derivedStages()
{
    AttentionConfig cfg;
    cfg.numHeads = 2;
    cfg.causal = true;
    AttentionInput<double> in = selfInput<double>(5, 8, 2, 3);
    AttentionResult<double> r;
    QVERIFY(computeAttention(cfg, in, r).ok());
    const Mat<double> raw = rawScores(r, 0, 1);
    QVERIFY((raw * r.scale - r.batch[0].scores[1]).cwiseAbs().maxCoeff() < 1e-14);
    const Mat<double> masked = maskedScores(cfg, r, 0, 1);
    QVERIFY(std::isinf(masked(0, 1)) && masked(0, 1) < 0);
    QCOMPARE(masked(1, 0), r.batch[0].scores[1](1, 0));
}

QTEST_GUILESS_MAIN(TestAttention)
#include "tst_attention.moc"
