// SPDX-License-Identifier: GPL-3.0-or-later
// Activation patching sweeps (patching.h) on the fixture families: every cell equals the patched
// forward run directly (the edit built here from the clean trace's own stages), bit for bit; the
// invariants that hold exactly (resid_pre of layer 0 patched at the one position where the prompts
// differ gives the clean run, metric 1; a position where the prompts agree, before the difference in
// a causal model, gives the corrupted run, metric 0); progress, cancelling, and prompts that do not fit.
// Path patching: every cell against a float64 reference computed here from the fixture's weights
// (the sender's W_O, the receiver's norm, projections and rotary, its attention by hand); a sender
// whose clean output is its corrupted one changes nothing, bit for bit; receivers and families that
// do not fit refused in one line.
#include "testpaths.h"
#include "attnviz/patching.h"
#include "attnviz/pretrained.h"
#include "modelchecks.h"
#include "../support/modelfolders.h"

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


// A float32 tensor of a fixture folder's model.safetensors, as (rows, cols) (a vector: one row).
Mat<double> tensorOf(const attnviz_test::Safetensors &st, const QString &name)
{
    const QJsonObject t = st.header.value(name).toObject();
    const QJsonArray shape = t.value(QStringLiteral("shape")).toArray();
    const qint64 at = t.value(QStringLiteral("data_offsets")).toArray().at(0).toInteger();
    const int rows = shape.size() > 1 ? shape.at(0).toInt() : 1, cols = shape.size() > 1 ? shape.at(1).toInt() : shape.at(0).toInt();
    Mat<double> m(rows, cols);
    const float *f = reinterpret_cast<const float *>(st.data.constData() + at);
    for (int i = 0; i < rows * cols; ++i)
        m.data()[i] = double(f[i]);
    return m;
}

// The float64 path patching reference of one receiver, from the fixture's weights (gpt2-tiny:
// LayerNorm, Conv1D c_attn / c_proj; mistral-tiny: RMSNorm, q/k/v/o_proj, rotary of base 10000 on the
// whole head, grouped keys and values, a sliding window of 4). `model`'s float64 forward gives the
// two runs and the final patched run (an attn.hook_z edit, checked by tst_interventions).
struct PathReference {
    bool gpt2 = true;
    attnviz_test::Safetensors st;
    Architecture arch;
    Mat<double> headQkv(const Mat<double> &resid, int layer, int head, int which) const // which: 0 q, 1 k, 2 v
    {
        const int t = int(resid.rows()), d = int(resid.cols()), dh = arch.dHead;
        Mat<double> x(t, d);
        const QString L = gpt2 ? QStringLiteral("transformer.h.%1.").arg(layer) : QStringLiteral("model.layers.%1.").arg(layer);
        if (gpt2) {
            const Mat<double> w = tensorOf(st, L + "ln_1.weight"), b = tensorOf(st, L + "ln_1.bias");
            for (int i = 0; i < t; ++i) {
                const double mu = resid.row(i).mean();
                const double var = (resid.row(i).array() - mu).square().mean();
                x.row(i) = ((resid.row(i).array() - mu) / std::sqrt(var + 1e-5)) * w.row(0).array() + b.row(0).array();
            }
            const Mat<double> W = tensorOf(st, L + "attn.c_attn.weight"), B = tensorOf(st, L + "attn.c_attn.bias");
            const int c = which * d + head * dh;
            Mat<double> out = x * W.middleCols(c, dh);
            out.rowwise() += B.row(0).segment(c, dh);
            return out;
        }
        const Mat<double> w = tensorOf(st, L + "input_layernorm.weight");
        for (int i = 0; i < t; ++i)
            x.row(i) = resid.row(i).array() / std::sqrt(resid.row(i).squaredNorm() / d + 1e-5) * w.row(0).array();
        const char *names[] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"};
        const int r = which == 0 ? head * dh : (head / arch.kvGroup()) * dh;
        Mat<double> out = x * tensorOf(st, L + names[which]).middleRows(r, dh).transpose();
        if (which < 2) // rotate_half rotary over the whole head, base 10000
            for (int i = 0; i < t; ++i) {
                const Eigen::RowVectorXd a = out.row(i);
                for (int j = 0; j < dh / 2; ++j) {
                    const double f = i * std::pow(10000.0, -2.0 * j / dh), c = std::cos(f), sn = std::sin(f);
                    out(i, j) = a(j) * c - a(j + dh / 2) * sn;
                    out(i, j + dh / 2) = a(j + dh / 2) * c + a(j) * sn;
                }
            }
        return out;
    }
    // The sender's output (z_clean - z_corr)[hs] through W_O
    Mat<double> contribution(const Mat<double> &dz, int layer, int head) const
    {
        const int dh = arch.dHead;
        if (gpt2)
            return dz.middleCols(head * dh, dh) * tensorOf(st, QStringLiteral("transformer.h.%1.attn.c_proj.weight").arg(layer)).middleRows(head * dh, dh);
        return dz.middleCols(head * dh, dh) *
               tensorOf(st, QStringLiteral("model.layers.%1.self_attn.o_proj.weight").arg(layer)).middleCols(head * dh, dh).transpose();
    }
    // z of the receiver head from its q, k, v (causal, the window, softmax at scale 1/sqrt(d_head))
    Mat<double> attend(const Mat<double> &q, const Mat<double> &k, const Mat<double> &v, int window) const
    {
        const int t = int(q.rows());
        Mat<double> z = Mat<double>::Zero(t, v.cols());
        for (int i = 0; i < t; ++i) {
            std::vector<double> s(size_t(i) + 1, -INFINITY);
            double mx = -INFINITY;
            for (int j = 0; j <= i; ++j)
                if (window <= 0 || i - window < j) {
                    s[size_t(j)] = q.row(i).dot(k.row(j)) / std::sqrt(double(arch.dHead));
                    mx = std::max(mx, s[size_t(j)]);
                }
            double sum = 0;
            for (double &x : s)
                sum += (x = std::exp(x - mx));
            for (int j = 0; j <= i; ++j)
                z.row(i) += s[size_t(j)] / sum * v.row(j);
        }
        return z;
    }
};

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

    // A cell's trace leaves the LM head out (TraceRequest::lmHead): no position's next tokens, the
    // final rows (what the metrics read) those of the trace with it, bit for bit.
    void withoutTheLmHead()
    {
        auto m = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(m);
        TraceRequest r;
        r.text = kCorrupted;
        Trace<float> with, without;
        QVERIFY(m->trace(r, with).ok());
        r.lmHead = false;
        QVERIFY(m->trace(r, without).ok());
        QVERIFY(!with.predictions.next.back().empty());
        QVERIFY(without.predictions.next.back().empty());
        QVERIFY(std::isnan(without.predictions.actualNext.back()));
        QVERIFY(with.final == without.final);
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

    // A heads sweep of a text whose length is a multiple of 8 runs a layer's cells stacked in one pass
    // (stackedcells.h); each cell equals its own whole patched forward bit for bit, in float and
    // float64, with every metric.
    void stackedHeadCellsEqualWholeForwards_data()
    {
        QTest::addColumn<int>("tokens");
        QTest::addColumn<bool>("f64");
        QTest::addColumn<int>("metric");
        QTest::newRow("16 f32 logit_diff") << 16 << false << int(PatchMetric::LogitDiff);
        QTest::newRow("24 f64 logit_diff") << 24 << true << int(PatchMetric::LogitDiff);
        QTest::newRow("32 f32 kl") << 32 << false << int(PatchMetric::Kl);
        QTest::newRow("16 f64 prob") << 16 << true << int(PatchMetric::Prob);
    }
    void stackedHeadCellsEqualWholeForwards()
    {
        QFETCH(int, tokens);
        QFETCH(bool, f64);
        QFETCH(int, metric);
        if (f64)
            stackedHeads<double>(tokens, PatchMetric(metric));
        else
            stackedHeads<float>(tokens, PatchMetric(metric));
    }
private:
    template <typename T>
    void stackedHeads(int t, PatchMetric metric)
    {
        auto m = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(m);
        PatchRequest r;
        r.sweep = PatchSweep::HeadsAllPositions;
        r.metric = metric;
        for (int i = 0; i < t; ++i)
            r.cleanIds.push_back((i * 4099 + 7) % 50000);
        r.corruptedIds = r.cleanIds;
        r.corruptedIds[size_t(t / 2)] += 3;
        r.answer = 11;
        r.wrong = 12;
        PatchResult out;
        const Status st = patchSweep<T>(*m, r, out);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(out.done, out.rows * out.cols);
        TraceRequest cr;
        cr.ids = r.cleanIds;
        Trace<T> clean;
        QVERIFY(m->trace(cr, clean).ok());
        std::vector<double> cleanLp;
        QVERIFY(nextLogProbs(*m, clean, cleanLp).ok());
        for (int l = 0; l < out.rows; ++l)
            for (int h = 0; h < out.cols; ++h) {
                Intervention e;
                e.kind = EditKind::Value;
                e.layer = l;
                e.hook = HookPoint::AttnZ;
                e.head = h;
                QVERIFY(hookValue(clean, e.hook, l, e.value).ok());
                TraceRequest pr;
                pr.ids = r.corruptedIds;
                pr.edits = {e};
                Trace<T> patched;
                QVERIFY(m->trace(pr, patched).ok());
                double want = 0;
                if (metric == PatchMetric::LogitDiff) {
                    double d = 0;
                    QVERIFY(logitDifference(*m, patched, r.answer, r.wrong, d).ok());
                    want = (d - out.corruptedDiff) / (out.cleanDiff - out.corruptedDiff);
                } else {
                    std::vector<double> lp;
                    QVERIFY(nextLogProbs(*m, patched, lp).ok());
                    if (metric == PatchMetric::Prob) {
                        want = std::exp(lp[size_t(r.answer)]);
                    } else {
                        for (size_t v = 0; v < lp.size(); ++v)
                            want += std::exp(cleanLp[v]) * (cleanLp[v] - lp[v]);
                    }
                }
                QVERIFY2(out.at(l, h) == want, qPrintable(QStringLiteral("L%1 H%2: %3 != %4").arg(l).arg(h).arg(out.at(l, h), 0, 'g', 17).arg(want, 0, 'g', 17)));
            }
    }

private slots:
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


    // Each path cell against the float64 reference: the patched run's logit difference to 1e-5
    // (float32) and 1e-9 (float64) of the reference's, for receivers of layer 1 on each input;
    // senders at or after the receiver's layer NaN. The reference's own q, k, v from the corrupted
    // stream equal the trace's (so that it computes what the model does).
    void pathCellsMatchReference_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<bool>("f64");
        for (const char *f : {"gpt2-tiny", "mistral-tiny"}) {
            QTest::newRow((QByteArray(f) + " f64").constData()) << QString::fromUtf8(f) << true;
            QTest::newRow((QByteArray(f) + " f32").constData()) << QString::fromUtf8(f) << false;
        }
    }
    void pathCellsMatchReference()
    {
        QFETCH(QString, folder);
        QFETCH(bool, f64);
        auto m = open(folder);
        QVERIFY(m);
        PathReference ref;
        ref.gpt2 = folder == QLatin1String("gpt2-tiny");
        ref.st = attnviz_test::readSafetensors(fixture(folder) + QStringLiteral("/model.safetensors"));
        ref.arch = m->info().architecture;
        const int window = ref.gpt2 ? 0 : 4;
        PatchRequest r;
        r.sweep = PatchSweep::Path;
        // the sliding window of 4 keeps a change farther back than 3 positions from the last token
        r.clean = ref.gpt2 ? kClean : "The cat sat on";
        r.corrupted = ref.gpt2 ? kCorrupted : "The dog sat on";
        TraceRequest tr;
        tr.keepHookOutputs = true;
        tr.text = r.clean;
        Trace<double> cd, kd;
        QVERIFY(m->trace(tr, cd).ok());
        tr.text = r.corrupted;
        QVERIFY(m->trace(tr, kd).ok());
        r.answer = cd.predictions.next.back()[0].id;
        r.wrong = kd.predictions.next.back()[0].id;
        if (r.wrong == r.answer)
            r.wrong = kd.predictions.next.back()[1].id;
        const int layers = m->info().layers, heads = m->info().heads, dh = m->info().dHead;
        const int Lr = layers - 1;
        int checked = 0, moved = 0;
        for (int hr : {1, 2})
            for (HeadInput input : {HeadInput::Q, HeadInput::K, HeadInput::V}) {
                r.receiver = {Lr, hr, input};
                PatchResult out;
                const Status st = f64 ? patchSweep<double>(*m, r, out) : patchSweep<float>(*m, r, out);
                QVERIFY2(st.ok(), st.message.c_str());
                QCOMPARE(out.rows, layers);
                QCOMPARE(out.cols, heads);
                QCOMPARE(out.done, Lr * heads);
                QVERIFY(out.receiver == r.receiver);
                const Mat<double> &resid = kd.layers[size_t(Lr)].residualIn;
                const auto &ks = kd.layers[size_t(Lr)].attention.batch[0];
                const Mat<double> qk[3] = {ref.headQkv(resid, Lr, hr, 0), ref.headQkv(resid, Lr, hr, 1), ref.headQkv(resid, Lr, hr, 2)};
                const Mat<double> *traced[3] = {&ks.q, &ks.k, &ks.v};
                for (int w = 0; w < 3; ++w) // the reference computes the model's q, k, v
                    QVERIFY2((qk[w] - traced[w]->middleCols(hr * dh, dh)).cwiseAbs().maxCoeff() < 1e-10, "reference q/k/v");
                for (int Ls = 0; Ls < layers; ++Ls)
                    for (int hs = 0; hs < heads; ++hs) {
                        if (Ls >= Lr) {
                            QVERIFY(std::isnan(out.at(Ls, hs)));
                            continue;
                        }
                        const Mat<double> dz = cd.layers[size_t(Ls)].attention.batch[0].context - kd.layers[size_t(Ls)].attention.batch[0].context;
                        const Mat<double> patched = resid + ref.contribution(dz, Ls, hs);
                        Mat<double> in[3] = {qk[0], qk[1], qk[2]};
                        in[int(input)] = ref.headQkv(patched, Lr, hr, int(input));
                        Intervention e;
                        e.hook = HookPoint::AttnZ;
                        e.layer = Lr;
                        e.head = hr;
                        e.kind = EditKind::Value;
                        e.value = ks.context;
                        e.value.middleCols(hr * dh, dh) = ref.attend(in[0], in[1], in[2], window);
                        TraceRequest pr;
                        pr.text = r.corrupted;
                        pr.edits = {e};
                        Trace<double> pt;
                        QVERIFY(m->trace(pr, pt).ok());
                        double want = 0;
                        QVERIFY(logitDifference(*m, pt, r.answer, r.wrong, want).ok());
                        const double got = out.at(Ls, hs) * (out.cleanDiff - out.corruptedDiff) + out.corruptedDiff;
                        const double tol = (f64 ? 1e-9 : 1e-5) * std::max(1.0, std::abs(want));
                        QVERIFY2(std::abs(got - want) < tol, qPrintable(QStringLiteral("%1 %2: sender %3.%4: %5 vs %6")
                                                                           .arg(QString::fromStdString(pathReceiverName(r.receiver)))
                                                                           .arg(f64 ? "f64" : "f32").arg(Ls).arg(hs)
                                                                           .arg(got, 0, 'g', 12).arg(want, 0, 'g', 12)));
                        if (std::abs(want - out.corruptedDiff) > 1e-6)
                            ++moved;
                        ++checked;
                    }
            }
        QCOMPARE(checked, 2 * 3 * (layers - 1) * heads);
        QVERIFY2(moved > 0, "some path moves the logit difference");
    }

    // A sender whose clean output is the corrupted run's own changes nothing: no edit, and the sweep's
    // cells the corrupted run's value bit for bit (the two prompts the same text, metric prob).
    void pathWithTheCorruptedSenderIsTheCorruptedRun_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::newRow("gpt2-tiny") << QStringLiteral("gpt2-tiny");
        QTest::newRow("mistral-tiny") << QStringLiteral("mistral-tiny");
    }
    void pathWithTheCorruptedSenderIsTheCorruptedRun()
    {
        QFETCH(QString, folder);
        auto m = open(folder);
        QVERIFY(m);
        TraceRequest tr;
        tr.text = kCorrupted;
        tr.keepHookOutputs = true;
        Trace<float> k;
        QVERIFY(m->trace(tr, k).ok());
        for (HeadInput input : {HeadInput::Q, HeadInput::K, HeadInput::V})
            for (int hs = 0; hs < m->info().heads; ++hs) {
                std::vector<Intervention> edits{Intervention()};
                QVERIFY(pathPatchFor(*m, k, k, 0, hs, PathReceiver{1, 3, input}, {}, edits).ok());
                QVERIFY(edits.empty());
            }
        PatchRequest r;
        r.sweep = PatchSweep::Path;
        r.metric = PatchMetric::Prob;
        r.clean = r.corrupted = kCorrupted;
        r.answer = k.predictions.next.back()[0].id;
        r.receiver = {1, 0, HeadInput::K};
        PatchResult out;
        QVERIFY(patchSweep<float>(*m, r, out).ok());
        for (int hs = 0; hs < out.cols; ++hs)
            QCOMPARE(out.at(0, hs), out.corruptedValue);
        // and a patch that does move: the edit is the receiver's z, at the rows from the first change on
        TraceRequest cr = tr;
        cr.text = kClean;
        Trace<float> c;
        QVERIFY(m->trace(cr, c).ok());
        int tokens = 0;
        const int q = firstDifference(*m, tokens);
        std::vector<Intervention> edits;
        QVERIFY(pathPatchFor(*m, c, k, 0, 0, PathReceiver{1, 3, HeadInput::K}, {}, edits).ok());
        QCOMPARE(int(edits.size()), 1);
        QCOMPARE(edits[0].hook, HookPoint::AttnZ);
        QCOMPARE(edits[0].layer, 1);
        QCOMPARE(edits[0].head, 3);
        QVERIFY(!edits[0].positions.empty());
        QVERIFY(edits[0].positions.front() >= q);
        // only the sender at positions before the difference: nothing reaches
        std::vector<int> before;
        for (int i = 0; i < q; ++i)
            before.push_back(i);
        QVERIFY(pathPatchFor(*m, c, k, 0, 0, PathReceiver{1, 3, HeadInput::K}, before, edits).ok());
        QVERIFY(edits.empty());
    }

    // Receivers that do not fit, the receiver's spelling, and families path patching does not run on:
    // one line each.
    void pathRefusals()
    {
        PathReceiver p;
        std::string error;
        QVERIFY(parsePathReceiver("1.3:k", p, error));
        QVERIFY(p == (PathReceiver{1, 3, HeadInput::K}));
        QCOMPARE(pathReceiverName(p), std::string("1.3:k"));
        QVERIFY(!parsePathReceiver("1.3:x", p, error));
        QCOMPARE(QString::fromStdString(error), QStringLiteral("the receiver's input 'x' is not q, k or v"));
        QVERIFY(!parsePathReceiver("13k", p, error));
        QCOMPARE(QString::fromStdString(error),
                 QStringLiteral("the receiver '13k' is not LAYER.HEAD:q, :k or :v (layer and head from 0, e.g. 1.3:k)"));
        QCOMPARE(QString::fromStdString(checkPathReceiver({0, 1, HeadInput::Q}, 2, 4).message),
                 QStringLiteral("receiver layer 0 has no sender before it (a receiver is in layer 1..1)"));
        QCOMPARE(QString::fromStdString(checkPathReceiver({2, 1, HeadInput::Q}, 2, 4).message),
                 QStringLiteral("receiver layer 2 is out of range (the model has 2 layers; a receiver is in layer 1..1)"));
        QCOMPARE(QString::fromStdString(checkPathReceiver({1, 4, HeadInput::Q}, 2, 4).message),
                 QStringLiteral("receiver head 4 is out of range (0..3)"));
        auto m = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(m);
        PatchRequest r;
        r.sweep = PatchSweep::Path;
        r.clean = kClean;
        r.corrupted = kCorrupted;
        answers<float>(*m, r.answer, r.wrong);
        r.receiver = {0, 0, HeadInput::K};
        PatchResult out;
        Status st = patchSweep<float>(*m, r, out);
        QCOMPARE(st.code, StatusCode::InvalidInput);
        QCOMPARE(QString::fromStdString(st.message), QStringLiteral("receiver layer 0 has no sender before it (a receiver is in layer 1..1)"));
        TraceRequest tr;
        tr.text = kClean;
        tr.keepHookOutputs = true;
        Trace<float> c;
        QVERIFY(m->trace(tr, c).ok());
        std::vector<Intervention> edits;
        st = pathPatchFor(*m, c, c, 1, 0, PathReceiver{1, 0, HeadInput::Q}, {}, edits);
        QCOMPARE(QString::fromStdString(st.message), QStringLiteral("sender layer 1 is not before the receiver's (0..0)"));
        Intervention e;
        QCOMPARE(patchFor(PatchSweep::Path, c, 0, 0, e).code, StatusCode::InvalidInput);
        for (const char *f : {"bert-tiny", "t5-tiny"}) {
            auto other = open(QString::fromUtf8(f));
            QVERIFY(other);
            r.receiver = {1, 0, HeadInput::K};
            st = patchSweep<float>(*other, r, out);
            QCOMPARE(st.code, StatusCode::Unavailable);
            QCOMPARE(QString::fromStdString(st.message),
                     QString::fromStdString(other->info().name + ": path patching runs on decoder-only (causal) checkpoints"));
        }
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
