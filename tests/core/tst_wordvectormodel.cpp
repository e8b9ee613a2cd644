// SPDX-License-Identifier: GPL-3.0-or-later
// The word-vector models behind the Model seam (wordvectormodel.h): a single layer is a one-layer
// trace with the numbers computeAttention gives on the same vectors; the stack's trace holds
// computeStack's layers; tokens, cuts, masks and the window's messages.
#include "testpaths.h"
#include "attnviz/attention.h"
#include "attnviz/embeddings.h"
#include "attnviz/headslices.h"
#include "attnviz/wordvectormodel.h"

#include <QtTest>

using namespace attnviz;

namespace {

const char *kSentence = "I must go back to my ship and to my crew";

std::shared_ptr<const EmbeddingTable> toyTable()
{
    auto t = std::make_shared<EmbeddingTable>();
    const Status st = loadEmbeddings(ATTNVIZ_FIXTURE("/embeddings/toy-en16.txt"), *t);
    if (!st.ok())
        qFatal("%s", st.message.c_str());
    return t;
}

float maxDiff(const Mat<float> &a, const Mat<float> &b)
{
    if (a.rows() != b.rows() || a.cols() != b.cols())
        return std::numeric_limits<float>::infinity();
    return a.size() == 0 ? 0.f : (a - b).cwiseAbs().maxCoeff();
}

} // namespace

class TestWordVectorModel : public QObject {
    Q_OBJECT

private slots:
    void singleLayerIsComputeAttention_data()
    {
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("projection");
        QTest::addColumn<bool>("causal");
        QTest::addRow("1 head, identity") << 1 << int(ProjectionSource::Identity) << false;
        QTest::addRow("4 heads, identity, causal") << 4 << int(ProjectionSource::Identity) << true;
        QTest::addRow("2 heads, random") << 2 << int(ProjectionSource::Random) << false;
    }
    void singleLayerIsComputeAttention()
    {
        QFETCH(int, heads);
        QFETCH(int, projection);
        QFETCH(bool, causal);
        CpuBackend cpu;
        WordVectorModel m(&cpu);
        const auto table = toyTable();
        m.setTable(table);
        WordVectorSettings s;
        s.numHeads = heads;
        s.projection = ProjectionSource(projection);
        s.projectionSeed = 3;
        s.causal = causal;
        m.setSettings(s);
        TraceRequest req;
        req.text = kSentence;
        Trace<float> t;
        const Status st = m.trace(req, t);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(t.numLayers(), 1);
        QCOMPARE(t.numHeads(), heads);
        QCOMPARE(int(t.tokens.size()), 11);
        QCOMPARE(t.tokens[6].display, std::string("ship"));
        QVERIFY(!t.cross());
        QVERIFY(!t.cut());

        // the same numbers, computed here without the model
        const EmbeddedSentence e = embedSentence(*table, kSentence);
        QCOMPARE(maxDiff(t.embeddings, e.matrix), 0.f);
        AttentionInput<float> in;
        in.batch.push_back({e.matrix, {}, {}, {}});
        if (s.projection == ProjectionSource::Random) {
            RandomProjectionSpec spec;
            spec.dModel = spec.kdim = spec.vdim = 16;
            spec.numHeads = heads;
            spec.dHead = 16 / heads;
            spec.dOut = 16;
            spec.seed = 3;
            QVERIFY(randomProjections(spec, in.proj).ok());
            QVERIFY(t.layers[0].projections);
        } else {
            QVERIFY(!t.layers[0].projections);
        }
        AttentionResult<float> ref;
        QVERIFY(computeAttention(attentionConfig(s, 16), in, ref).ok());
        for (int h = -1; h < heads; ++h)
            QCOMPARE(maxDiff(t.weights(0, h), h < 0 ? ref.batch[0].weightsAvg : ref.batch[0].weights[size_t(h)]), 0.f);
        QCOMPARE(maxDiff(t.layers[0].output, ref.batch[0].output), 0.f);
        QCOMPARE(maxDiff(t.layers[0].residualIn, e.matrix), 0.f);
        QCOMPARE(maxDiff(t.final, ref.batch[0].output), 0.f);
        if (causal)
            QCOMPARE(int(t.layers[0].attention.batch[0].mask(0, 1)), 1);
    }

    void headSlices_data()
    {
        QTest::addColumn<int>("dModel");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("dHead");
        QTest::addColumn<QList<int>>("widths");
        QTest::addRow("16 / 4") << 16 << 4 << 4 << QList<int>{4, 4, 4, 4};
        QTest::addRow("16 / 3") << 16 << 3 << 6 << QList<int>{6, 5, 5};
        QTest::addRow("16 / 5") << 16 << 5 << 4 << QList<int>{4, 3, 3, 3, 3};
        QTest::addRow("5 / 7") << 5 << 7 << 1 << QList<int>{1, 1, 1, 1, 1, 0, 0};
        QTest::addRow("no heads") << 16 << 0 << 0 << QList<int>{};
    }
    void headSlices()
    {
        QFETCH(int, dModel);
        QFETCH(int, heads);
        QFETCH(int, dHead);
        QFETCH(QList<int>, widths);
        QCOMPARE(autoHeadWidth(dModel, heads), dHead);
        const std::vector<int> w = identitySliceWidths(dModel, heads);
        QCOMPARE(QList<int>(w.begin(), w.end()), widths);
        if (heads <= 0)
            return;
        const Projections<float> p = identitySliceProjections(dModel, heads);
        QCOMPARE(int(p.q.W.rows()), heads * dHead);
        QCOMPARE(int(p.q.W.cols()), dModel);
        // every embedding column lands in exactly one head, and W_o puts it back
        const Mat<float> roundTrip = p.o.W * p.q.W;
        QCOMPARE(maxDiff(roundTrip, Mat<float>::Identity(dModel, dModel)), 0.f);
    }

    void unequalIdentityHeads()
    {
        // 3 heads on d_model 16: slices of 6, 5, 5 columns, each padded to d_head 6
        CpuBackend cpu;
        WordVectorModel m(&cpu);
        const auto table = toyTable();
        m.setTable(table);
        WordVectorSettings s;
        s.numHeads = 3;
        m.setSettings(s);
        QCOMPARE(m.info().dHead, 6);
        QVERIFY(headsProblem(16, 3, 0, ProjectionSource::Identity).empty());
        TraceRequest req;
        req.text = kSentence;
        Trace<float> t;
        const Status st = m.trace(req, t);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(t.numHeads(), 3);
        QVERIFY(t.layers[0].projections);
        QCOMPARE(int(t.layers[0].output.cols()), 16);
        const Mat<float> x = embedSentence(*table, kSentence).matrix;
        const int offsets[] = {0, 6, 11}, slice[] = {6, 5, 5};
        for (int h = 0; h < 3; ++h) {
            // softmax(x_h x_hᵀ / √6) on head h's own columns, by hand in double
            const Eigen::MatrixXd xs = x.middleCols(offsets[h], slice[h]).cast<double>();
            Eigen::MatrixXd sc = xs * xs.transpose() / std::sqrt(6.0);
            for (Eigen::Index i = 0; i < sc.rows(); ++i) {
                sc.row(i) = (sc.row(i).array() - sc.row(i).maxCoeff()).exp().matrix();
                sc.row(i) /= sc.row(i).sum();
            }
            QVERIFY2(maxDiff(t.weights(0, h), sc.cast<float>()) < 1e-5f, qPrintable(QString::number(h)));
        }
        // the slices are kept between requests
        const auto first = t.layers[0].projections;
        Trace<float> again;
        QVERIFY(m.trace(req, again).ok());
        QCOMPARE(again.layers[0].projections.key(), first.key());
    }

    void stackTraceHoldsEveryLayer()
    {
        CpuBackend cpu;
        WordStackModel m(&cpu);
        const auto table = toyTable();
        m.setTable(table);
        WordVectorSettings s;
        s.numHeads = 2;
        m.setSettings(s);
        StackModelSettings ss;
        ss.depth = 3;
        ss.norm = NormPlacement::Pre;
        ss.positions = PositionEncoding::Sinusoidal;
        ss.seed = 5;
        m.setStack(ss);
        TraceRequest req;
        req.text = kSentence;
        Trace<float> t;
        const Status st = m.trace(req, t);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(t.numLayers(), 3);
        QCOMPARE(m.info().layers, 3);

        StackWeights<float> w;
        QVERIFY(seededStackWeights<float>(16, 3, 5, PositionEncoding::None, WordStackModel::kMaxPositions, w).ok());
        StackConfig cfg;
        cfg.depth = 3;
        cfg.attention = attentionConfig(s, 16);
        cfg.norm = NormPlacement::Pre;
        cfg.positions = PositionEncoding::Sinusoidal;
        cfg.finalNorm = true;
        StackResult<float> ref;
        QVERIFY(computeStack(cfg, w, embedSentence(*table, kSentence).matrix, ref).ok());
        QCOMPARE(maxDiff(t.input, ref.input), 0.f);
        for (int l = 0; l < 3; ++l) {
            QCOMPARE(maxDiff(t.layers[size_t(l)].residualIn, l == 0 ? ref.input : ref.layers[size_t(l - 1)].output),
                     0.f);
            QCOMPARE(maxDiff(t.layers[size_t(l)].output, ref.layers[size_t(l)].output), 0.f);
            QCOMPARE(maxDiff(t.weights(l, 1), ref.layers[size_t(l)].attention.batch[0].weights[1]), 0.f);
            // pre-norm: the attention reads LN1 of the stream (ones / zeros: zero mean, unit variance)
            const Mat<float> &a = t.layers[size_t(l)].attentionIn;
            QVERIFY(std::abs(a.row(3).mean()) < 1e-5f);
            QVERIFY(t.layers[size_t(l)].projections);
        }
        QCOMPARE(maxDiff(t.final, ref.final), 0.f);
    }

    void cutAtTheLimit()
    {
        CpuBackend cpu;
        WordVectorModel m(&cpu);
        m.setTable(toyTable());
        TraceRequest req;
        req.text = kSentence;
        req.maxTokens = 4;
        Trace<float> t;
        QVERIFY(m.trace(req, t).ok());
        QCOMPARE(int(t.tokens.size()), 4);
        QCOMPARE(t.totalTokens, 11);
        QVERIFY(t.cut());
        QVERIFY(!t.cutReason.empty());
        QCOMPARE(int(t.weights(0, 0).rows()), 4);
    }

    void messages_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("keyText");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("depth");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("tokens"); // kept for the chips even when there is no layer
        QTest::addRow("blank") << " \t\u00a0"
                               << "" << 1 << 1 << "Type a sentence above" << 0;
        QTest::addRow("no heads") << kSentence << "" << 0 << 1 << "At least one head is needed." << 11;
        QTest::addRow("stack heads") << kSentence << "" << 3 << 2 << "In a transformer stack every layer splits" << 11;
        QTest::addRow("stack cross") << kSentence << "we ship" << 1 << 2 << "The transformer stack is self-attention"
                                     << 11;
    }
    void messages()
    {
        QFETCH(QString, text);
        QFETCH(QString, keyText);
        QFETCH(int, heads);
        QFETCH(int, depth);
        QFETCH(QString, message);
        QFETCH(int, tokens);
        CpuBackend cpu;
        WordStackModel stack(&cpu);
        WordVectorModel layer(&cpu);
        WordVectorModel &m = depth > 1 ? static_cast<WordVectorModel &>(stack) : layer;
        m.setTable(toyTable());
        WordVectorSettings s;
        s.numHeads = heads;
        m.setSettings(s);
        StackModelSettings ss;
        ss.depth = depth;
        stack.setStack(ss);
        TraceRequest req;
        req.text = text.toStdString();
        req.keyText = keyText.toStdString();
        Trace<float> t;
        const Status st = m.trace(req, t);
        QVERIFY(!st.ok());
        QVERIFY2(QString::fromStdString(st.message).contains(message), st.message.c_str());
        QCOMPARE(t.numLayers(), 0);
        QCOMPARE(int(t.tokens.size()), tokens);
    }

    void noTable()
    {
        CpuBackend cpu;
        WordVectorModel m(&cpu);
        TraceRequest req;
        req.text = kSentence;
        Trace<float> t;
        const Status st = m.trace(req, t);
        QCOMPARE(st.code, StatusCode::Unavailable);
        QVERIFY(QString::fromStdString(st.message).startsWith(QStringLiteral("No word vectors loaded")));
    }
};

QTEST_APPLESS_MAIN(TestWordVectorModel)
#include "tst_wordvectormodel.moc"
