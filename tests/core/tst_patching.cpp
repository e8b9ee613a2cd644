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
