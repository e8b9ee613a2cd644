// SPDX-License-Identifier: GPL-3.0-or-later
// Weights kept in 16 bits (BF16 / F16 files, seeded BF16 shapes): the attention projections, MLP,
// embedding and LM-head matrices hold 2 bytes a weight (ModelInfo::weightBytes read back against the
// architecture), and the forward that widens them inside its products gives the float64 forward's
// values (the double model widens them once, densely) for a whole text (the blocked product path,
// several blocks of W's rows) and for appended tokens (the few-rows path). A trace's projections
// (what the views read) are widened when asked, once while held.
#include "attnviz/architecture.h"
#include "attnviz/pretrained.h"
#include "modelchecks.h"

#include <QtTest>

#include <cmath>
#include <cstring>

using namespace attnviz;
using namespace attnviz::testing;

class TestHalfWeights : public QObject {
    Q_OBJECT
private slots:
    void bytesHeld_data();
    void bytesHeld();
    void widenedProductsMatchDouble();
    void projectionsWidenedWhenAsked();
    void fewRowsMatchDouble_data();
    void fewRowsMatchDouble();
};

// Elements the forward keeps in 16 bits: token embeddings, an untied LM head, each layer's attention
// projections (q, o: H d_head x d; k, v: KV d_head x d) and MLP matrices.
static int64_t halfElements(const Architecture &a, bool untiedHead)
{
    const int64_t mlp = int64_t(a.gatedMlp ? 3 : 2) * a.dModel * a.dFeedForward;
    const int64_t attention = 2 * int64_t(a.heads + a.kvHeads) * a.dHead * a.dModel;
    return int64_t(a.vocabulary) * a.dModel * (untiedHead ? 2 : 1) + a.layers * (mlp + attention);
}

void TestHalfWeights::bytesHeld_data()
{
    QTest::addColumn<QString>("folder");
    QTest::addColumn<bool>("sixteenBits");
    QTest::newRow("llama-tiny BF16") << "llama-tiny" << true;
    QTest::newRow("llama2-tiny F16") << "llama2-tiny" << true;
    QTest::newRow("qwen3-tiny BF16") << "qwen3-tiny" << true;
    QTest::newRow("phi3-tiny BF16, fused gate_up") << "phi3-tiny" << true;
    QTest::newRow("mistral-tiny F32") << "mistral-tiny" << false;
}

void TestHalfWeights::bytesHeld()
{
    QFETCH(QString, folder);
    QFETCH(bool, sixteenBits);
    std::unique_ptr<Model> m = open(folder);
    QVERIFY(m);
    const ModelInfo i = m->info();
    const Architecture &a = i.architecture;
    QVERIFY(i.parameters > 0);
    if (!sixteenBits) {
        QCOMPARE(i.weightBytes, 4 * i.parameters);
        return;
    }
    // every parameter at 4 bytes but the 16-bit matrices at 2
    const int64_t half = halfElements(a, !a.tiedEmbeddings);
    QVERIFY(half < i.parameters);
    QCOMPARE(i.weightBytes, 4 * i.parameters - 2 * half);
}

void TestHalfWeights::widenedProductsMatchDouble()
{
    Architecture a;
    QVERIFY(seededShape("llama3.2-1b", a));
    // one layer with Llama-3.2-1B's MLP widths (down projection 8,192 -> 1,024 here: a block of its
    // rows is 128, so each task's slice of W, 256 rows on two threads, is several blocks) and small
    // heads
    a.layers = 1;
    a.window.assign(1, 0);
    a.dModel = 1024;
    a.heads = 4;
    a.kvHeads = 2;
    a.dHead = 16;
    a.rope.dims = 16;
    a.dFeedForward = 8192;
    a.vocabulary = 700;
    std::unique_ptr<Model> m;
    const Status seeded = seededPretrained(a, 5, m, "BF16");
    QVERIFY2(seeded.ok(), seeded.message.c_str());
    QCOMPARE(m->info().weightBytes, 4 * m->info().parameters - 2 * halfElements(a, !a.tiedEmbeddings));
    TraceRequest req;
    for (int i = 0; i < 12; ++i)
        req.ids.push_back((37 * i + 11) % a.vocabulary);
    Trace<float> f;
    Trace<double> d;
    QVERIFY(m->trace(req, f).ok());
    QVERIFY(m->trace(req, d).ok());
    auto rel = [](const auto &x, const auto &y) {
        return double((x.template cast<double>() - y).cwiseAbs().maxCoeff()) / std::max(1e-30, double(y.cwiseAbs().maxCoeff()));
    };
    QVERIFY2(rel(f.final, d.final) < 1e-5, qPrintable(QString::number(rel(f.final, d.final))));
    for (int l = 0; l < a.layers; ++l)
        for (int h = 0; h < a.heads; ++h)
            QVERIFY(rel(f.weights(l, h).toDense(), d.weights(l, h).toDense()) < 1e-5);
    // the last position's predictions: the LM head (tied: the 16-bit embeddings) widened per block
    const auto &pf = f.predictions.next.back();
    const auto &pd = d.predictions.next.back();
    QVERIFY(!pf.empty());
    QCOMPARE(pf.front().id, pd.front().id);
    QVERIFY(std::abs(pf.front().p - pd.front().p) < 1e-5);
    // appended tokens, one at a time (rows computed: 1, the few-rows products)
    for (int extra = 0; extra < 3; ++extra) {
        req.ids.push_back((91 * extra + 5) % a.vocabulary);
        QVERIFY(m->trace(req, f).ok());
        QVERIFY(m->trace(req, d).ok());
        QVERIFY2(rel(f.final, d.final) < 1e-5, qPrintable(QString::number(rel(f.final, d.final))));
        QCOMPARE(f.predictions.next.back().front().id, d.predictions.next.back().front().id);
    }
}

void TestHalfWeights::projectionsWidenedWhenAsked()
{
    std::unique_ptr<Model> m = open("qwen3-tiny"); // BF16, q/k norms, head_dim != d_model / heads
    QVERIFY(m);
    const Architecture a = m->info().architecture;
    TraceRequest req;
    req.ids = {3, 14, 15, 92, 65};
    Trace<float> f, g;
    Trace<double> d;
    QVERIFY(m->trace(req, f).ok());
    QVERIFY(m->trace(req, g).ok());
    QVERIFY(m->trace(req, d).ok());
    for (int l = 0; l < a.layers; ++l) {
        const ProjectionsRef<float> &ref = f.layers[size_t(l)].projections;
        QVERIFY(ref);
        QVERIFY(ref == g.layers[size_t(l)].projections); // one layer's weights, whichever trace
        const std::shared_ptr<const Projections<float>> P = ref.get();
        QVERIFY(P);
        QCOMPARE(ref.get().get(), P.get()); // widened once while held
        QCOMPARE(P->q.W.rows(), Eigen::Index(a.heads) * a.dHead);
        QCOMPARE(P->k.W.rows(), Eigen::Index(a.kvHeads) * a.dHead);
        QCOMPARE(P->o.W.cols(), Eigen::Index(a.heads) * a.dHead);
        // the values the file stores: the float64 model widened them on load
        const std::shared_ptr<const Projections<double>> D = d.layers[size_t(l)].projections.get();
        for (auto [x, y] : {std::pair<const Linear<float> *, const Linear<double> *>{&P->q, &D->q}, {&P->k, &D->k},
                            {&P->v, &D->v}, {&P->o, &D->o}}) {
            QVERIFY(x->W.size() > 0);
            QVERIFY(x->W.cast<double>() == y->W);
        }
        // a bf16 value has 8 significant bits: a float32 copy of one keeps its low 16 bits zero
        uint32_t bits = 0;
        std::memcpy(&bits, P->q.W.data(), 4);
        QCOMPARE(bits & 0xffffu, 0u);
    }
}

// Tokens appended 1 to 6 at a time (the products of a few rows by 16-bit weights, widened in
// registers): F16 (llama2-tiny) and BF16 with widths that are not multiples of 8 or 16 and an odd
// vocabulary (the remainders of each row and an odd last row).
void TestHalfWeights::fewRowsMatchDouble_data()
{
    QTest::addColumn<QString>("source");
    QTest::addColumn<int>("rows");
    for (const char *source : {"llama2-tiny", "seeded"})
        for (int rows = 1; rows <= 6; ++rows)
            QTest::addRow("%s, %d rows", source, rows) << QString::fromLatin1(source) << rows;
}

void TestHalfWeights::fewRowsMatchDouble()
{
    QFETCH(QString, source);
    QFETCH(int, rows);
    std::unique_ptr<Model> m;
    if (source == "seeded") {
        Architecture a;
        QVERIFY(seededShape("llama3.2-1b", a));
        a.layers = 2;
        a.window.assign(2, 0);
        a.dModel = 100;
        a.heads = 5;
        a.kvHeads = 1;
        a.dHead = 20;
        a.rope.dims = 20;
        a.dFeedForward = 300;
        a.vocabulary = 701;
        a.tiedEmbeddings = false;
        const Status seeded = seededPretrained(a, 9, m, "BF16");
        QVERIFY2(seeded.ok(), seeded.message.c_str());
    } else {
        m = open(source);
        QVERIFY(m);
    }
    const int V = m->info().architecture.vocabulary;
    TraceRequest req;
    for (int i = 0; i < 7; ++i)
        req.ids.push_back((53 * i + 17) % V);
    Trace<float> f;
    QVERIFY(m->trace(req, f).ok());
    for (int i = 0; i < rows; ++i)
        req.ids.push_back((29 * i + 3) % V);
    Trace<double> d;
    QVERIFY(m->trace(req, f).ok()); // the first 7 rows kept, `rows` computed
    QVERIFY(m->trace(req, d).ok());
    auto rel = [](const auto &x, const auto &y) {
        return double((x.template cast<double>() - y).cwiseAbs().maxCoeff()) / std::max(1e-30, double(y.cwiseAbs().maxCoeff()));
    };
    QVERIFY2(rel(f.final, d.final) < 1e-5, qPrintable(QString::number(rel(f.final, d.final))));
    for (size_t l = 0; l < f.layers.size(); ++l)
        QVERIFY(rel(f.layers[l].attention.batch[0].k, d.layers[l].attention.batch[0].k) < 1e-5);
    const auto &pf = f.predictions.next.back(), &pd = d.predictions.next.back();
    QCOMPARE(pf.front().id, pd.front().id);
    QVERIFY(std::abs(pf.front().p - pd.front().p) < 1e-5);
}

QTEST_APPLESS_MAIN(TestHalfWeights)
#include "tst_halfweights.moc"
