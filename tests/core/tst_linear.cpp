// SPDX-License-Identifier: GPL-3.0-or-later
// Dense layers (attnviz/linear.h): applyLinear(s) in float against the same layer in double, over the
// tile edges of both paths (attentionkernels.h's linear kernel: 6-row tiles, panels of 64 / 16 / 8
// output columns by ISA, row tiles of up to 512; Eigen's GEMM for input widths off the packet), with
// and without bias, several layers in one call, identity layers.
#include "attnviz/linear.h"

#include <QtTest>

#include <random>

using namespace attnviz;

namespace {

Mat<double> randomMat(int r, int c, uint32_t seed)
{
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    Mat<double> m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i)
        m.data()[i] = u(g);
    return m;
}

Linear<float> toFloat(const Linear<double> &l)
{
    return {l.W.cast<float>(), l.b.cast<float>()};
}

// Largest |float - double|: float rounding over `in` products of terms <= 1 stays near in * 6e-8.
double error(const Mat<float> &f, const Mat<double> &d)
{
    if (f.rows() != d.rows() || f.cols() != d.cols())
        return 1e9;
    return (f.cast<double>() - d).cwiseAbs().maxCoeff();
}

} // namespace

class TestLinear : public QObject {
    Q_OBJECT
private slots:
    void floatMatchesDouble_data();
    void floatMatchesDouble();
    void severalLayersInOneCall();
    void identityLayer();
};

void TestLinear::floatMatchesDouble_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<bool>("bias");
    QTest::addRow("one row, one output") << 1 << 16 << 1 << true;
    QTest::addRow("5 rows, 15 outputs") << 5 << 32 << 15 << true;
    QTest::addRow("6 rows, 64 outputs, no bias") << 6 << 64 << 64 << false;
    QTest::addRow("7 rows, 65 outputs") << 7 << 48 << 65 << true;
    QTest::addRow("13 rows, 200 outputs") << 13 << 256 << 200 << true;
    QTest::addRow("in 40 (Eigen with AVX-512)") << 11 << 40 << 70 << true;
    QTest::addRow("in 24 (Eigen but SSE)") << 9 << 24 << 33 << false;
    QTest::addRow("in 20 (Eigen everywhere)") << 9 << 20 << 33 << true;
    QTest::addRow("128 x 768 -> 768") << 128 << 768 << 768 << true;
    QTest::addRow("130 rows, 3072 -> 100") << 130 << 3072 << 100 << true;
    QTest::addRow("600 rows: two row tiles") << 600 << 64 << 130 << true;
    QTest::addRow("1031 rows, 3 row tiles") << 1031 << 16 << 17 << false;
}

void TestLinear::floatMatchesDouble()
{
    QFETCH(int, rows);
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(bool, bias);
    const Mat<double> x = randomMat(rows, in, 1);
    Linear<double> ld{randomMat(out, in, 2), bias ? Vec<double>(randomMat(out, 1, 3).col(0)) : Vec<double>()};
    Mat<double> yd;
    applyLinear(x, ld, yd);
    // the double path is Eigen's product: exactly x W^T + b
    Mat<double> ref = x * ld.W.transpose();
    if (bias)
        ref.rowwise() += ld.b.transpose();
    QVERIFY(error(yd.cast<float>(), ref) < 1e-6 * in);
    Mat<float> yf(3, 3); // a buffer of another size is resized
    applyLinear(Mat<float>(x.cast<float>()), toFloat(ld), yf);
    QCOMPARE(yf.rows(), Eigen::Index(rows));
    QCOMPARE(yf.cols(), Eigen::Index(out));
    const double e = error(yf, yd);
    QVERIFY2(e < 2e-7 * in + 1e-6, qPrintable(QString::number(e)));
}

void TestLinear::severalLayersInOneCall()
{
    // q, k, v of one text in one parallel loop, plus a layer of another width and input
    const Mat<double> x = randomMat(37, 64, 4), x2 = randomMat(37, 20, 5);
    Linear<double> q{randomMat(64, 64, 6), randomMat(64, 1, 7).col(0)}, k{randomMat(64, 64, 8), {}},
        v{randomMat(96, 64, 9), randomMat(96, 1, 10).col(0)}, w{randomMat(48, 20, 11), randomMat(48, 1, 12).col(0)};
    const Mat<float> xf = x.cast<float>(), x2f = x2.cast<float>();
    const Linear<float> qf = toFloat(q), kf = toFloat(k), vf = toFloat(v), wf = toFloat(w);
    Mat<float> oq, ok, ov, ow;
    applyLinears<float>({{&xf, &qf, &oq}, {&xf, &kf, &ok}, {&xf, &vf, &ov}, {&x2f, &wf, &ow}});
    for (auto [o, l, in] :
         {std::tuple{&oq, &q, &x}, std::tuple{&ok, &k, &x}, std::tuple{&ov, &v, &x}, std::tuple{&ow, &w, &x2}}) {
        Mat<double> ref = *in * l->W.transpose();
        if (l->hasBias())
            ref.rowwise() += l->b.transpose();
        QVERIFY2(error(*o, ref) < 2e-5, qPrintable(QString::number(error(*o, ref))));
    }
}

void TestLinear::identityLayer()
{
    const Mat<float> x = randomMat(5, 16, 13).cast<float>();
    Linear<float> id;
    Mat<float> y;
    applyLinear(x, id, y);
    QCOMPARE(y, x);
    id.b = Vec<float>::Constant(16, 0.5f);
    applyLinear(x, id, y);
    QCOMPARE(y, Mat<float>(x.array() + 0.5f));
}

QTEST_GUILESS_MAIN(TestLinear)
#include "tst_linear.moc"
