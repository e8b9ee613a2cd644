// SPDX-License-Identifier: GPL-3.0-or-later
// The decoder's logit lens and direct logit attribution of encoder-decoder models (seq2seqreads.h)
// against a float64 reference written here from the fixtures' tensors (the final norm, the
// unembedding, each attention's W_O) and the float64 reference of the Hugging Face code
// (expected.json: each decoder block's output, every logit): T5 v1.0 (tied head scaled by
// d_model^-0.5), T5 v1.1 (untied), mBART (pre-LN with a LayerNorm's bias, output biases, no
// logits bias in an MBartModel file); BART and Marian (post-LN: the lens reads each stage as the
// head reads the last, attribution refused).
#include "attnviz/seq2seqreads.h"
#include "seq2seqchecks.h"

using namespace attnviz;
using namespace attnviz::testing;

namespace {

using RowD = Eigen::Matrix<double, 1, Eigen::Dynamic>;

struct Head {
    int d = 0, V = 0;
    std::vector<double> E; // (V, d) row-major
    std::vector<double> gamma, beta;
    bool layerNorm = false;
    double eps = 0, scale = 1;
    std::vector<double> bias; // (V) or empty
};

// The decoder's head as the fixture's tensors and config give it.
Head headOf(const QString &model)
{
    Head h;
    const QJsonObject c = fixtureConfig(model);
    const bool t5 = c.value(QStringLiteral("model_type")).toString() == QLatin1String("t5");
    h.d = c.value(QStringLiteral("d_model")).toInt();
    h.V = c.value(QStringLiteral("vocab_size")).toInt();
    if (t5) {
        const bool tied = c.value(QStringLiteral("tie_word_embeddings")).toBool(true) && !tensor(model, "lm_head.weight").size();
        h.E = tensor(model, tied ? "shared.weight" : "lm_head.weight");
        h.scale = tied ? 1.0 / std::sqrt(double(h.d)) : 1.0;
        h.gamma = tensor(model, "decoder.final_layer_norm.weight");
        h.eps = c.value(QStringLiteral("layer_norm_epsilon")).toDouble();
    } else {
        h.E = tensor(model, "shared.weight");
        if (h.E.empty())
            h.E = tensor(model, "model.shared.weight");
        h.layerNorm = true;
        h.eps = 1e-5;
        h.gamma = tensor(model, "decoder.layer_norm.weight");
        h.beta = tensor(model, "decoder.layer_norm.bias");
        h.bias = tensor(model, "final_logits_bias");
    }
    return h;
}

// The frozen gain of the final norm at x (empty norm: ones).
RowD gainAt(const Head &h, const RowD &x)
{
    RowD g = RowD::Ones(h.d);
    if (h.gamma.empty())
        return g;
    const double ms = h.layerNorm ? (x.array() - x.mean()).square().mean() : x.squaredNorm() / h.d;
    for (int i = 0; i < h.d; ++i)
        g[i] = h.gamma[size_t(i)] / std::sqrt(ms + h.eps);
    return g;
}

// Every logit of a residual row through the head.
RowD headLogits(const Head &h, const RowD &x)
{
    RowD y = x;
    if (h.layerNorm && !h.gamma.empty())
        y.array() -= x.mean();
    y = y.cwiseProduct(gainAt(h, x)) * h.scale;
    if (!h.beta.empty())
        for (int i = 0; i < h.d; ++i)
            y[i] += h.beta[size_t(i)] * h.scale;
    RowD out(h.V);
    for (int v = 0; v < h.V; ++v) {
        double s = h.bias.empty() ? 0.0 : h.bias[size_t(v)];
        for (int i = 0; i < h.d; ++i)
            s += y[i] * h.E[size_t(v) * size_t(h.d) + size_t(i)];
        out[v] = s;
    }
    return out;
}

// The probability of each token and the top id (lower id on a tie).
void softmaxTop(const RowD &logits, RowD &p, int &top)
{
    const double mx = logits.maxCoeff();
    p = (logits.array() - mx).exp();
    p /= p.sum();
    top = 0;
    for (int v = 1; v < int(p.size()); ++v)
        if (logits[v] > logits[top])
            top = v;
}

template <typename T>
RowD rowOf(const Mat<T> &m, int i)
{
    return m.row(i).template cast<double>();
}

RowD jsonRow(const QJsonArray &a)
{
    RowD r(a.size());
    for (int i = 0; i < a.size(); ++i)
        r[i] = a[i].toDouble();
    return r;
}

template <typename T>
void checkLens(const QString &model, double tol)
{
    Model *m = opened(model);
    QVERIFY(m);
    const QJsonObject c = expectedCase(model, 0);
    Trace<T> t;
    std::string error;
    QVERIFY2(traceCase(model, 0, t, error), error.c_str());
    Seq2SeqLens lens;
    const Status st = seq2seqLens(*m, t, 3, lens);
    QVERIFY2(st.ok(), st.message.c_str());
    const int L = t.numLayers(), P = int(t.tokens.size());
    QCOMPARE(lens.layers, L);
    QCOMPARE(lens.rows(), 3 * L);
    QCOMPARE(lens.positions, P);
    const Head h = headOf(model);
    QVERIFY(!h.E.empty());
    const QJsonArray blocks = c.value(QStringLiteral("decoder_blocks")).toArray();
    const QJsonArray logits = c.value(QStringLiteral("logits")).toArray();
    for (int row = 0; row < lens.rows(); ++row) {
        const int l = row / 3;
        for (int p = 0; p < P; ++p) {
            // the stage's stream: the reference's block output for the MLP stage, the trace's otherwise
            RowD x;
            switch (DecoderStage(row % 3)) {
            case DecoderStage::Self: x = rowOf(t.layers[size_t(l)].afterAttention, p); break;
            case DecoderStage::Cross: x = rowOf(t.seq2seq.cross[size_t(l)].output, p); break;
            case DecoderStage::Mlp: x = jsonRow(blocks[l].toArray()[p].toArray()); break;
            }
            RowD ref = headLogits(h, x);
            if (row == lens.rows() - 1) // the last stage is the model's own prediction
                QVERIFY((ref - jsonRow(logits[p].toArray())).cwiseAbs().maxCoeff() <= tol);
            RowD prob;
            int top = 0;
            softmaxTop(ref, prob, top);
            const LensCell &cell = lens.at(row, p);
            QCOMPARE(int(cell.top.size()), 3);
            QCOMPARE(cell.top.front().id, top);
            QVERIFY2(std::abs(cell.top.front().p - prob[top]) <= tol,
                     qPrintable(QStringLiteral("%1 %2: %3 vs %4").arg(row).arg(p).arg(cell.top.front().p).arg(prob[top])));
            const double entropy = -(prob.array() * prob.array().log()).sum();
            QVERIFY(std::abs(cell.entropy - entropy) <= tol * 10);
            if (p + 1 < P) {
                const int actual = t.tokens[size_t(p) + 1].id;
                QVERIFY(std::abs(cell.actualP - prob[actual]) <= tol);
                int rank = 1;
                for (int v = 0; v < h.V; ++v)
                    rank += ref[v] > ref[actual] || (ref[v] == ref[actual] && v < actual);
                QCOMPARE(cell.actualRank, rank);
            } else {
                QVERIFY(std::isnan(cell.actualP));
                QCOMPARE(cell.actualRank, 0);
            }
        }
    }
    // the column is the grid's
    std::vector<LensCell> col;
    QVERIFY(seq2seqLensColumn(*m, t, P - 1, 3, col).ok());
    QCOMPARE(int(col.size()), 3 * L);
    for (int row = 0; row < 3 * L; ++row) {
        QCOMPARE(col[size_t(row)].top.front().id, lens.at(row, P - 1).top.front().id);
        QCOMPARE(col[size_t(row)].top.front().p, lens.at(row, P - 1).top.front().p);
    }
    QCOMPARE(seq2seqLensColumn(*m, t, P, 3, col).code, StatusCode::InvalidInput);
}

// Each head of both attentions: z_h W_O^h from the fixture's W_O, through the frozen final norm.
template <typename T>
void checkAttribution(const QString &model, double tol)
{
    Model *m = opened(model);
    QVERIFY(m);
    const QJsonObject c = expectedCase(model, 0);
    Trace<T> t;
    std::string error;
    QVERIFY2(traceCase(model, 0, t, error), error.c_str());
    const Head h = headOf(model);
    const bool t5 = fixtureConfig(model).value(QStringLiteral("model_type")).toString() == QLatin1String("t5");
    const int L = t.numLayers(), P = int(t.tokens.size()), H = m->info().heads, dh = m->info().dHead;
    const QJsonArray logits = c.value(QStringLiteral("logits")).toArray();
    for (int p : {0, P / 2, P - 1}) {
        const RowD ref = jsonRow(logits[p].toArray());
        // the target: the next token where there is one, else the reference's top
        int target = 0;
        if (p + 1 < P) {
            target = t.tokens[size_t(p) + 1].id;
        } else {
            RowD prob;
            softmaxTop(ref, prob, target);
        }
        Seq2SeqAttribution a;
        const Status st = seq2seqAttribute(*m, t, p, target, a);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(a.layers, L);
        QCOMPARE(a.heads, H);
        QCOMPARE(int(a.selfHead.size()), L * H);
        QCOMPARE(int(a.crossHead.size()), L * H);
        QVERIFY2(std::abs(a.logit - ref[target]) <= tol, qPrintable(QStringLiteral("%1 vs %2").arg(a.logit).arg(ref[target])));
        QVERIFY2(std::abs(a.sum() - a.logit) <= tol, qPrintable(QStringLiteral("sum %1 vs %2").arg(a.sum()).arg(a.logit)));
        // u = scale * gain(x_L) * e
        const RowD xL = rowOf(t.layers[size_t(L - 1)].output, p);
        RowD u(h.d);
        const RowD g = gainAt(h, xL);
        for (int i = 0; i < h.d; ++i)
            u[i] = h.scale * g[i] * h.E[size_t(target) * size_t(h.d) + size_t(i)];
        auto through = [&](RowD v) {
            if (h.layerNorm)
                v.array() -= v.mean();
            return v.dot(u);
        };
        QVERIFY(std::abs(a.input - through(rowOf(t.input, p))) <= tol);
        double biasRef = h.bias.empty() ? 0.0 : h.bias[size_t(target)];
        QVERIFY(std::abs(a.logitsBias - biasRef) <= tol);
        for (int l = 0; l < L; ++l)
            for (int which = 0; which < 2; ++which) {
                const LayerTrace<T> &lt = which == 0 ? t.layers[size_t(l)] : t.seq2seq.cross[size_t(l)];
                const std::string at = t5 ? "decoder.block." + std::to_string(l) + (which == 0 ? ".layer.0.SelfAttention.o" : ".layer.1.EncDecAttention.o")
                                          : "decoder.layers." + std::to_string(l) + (which == 0 ? ".self_attn.out_proj" : ".encoder_attn.out_proj");
                std::vector<int64_t> shape;
                const std::vector<double> Wo = tensor(model, at + ".weight", &shape);
                QCOMPARE(int(shape.size()), 2);
                const int inner = int(shape[1]);
                const RowD z = rowOf(lt.attention.batch.front().context, p);
                for (int hd = 0; hd < H; ++hd) {
                    RowD o = RowD::Zero(h.d);
                    for (int r = 0; r < h.d; ++r)
                        for (int k = 0; k < dh; ++k)
                            o[r] += z[hd * dh + k] * Wo[size_t(r) * size_t(inner) + size_t(hd * dh + k)];
                    const double got = (which == 0 ? a.selfHead : a.crossHead)[size_t(l * H + hd)];
                    QVERIFY2(std::abs(got - through(o)) <= tol,
                             qPrintable(QStringLiteral("L%1 %2 h%3: %4 vs %5").arg(l).arg(which).arg(hd).arg(got).arg(through(o))));
                }
                const std::vector<double> b = tensor(model, at + ".bias");
                const double bRef = b.empty() ? 0.0 : through(Eigen::Map<const RowD>(b.data(), h.d));
                QVERIFY(std::abs((which == 0 ? a.selfBias : a.crossBias)[size_t(l)] - bRef) <= tol);
            }
        // the MLP of each layer: its block's output less the stream after cross-attention
        const QJsonArray blocks = c.value(QStringLiteral("decoder_blocks")).toArray();
        for (int l = 0; l < L; ++l) {
            const RowD mlp = jsonRow(blocks[l].toArray()[p].toArray()) - rowOf(t.seq2seq.cross[size_t(l)].output, p);
            QVERIFY(std::abs(a.mlp[size_t(l)] - through(mlp)) <= tol);
        }
    }
    Seq2SeqAttribution a;
    QCOMPARE(seq2seqAttribute(*m, t, P, 1, a).code, StatusCode::InvalidInput);
    QCOMPARE(seq2seqAttribute(*m, t, 0, h.V, a).code, StatusCode::InvalidInput);
}

} // namespace

class TestSeq2SeqReads : public QObject {
    Q_OBJECT

private slots:
    void stageNames()
    {
        QCOMPARE(decoderStageName(2, DecoderStage::Self), std::string("L2 self"));
        QCOMPARE(decoderStageName(2, DecoderStage::Cross), std::string("L2 cross"));
        QCOMPARE(decoderStageName(0, DecoderStage::Mlp), std::string("L0 MLP"));
        QCOMPARE(decoderStageRow(1, DecoderStage::Cross), 4);
    }

    void lens_data()
    {
        QTest::addColumn<QString>("model");
        for (const char *m : {"t5-tiny", "t5-v1_1-tiny", "mbart-tiny", "bart-tiny", "marian-tiny"})
            QTest::newRow(m) << QString::fromLatin1(m);
    }
    void lens()
    {
        QFETCH(QString, model);
        checkLens<double>(model, 1e-9);
        checkLens<float>(model, 1e-5);
    }

    void attribution_data()
    {
        QTest::addColumn<QString>("model");
        for (const char *m : {"t5-tiny", "t5-v1_1-tiny", "mbart-tiny"})
            QTest::newRow(m) << QString::fromLatin1(m);
    }
    void attribution()
    {
        QFETCH(QString, model);
        checkAttribution<double>(model, 1e-9);
        checkAttribution<float>(model, 1e-5);
    }

    // Post-norm decoders: no sum of direct paths, said in one line.
    void postNormRefused_data()
    {
        QTest::addColumn<QString>("model");
        QTest::newRow("bart") << QStringLiteral("bart-tiny");
        QTest::newRow("marian") << QStringLiteral("marian-tiny");
    }
    void postNormRefused()
    {
        QFETCH(QString, model);
        Model *m = opened(model);
        QVERIFY(m);
        Trace<float> t;
        std::string error;
        QVERIFY2(traceCase(model, 0, t, error), error.c_str());
        Seq2SeqAttribution a;
        const Status st = seq2seqAttribute(*m, t, 0, 3, a);
        QCOMPARE(st.code, StatusCode::Unavailable);
        QVERIFY2(st.message.find("post-norm decoder") != std::string::npos, st.message.c_str());
    }

    // A decoder-only model has no decoder stages.
    void notEncoderDecoder()
    {
        Model *m = opened(QStringLiteral("gpt2-tiny"));
        QVERIFY(m);
        TraceRequest r;
        r.ids = {1, 2, 3};
        Trace<float> t;
        QVERIFY(m->trace(r, t).ok());
        Seq2SeqLens lens;
        QCOMPARE(seq2seqLens(*m, t, 3, lens).code, StatusCode::Unavailable);
        Seq2SeqAttribution a;
        QCOMPARE(seq2seqAttribute(*m, t, 0, 1, a).code, StatusCode::Unavailable);
    }
};

QTEST_APPLESS_MAIN(TestSeq2SeqReads)
#include "tst_seq2seqreads.moc"
