// SPDX-License-Identifier: GPL-3.0-or-later
// positionWindow (positionwindow.h): every layer's stages of a window of positions, recomputed from a
// long-text trace (no weights, no stages) over its kept keys and values, equal the full forward's with
// every stage on the same rows (1e-5 in float32, relative to a stream's largest entry above 1) on the tiny Hugging Face fixture families (rotary,
// grouped-query heads, q/k norms, soft-capping, Gemma's local and global layers, GPT-2's learned
// positions), on a seeded model with a sliding window narrower than the text, and on a 16-bit model's
// long trace (its own rounded keys); the window's lens equals the full trace's lens at those positions.
#include "testpaths.h"
#include "attnviz/positionwindow.h"
#include "attnviz/pretrained.h"
#include "attnviz/reads.h"
#include "modelchecks.h"

#include <QtTest>

#include <cmath>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

// The largest |a - b| of two matrices of the same shape (infinite when the shapes differ), relative to
// b's largest entry where that is above 1: the window's few rows meet the products in another order
// than the whole text's (a matrix-vector product per row), a few float32 ulps of a stream of norm 50.
double largestDifference(const Mat<float> &a, const Mat<float> &b)
{
    if (a.rows() != b.rows() || a.cols() != b.cols())
        return INFINITY;
    if (!a.size())
        return 0.0;
    return (a.cast<double>() - b.cast<double>()).cwiseAbs().maxCoeff() / std::max(1.0, double(b.cwiseAbs().maxCoeff()));
}

// Rows [p0, p0 + n) of m.
Mat<float> rows(const Mat<float> &m, int p0, int n) { return m.middleRows(p0, n); }

// The window [p0, p1) of `lean` (m's trace without weights or stages) against `full` (every stage).
void checkWindow(Model &m, const Trace<float> &full, const Trace<float> &lean, int p0, int p1, double tol)
{
    PositionWindow w;
    const Status st = positionWindow(m, lean, p0, p1, w);
    QVERIFY2(st.ok(), st.message.c_str());
    const int n = p1 - p0;
    QCOMPARE(w.first, p0);
    QCOMPARE(w.total, int(full.tokens.size()));
    QCOMPARE(w.size(), n);
    QCOMPARE(w.trace.tokens[0].id, full.tokens[size_t(p0)].id);
    QCOMPARE(w.trace.numLayers(), full.numLayers());
    QVERIFY(largestDifference(w.trace.embeddings, rows(full.embeddings, p0, n)) <= tol);
    QVERIFY(largestDifference(w.trace.input, rows(full.input, p0, n)) <= tol);
    QVERIFY2(largestDifference(w.trace.final, rows(full.final, p0, n)) <= tol,
             qPrintable(QString::number(largestDifference(w.trace.final, rows(full.final, p0, n)))));
    for (int l = 0; l < full.numLayers(); ++l) {
        const LayerTrace<float> &a = w.trace.layers[size_t(l)], &b = full.layers[size_t(l)];
        const QByteArray where = "layer " + QByteArray::number(l);
        QVERIFY2(largestDifference(a.residualIn, rows(b.residualIn, p0, n)) <= tol, where);
        QVERIFY2(largestDifference(a.attentionIn, rows(b.attentionIn, p0, n)) <= tol, where);
        QVERIFY2(largestDifference(a.afterAttention, rows(b.afterAttention, p0, n)) <= tol, where);
        QVERIFY2(largestDifference(a.output, rows(b.output, p0, n)) <= tol,
                 where + " " + QByteArray::number(largestDifference(a.output, rows(b.output, p0, n))) + " of " +
                     QByteArray::number(rows(b.output, p0, n).cwiseAbs().maxCoeff()));
        const SequenceResult<float> &s = a.attention.batch[0], &f = b.attention.batch[0];
        QVERIFY2(largestDifference(s.q, rows(f.q, p0, n)) <= tol, where + " q");
        QVERIFY2(largestDifference(s.k, rows(f.k, p0, n)) <= tol, where + " k");
        QVERIFY2(largestDifference(s.v, rows(f.v, p0, n)) <= tol, where + " v");
        QVERIFY2(largestDifference(s.context, rows(f.context, p0, n)) <= tol, where + " context");
        QVERIFY2(largestDifference(s.output, rows(f.output, p0, n)) <= tol, where + " output");
        QVERIFY2(largestDifference(s.lse, rows(f.lse, p0, n)) <= tol, where + " lse");
        QCOMPARE(a.attention.numHeads, b.attention.numHeads);
        QCOMPARE(a.attention.window, b.attention.window);
        QVERIFY(s.weights.empty());
    }
    // each row's next tokens (full asked for every position's)
    for (int i = 0; i < n; ++i) {
        const NextTokens got = w.trace.predictions.at(size_t(i)), want = full.predictions.at(size_t(p0 + i));
        QVERIFY(!got.top.empty());
        QCOMPARE(got.top.front().id, want.top.front().id);
        QVERIFY(std::abs(got.top.front().p - want.top.front().p) <= 1e-5);
        QVERIFY(std::isnan(want.actualNext) ? std::isnan(got.actualNext) : std::abs(got.actualNext - want.actualNext) <= 1e-5);
    }
    // the reads accept the window as a trace of the model's: its lens is the full trace's at those rows
    std::vector<LensCell> lens, fullLens;
    const int at = n - 1;
    QVERIFY(lensColumn(m, w.trace, at, 3, lens).ok());
    QVERIFY(lensColumn(m, full, p0 + at, 3, fullLens).ok());
    QCOMPARE(lens.size(), fullLens.size());
    for (size_t l = 0; l < lens.size(); ++l) {
        QCOMPARE(lens[l].top.front().id, fullLens[l].top.front().id);
        QVERIFY(std::abs(lens[l].top.front().p - fullLens[l].top.front().p) <= 1e-5);
    }
}

Trace<float> traced(Model &m, const std::vector<int> &ids, bool lean, bool sixteenBit = false)
{
    TraceRequest req;
    req.ids = ids;
    req.allPredictions = !lean;
    if (lean) {
        req.observe.weights = false;
        req.observe.stages = false;
        req.observe.sixteenBit = sixteenBit;
    }
    Trace<float> tr;
    const Status st = m.trace(req, tr);
    if (!st.ok())
        qWarning("%s", st.message.c_str());
    return tr;
}

} // namespace

class TestPositionWindow : public QObject {
    Q_OBJECT
private slots:
    void fixtures_data();
    void fixtures();
    void slidingWindow();
    void sixteenBit();
    void refusals();
};

void TestPositionWindow::fixtures_data()
{
    QTest::addColumn<QString>("model");
    for (const char *f : {"llama-tiny", "mistral-tiny", "qwen2-tiny", "qwen3-tiny", "gemma2-tiny", "gemma3-tiny",
                          "phi3-tiny", "gpt2-tiny"})
        QTest::newRow(f) << QString::fromLatin1(f);
}

void TestPositionWindow::fixtures()
{
    QFETCH(QString, model);
    std::unique_ptr<Model> m = open(model);
    QVERIFY(m);
    std::vector<int> ids = idsOf(cases(model).first().toObject());
    while (ids.size() < 24) // a text longer than Gemma's local window
        ids.push_back(ids[ids.size() % 5]);
    const int t = int(ids.size());
    const Trace<float> full = traced(*m, ids, false), lean = traced(*m, ids, true);
    QCOMPARE(int(lean.tokens.size()), t);
    QVERIFY(!lean.observed.weights && !lean.observed.stages);
    checkWindow(*m, full, lean, t / 3, t - 2, 1e-5);
    if (QTest::currentTestFailed())
        return;
    checkWindow(*m, full, lean, 0, t, 1e-5);
    if (QTest::currentTestFailed())
        return;
    checkWindow(*m, full, lean, t - 1, t, 1e-5);
}

void TestPositionWindow::slidingWindow()
{
    Architecture a;
    QVERIFY(seededShape("smollm2-135m", a));
    a.layers = 2;
    a.window = {0, 16};
    a.vocabulary = 500;
    std::unique_ptr<Model> m;
    QVERIFY(seededPretrained(a, 7, m).ok());
    std::vector<int> ids;
    for (int i = 0; i < 90; ++i)
        ids.push_back((37 * i + 11) % 500);
    const Trace<float> full = traced(*m, ids, false), lean = traced(*m, ids, true);
    const auto [p0, p1] = windowEndingAt(70, 32, 90);
    QCOMPARE(p0, 39);
    QCOMPARE(p1, 71);
    checkWindow(*m, full, lean, p0, p1, 1e-5);
}

void TestPositionWindow::sixteenBit()
{
    // a BF16 model's long trace keeps its rounded q, k and v: the window continues from those, so its
    // rows are the long trace's own (its final stream), not the float forward's
    Architecture a;
    QVERIFY(seededShape("smollm2-135m", a));
    a.layers = 2;
    a.window = {0, 8};
    a.vocabulary = 500;
    std::unique_ptr<Model> m;
    QVERIFY(seededPretrained(a, 7, m, "BF16").ok());
    std::vector<int> ids;
    for (int i = 0; i < 60; ++i)
        ids.push_back((37 * i + 11) % 500);
    const Trace<float> lean = traced(*m, ids, true, true);
    QVERIFY(lean.observed.sixteenBit);
    PositionWindow w;
    QVERIFY(positionWindow(*m, lean, 20, 50, w).ok());
    // a row computed in another block of rows may round a q, k or v entry to the other neighbouring
    // 16-bit value (as a fresh trace's may): within that rounding, measured with a margin
    const double off = largestDifference(w.trace.final, rows(lean.final, 20, 30));
    QVERIFY2(off <= 2e-3, qPrintable(QString::number(off)));
    QVERIFY(largestDifference(w.trace.layers[0].residualIn, rows(lean.input, 20, 30)) <= 1e-6);
}

void TestPositionWindow::refusals()
{
    std::unique_ptr<Model> m = open(QStringLiteral("llama-tiny"));
    QVERIFY(m);
    const std::vector<int> ids = idsOf(cases(QStringLiteral("llama-tiny")).first().toObject());
    const Trace<float> lean = traced(*m, ids, true);
    PositionWindow w;
    QCOMPARE(positionWindow(*m, lean, 3, 3, w).code, StatusCode::InvalidInput);
    QCOMPARE(positionWindow(*m, lean, 0, int(ids.size()) + 1, w).code, StatusCode::InvalidInput);
    std::unique_ptr<Model> other = open(QStringLiteral("qwen2-tiny"));
    QCOMPARE(positionWindow(*other, lean, 0, 2, w).code, StatusCode::InvalidInput); // not its trace
    std::unique_ptr<Model> bert = open(QStringLiteral("bert-tiny"));
    QVERIFY(bert);
    const Trace<float> bertTrace = traced(*bert, idsOf(cases(QStringLiteral("bert-tiny")).first().toObject()), true);
    QVERIFY(!positionWindow(*bert, bertTrace, 0, 2, w).ok()); // not causal
}

QTEST_GUILESS_MAIN(TestPositionWindow)
#include "tst_positionwindow.moc"
