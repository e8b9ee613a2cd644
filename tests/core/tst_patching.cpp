// SPDX-License-Identifier: GPL-3.0-or-later
// Activation patching sweeps (patching.h) on the fixture families: every cell equals the patched
// forward run directly (the edit built here from the clean trace's own stages), bit for bit; the
// invariants that hold exactly (resid_pre of layer 0 patched at the one position where the prompts
// differ gives the clean run, metric 1; a position where the prompts agree, before the difference in
// a causal model, gives the corrupted run, metric 0); progress, cancelling, and prompts that do not fit.
#include "testpaths.h"
#include "attnviz/patching.h"
#include "attnviz/pretrained.h"
#include "modelchecks.h"

#include <QtTest>

#include <atomic>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

const char *const kClean = "The cat sat on the mat and the cat";
const char *const kCorrupted = "The dog sat on the mat and the cat";

// The answer and the wrong token: the clean run's most probable next token, and the corrupted run's
// (or its second where the two agree).
template <typename T>
void answers(Model &m, int &answer, int &wrong)
{
    TraceRequest r;
    r.text = kClean;
    Trace<T> a, b;
    QVERIFY(m.trace(r, a).ok());
    r.text = kCorrupted;
    QVERIFY(m.trace(r, b).ok());
    answer = a.predictions.next.back()[0].id;
    wrong = b.predictions.next.back()[0].id;
    if (wrong == answer)
        wrong = b.predictions.next.back()[1].id;
}

// The first position where the two prompts' tokens differ, and their count.
int firstDifference(Model &m, int &tokens)
{
    std::vector<TraceToken> a, b;
    m.tokenize(kClean, a);
    m.tokenize(kCorrupted, b);
    tokens = int(a.size());
    if (a.size() != b.size())
        return -1;
    int i = 0;
    while (i < tokens && a[size_t(i)].id == b[size_t(i)].id)
        ++i;
    return i;
}

} // namespace

class TestPatching : public QObject {
    Q_OBJECT
private slots:
    void cellsArePatchedForwards_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<bool>("f64");
        for (const char *f : {"gpt2-tiny", "llama-tiny", "gemma2-tiny", "qwen2-tiny"}) {
            QTest::newRow((QByteArray(f) + " f64").constData()) << QString::fromUtf8(f) << true;
            QTest::newRow((QByteArray(f) + " f32").constData()) << QString::fromUtf8(f) << false;
        }
    }
    void cellsArePatchedForwards()
    {
        QFETCH(QString, folder);
        QFETCH(bool, f64);
        if (f64)
            cells<double>(folder);
        else
            cells<float>(folder);
    }

    void progressAndCancel()
    {
        auto m = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(m);
        PatchRequest r;
        r.clean = kClean;
        r.corrupted = kCorrupted;
        answers<float>(*m, r.answer, r.wrong);
        std::atomic<bool> cancel{false};
        std::vector<int> seen;
        r.cancel = &cancel;
        r.progress = [&](int done, int total) {
            seen.push_back(done);
            QCOMPARE(total, 2 * 4);
            if (done == 3)
                cancel = true;
        };
        PatchResult out;
        const Status st = patchSweep<float>(*m, r, out);
        QCOMPARE(st.code, StatusCode::Cancelled);
        QCOMPARE(QString::fromStdString(st.message), QStringLiteral("patching cancelled after 3 of 8 cells"));
        QCOMPARE(seen, (std::vector<int>{1, 2, 3}));
        QCOMPARE(out.done, 3);
        QVERIFY(!std::isnan(out.at(0, 2)));
        QVERIFY(std::isnan(out.at(0, 3)));
    }

    void badPrompts()
    {
        auto m = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(m);
        PatchRequest r;
        r.clean = "The cat sat";
        r.corrupted = "The cat sat down";
        r.answer = 1;
        r.wrong = 2;
        PatchResult out;
        Status st = patchSweep<float>(*m, r, out);
        QCOMPARE(st.code, StatusCode::InvalidInput);
        QCOMPARE(QString::fromStdString(st.message),
                 QStringLiteral("the clean prompt has 3 tokens and the corrupted 4; they differ from token 3 on (clean: (end); "
                                "corrupted: \"Ġdown\")"));
        r.corrupted = r.clean; // the same logit difference: nothing to normalise by
        st = patchSweep<float>(*m, r, out);
        QCOMPARE(st.code, StatusCode::InvalidInput);
        QVERIFY2(st.message.find("nothing to normalise by") != std::string::npos, st.message.c_str());
        r.corrupted = "The dog sat";
        r.wrong = 60000;
        st = patchSweep<float>(*m, r, out);
        QCOMPARE(QString::fromStdString(st.message), QStringLiteral("token id 60000 is not in the vocabulary (0..50256)"));
    }


    // Cells over the corrupted run (the layers and positions before the patch copied) equal the whole
    // patched forward bit for bit, on a text long enough that rows are copied (32 tokens, the fixture's most), for every
    // sweep: resid_pre, mlp_out, z at one position, and z of a head at every position.
    void reusedCellsEqualWholeForwards_data()
    {
        QTest::addColumn<int>("sweep");
        QTest::newRow("resid_pre") << int(PatchSweep::ResidPre);
        QTest::newRow("mlp_out") << int(PatchSweep::MlpOut);
        QTest::newRow("heads_by_pos") << int(PatchSweep::HeadsByPosition);
        QTest::newRow("heads") << int(PatchSweep::HeadsAllPositions);
    }
    void reusedCellsEqualWholeForwards()
    {
        QFETCH(int, sweep);
        auto m = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(m);
        PatchRequest r;
        r.sweep = PatchSweep(sweep);
        const int t = 32, q = 19;
        for (int i = 0; i < t; ++i)
            r.cleanIds.push_back((i * 7919 + 13) % 50000);
        r.corruptedIds = r.cleanIds;
        r.corruptedIds[size_t(q)] += 1;
        r.answer = 11;
        r.wrong = 12;
        PatchResult out;
        const Status st = patchSweep<float>(*m, r, out);
        QVERIFY2(st.ok(), st.message.c_str());
        const int heads = m->info().heads;
        QCOMPARE(out.cols, r.sweep == PatchSweep::HeadsAllPositions ? heads : r.sweep == PatchSweep::HeadsByPosition ? t * heads : t);
        TraceRequest cr;
        cr.ids = r.cleanIds;
        cr.keepHookOutputs = true;
        Trace<float> clean;
        QVERIFY(m->trace(cr, clean).ok());
        const HookPoint hook = r.sweep == PatchSweep::ResidPre ? HookPoint::ResidPre
                               : r.sweep == PatchSweep::MlpOut ? HookPoint::MlpOut
                                                               : HookPoint::AttnZ;
        int checked = 0;
        for (int l = 0; l < out.rows; ++l)
            for (int c = 0; c < out.cols; ++c) {
                const int pos = r.sweep == PatchSweep::HeadsByPosition ? c / heads : c;
                // every cell where rows are copied (and a few others); heads_by_pos: one head a position
                if (r.sweep == PatchSweep::HeadsByPosition && c % heads != (c / heads) % heads)
                    continue;
                if (r.sweep != PatchSweep::HeadsAllPositions && pos < q - 2)
                    continue;
                Intervention e;
                e.kind = EditKind::Value;
                e.layer = l;
                e.hook = hook;
                if (r.sweep == PatchSweep::HeadsAllPositions) {
                    e.head = c;
                } else {
                    e.positions = {pos};
                    if (r.sweep == PatchSweep::HeadsByPosition)
                        e.head = c % heads;
                }
                QVERIFY(hookValue(clean, hook, l, e.value).ok());
                TraceRequest pr;
                pr.ids = r.corruptedIds;
                pr.edits = {e};
                Trace<float> patched;
                QVERIFY(m->trace(pr, patched).ok());
                double d = 0;
                QVERIFY(logitDifference(*m, patched, r.answer, r.wrong, d).ok());
                const double want = (d - out.corruptedDiff) / (out.cleanDiff - out.corruptedDiff);
                QVERIFY2(out.at(l, c) == want, qPrintable(QStringLiteral("L%1 col %2: %3 != %4").arg(l).arg(c).arg(out.at(l, c), 0, 'g', 17).arg(want, 0, 'g', 17)));
                ++checked;
            }
        QVERIFY(checked > 0);
        if (r.sweep == PatchSweep::ResidPre || r.sweep == PatchSweep::MlpOut)
            for (int l = 0; l < out.rows; ++l)
                for (int c = 0; c < q; ++c)
                    QCOMPARE(out.at(l, c), 0.0); // before the difference: the corrupted run
    }

    // prob: the answer's probability after the last position; kl: KL(clean || patched); each against
    // the patched trace's own softmax (its predictions over the whole vocabulary).
    void probAndKlMetrics_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::newRow("gpt2-tiny") << QStringLiteral("gpt2-tiny");
        QTest::newRow("llama-tiny") << QStringLiteral("llama-tiny");
    }
    void probAndKlMetrics()
    {
        QFETCH(QString, folder);
        auto m = open(folder);
        QVERIFY(m);
        int tokens = 0;
        const int q = firstDifference(*m, tokens);
        QVERIFY(q >= 0 && q < tokens);
        PatchRequest r;
        r.clean = kClean;
        r.corrupted = kCorrupted;
        r.sweep = PatchSweep::MlpOut;
        answers<float>(*m, r.answer, r.wrong);
        PatchResult prob, kl;
        r.metric = PatchMetric::Prob;
        Status st = patchSweep<float>(*m, r, prob);
        QVERIFY2(st.ok(), st.message.c_str());
        r.metric = PatchMetric::Kl;
        st = patchSweep<float>(*m, r, kl);
        QVERIFY2(st.ok(), st.message.c_str());
        const int V = m->info().vocabulary;
        auto softmax = [&](const std::string &text, const std::vector<Intervention> &edits, std::vector<double> &p) {
            TraceRequest tr;
            tr.text = text;
            tr.topK = V;
            tr.edits = edits;
            Trace<float> trace;
            QVERIFY(m->trace(tr, trace).ok());
            p.assign(size_t(V), 0.0);
            for (const TokenProb &tp : trace.predictions.next.back())
                p[size_t(tp.id)] = tp.p;
        };
        std::vector<double> pc, pk;
        softmax(kClean, {}, pc);
        softmax(kCorrupted, {}, pk);
        auto klOf = [&](const std::vector<double> &a, const std::vector<double> &b) {
            double s = 0;
            for (int v = 0; v < V; ++v)
                if (a[size_t(v)] > 0)
                    s += a[size_t(v)] * (std::log(a[size_t(v)]) - std::log(b[size_t(v)]));
            return s;
        };
        QVERIFY(std::abs(prob.cleanValue - pc[size_t(r.answer)]) < 1e-6);
        QVERIFY(std::abs(prob.corruptedValue - pk[size_t(r.answer)]) < 1e-6);
        QCOMPARE(kl.cleanValue, 0.0);
        QVERIFY(std::abs(kl.corruptedValue - klOf(pc, pk)) < 1e-5 * std::max(1.0, kl.corruptedValue));
        TraceRequest cr;
        cr.text = kClean;
        cr.keepHookOutputs = true;
        Trace<float> clean;
        QVERIFY(m->trace(cr, clean).ok());
        for (int l = 0; l < prob.rows; ++l)
            for (int c = 0; c < prob.cols; ++c) {
                Intervention e;
                e.kind = EditKind::Value;
                e.hook = HookPoint::MlpOut;
                e.layer = l;
                e.positions = {c};
                QVERIFY(hookValue(clean, HookPoint::MlpOut, l, e.value).ok());
                std::vector<double> pp;
                softmax(kCorrupted, {e}, pp);
                QVERIFY2(std::abs(prob.at(l, c) - pp[size_t(r.answer)]) < 1e-6,
                         qPrintable(QStringLiteral("prob L%1 P%2: %3 vs %4").arg(l).arg(c).arg(prob.at(l, c)).arg(pp[size_t(r.answer)])));
                const double want = klOf(pc, pp);
                QVERIFY2(std::abs(kl.at(l, c) - want) < 1e-5 * std::max(1.0, want),
                         qPrintable(QStringLiteral("kl L%1 P%2: %3 vs %4").arg(l).arg(c).arg(kl.at(l, c)).arg(want)));
                QVERIFY(kl.at(l, c) >= -1e-9);
                if (c < q) {
                    QCOMPARE(prob.at(l, c), prob.corruptedValue); // the corrupted run itself
                    QCOMPARE(kl.at(l, c), kl.corruptedValue);
                }
            }
    }

    // A cell out of the sweep's range: one line naming it and the range.
    void cellsOutOfRange()
    {
        auto m = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(m);
        TraceRequest tr;
        tr.text = kClean;
        Trace<float> clean;
        QVERIFY(m->trace(tr, clean).ok());
        Intervention e;
        Status st = patchFor(PatchSweep::ResidPre, clean, 2, 0, e);
        QCOMPARE(st.code, StatusCode::InvalidInput);
        QCOMPARE(QString::fromStdString(st.message), QStringLiteral("layer 2 is out of range (the model has 2 layers: 0..1)"));
        st = patchFor(PatchSweep::ResidPre, clean, 0, 9, e);
        QCOMPARE(QString::fromStdString(st.message), QStringLiteral("position 9 is out of range (0..8)"));
        st = patchFor(PatchSweep::HeadsAllPositions, clean, 0, -1, e);
        QCOMPARE(QString::fromStdString(st.message), QStringLiteral("head -1 is out of range (0..3)"));
        QVERIFY(patchFor(PatchSweep::HeadsByPosition, clean, 1, 9 * 4 - 1, e).ok());
        QCOMPARE(e.head, 3);
        QCOMPARE(e.positions, std::vector<int>{8});
    }

private:
    template <typename T>
    void cells(const QString &folder)
    {
        auto m = open(folder);
        QVERIFY(m);
        int tokens = 0;
        const int q = firstDifference(*m, tokens);
        QVERIFY2(q >= 0 && q < tokens, "the prompts must differ at one position of the same count");
        PatchRequest r;
        r.clean = kClean;
        r.corrupted = kCorrupted;
        answers<T>(*m, r.answer, r.wrong);
        TraceRequest tr;
        tr.text = kClean;
        Trace<T> clean;
        QVERIFY(m->trace(tr, clean).ok());
        for (PatchSweep sweep : {PatchSweep::ResidPre, PatchSweep::HeadsAllPositions}) {
            r.sweep = sweep;
            PatchResult out;
            const Status st = patchSweep<T>(*m, r, out);
            QVERIFY2(st.ok(), st.message.c_str());
            QCOMPARE(out.rows, m->info().layers);
            QCOMPARE(out.cols, sweep == PatchSweep::ResidPre ? tokens : m->info().heads);
            QCOMPARE(out.done, out.rows * out.cols);
            for (int l = 0; l < out.rows; ++l)
                for (int c = 0; c < out.cols; ++c) {
                    Intervention e;
                    e.kind = EditKind::Value;
                    e.layer = l;
                    if (sweep == PatchSweep::ResidPre) {
                        e.hook = HookPoint::ResidPre;
                        e.positions = {c};
                        e.value = clean.layers[size_t(l)].residualIn.template cast<double>();
                    } else {
                        e.hook = HookPoint::AttnZ;
                        e.head = c;
                        e.value = clean.layers[size_t(l)].attention.batch[0].context.template cast<double>();
                    }
                    TraceRequest pr;
                    pr.text = kCorrupted;
                    pr.edits = {e};
                    Trace<T> patched;
                    QVERIFY(m->trace(pr, patched).ok());
                    double d = 0;
                    QVERIFY(logitDifference(*m, patched, r.answer, r.wrong, d).ok());
                    QCOMPARE(out.at(l, c), (d - out.corruptedDiff) / (out.cleanDiff - out.corruptedDiff));
                }
            if (sweep == PatchSweep::ResidPre) {
                QCOMPARE(out.at(0, q), 1.0); // the clean run itself
                for (int c = 0; c < out.cols; ++c)
                    if (c != q)
                        QCOMPARE(out.at(0, c), 0.0); // the same stream as the corrupted run's
                for (int l = 0; l < out.rows; ++l)
                    for (int c = 0; c < q; ++c)
                        QCOMPARE(out.at(l, c), 0.0); // causal: before the difference the runs agree
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestPatching)
#include "tst_patching.moc"
