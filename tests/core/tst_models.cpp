// SPDX-License-Identifier: GPL-3.0-or-later
// Real-checkpoint models (pretrained.h) against a float64 PyTorch forward pass written from the
// published architectures (tests/fixtures/models/make_models.py): tiny random GPT-2, BERT (two
// spellings of the tensor names) and DistilBERT folders with the real vocabularies. Every layer's
// and head's attention weights, the hidden states and the predicted probabilities, in float32
// (1e-5) and float64 (1e-10); the incremental path of a causal model against a full recompute;
// the cut at the model's positions; next-token predictions computed on demand (predictAt); a trace
// typed into token by token (its matrices growing in place, Trace::room) equal to fresh ones.
#include "attnviz/parallel.h"
#include "attnviz/pretrained.h"
#include "attnviz/reads.h"
#include "modelchecks.h"
#include "../../core/src/models/forward/seedednormal.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <random>
#include <cstring>

using namespace attnviz;
using namespace attnviz::testing;

class TestModels : public QObject {
    Q_OBJECT
private slots:
    void matchesReference_data();
    void matchesReference();
    void textToIds_data();
    void textToIds();
    void info_data();
    void info();
    void incrementalEqualsFull_data();
    void incrementalEqualsFull();
    void predictAt();
    void cutAtPositions();
    void maskedKeys();
    void seededShapes();
    void seededNormalsAreTheSameEverywhere();
    void growsInPlace_data();
    void growsInPlace();
    void keepsWhatIsObserved_data();
    void keepsWhatIsObserved();
    void storesCausalWeightsLower_data();
    void storesCausalWeightsLower();
};

void TestModels::matchesReference_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("float64");
    for (const char *m : {"gpt2-tiny", "bert-tiny", "bert-tiny-legacy", "distilbert-tiny"})
        for (bool f64 : {false, true})
            QTest::addRow("%s %s", m, f64 ? "float64" : "float32") << QString::fromLatin1(m) << f64;
}

void TestModels::matchesReference()
{
    QFETCH(QString, model);
    QFETCH(bool, float64);
    std::unique_ptr<Model> m = open(model);
    QVERIFY(m);
    const QJsonArray all = cases(model);
    QVERIFY(all.size() >= 2);
    for (const QJsonValue &c : all) {
        if (float64)
            checkCase<double>(*m, c.toObject(), 1e-10);
        else
            checkCase<float>(*m, c.toObject(), 1e-5);
        if (QTest::currentTestFailed())
            return;
    }
}

void TestModels::textToIds_data()
{
    QTest::addColumn<QString>("model");
    for (const char *m : {"gpt2-tiny", "bert-tiny", "distilbert-tiny"})
        QTest::addRow("%s", m) << QString::fromLatin1(m);
}

// Text in, the model's own tokenizer: the ids the reference tokenizers gave.
void TestModels::textToIds()
{
    QFETCH(QString, model);
    std::unique_ptr<Model> m = open(model);
    QVERIFY(m);
    for (const QJsonValue &v : cases(model)) {
        const QJsonObject c = v.toObject();
        TraceRequest req;
        req.text = c.value(QStringLiteral("text")).toString().toStdString();
        Trace<float> tr;
        QVERIFY(m->trace(req, tr).ok());
        std::vector<int> ids;
        for (const TraceToken &t : tr.tokens)
            ids.push_back(t.id);
        QCOMPARE(ids, idsOf(c));
        QCOMPARE(tr.tokens.front().special, !m->info().causal); // [CLS] added by the tokenizer
    }
}

void TestModels::info_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("vocabulary");
    QTest::addColumn<int>("positions");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<qlonglong>("parameters");
    QTest::addColumn<bool>("causal");
    // parameters: embeddings + per layer (q, k, v, o with biases, 2 LayerNorms, the MLP) + heads
    const qlonglong gpt2 = 50257LL * 16 + 32 * 16 + 2 * (4 * (16 * 16 + 16) + 2 * 32 + 16 * 48 + 48 + 48 * 16 + 16) + 32;
    const qlonglong bertLayers = 2 * (4 * (16 * 16 + 16) + 2 * 32 + 16 * 32 + 32 + 32 * 16 + 16);
    const qlonglong mlm = 16 * 16 + 16 + 32 + 30522;
    QTest::addRow("gpt2") << "gpt2-tiny" << "gpt2" << 50257 << 32 << "F32" << gpt2 << true;
    QTest::addRow("bert") << "bert-tiny" << "bert" << 30522 << 64 << "F16"
                          << 30522LL * 16 + 64 * 16 + 2 * 16 + 32 + bertLayers + mlm << false;
    QTest::addRow("bert legacy") << "bert-tiny-legacy" << "bert" << 30522 << 64 << "BF16"
                                 << 30522LL * 16 + 64 * 16 + 2 * 16 + 32 + bertLayers + mlm << false;
    QTest::addRow("distilbert") << "distilbert-tiny" << "distilbert" << 30522 << 64 << "F16"
                                << 30522LL * 16 + 64 * 16 + 32 + bertLayers + mlm << false;
}

void TestModels::info()
{
    QFETCH(QString, model);
    std::unique_ptr<Model> m = open(model);
    QVERIFY(m);
    const ModelInfo i = m->info();
    QTEST(QString::fromStdString(i.family), "family");
    QCOMPARE(QString::fromStdString(i.name), model);
    QCOMPARE(i.layers, 2);
    QCOMPARE(i.heads, 4);
    QCOMPARE(i.dModel, 16);
    QCOMPARE(i.dHead, 4);
    QTEST(i.vocabulary, "vocabulary");
    QTEST(i.maxPositions, "positions");
    QTEST(QString::fromStdString(i.dtype), "dtype");
    QTEST(qlonglong(i.parameters), "parameters");
    QTEST(i.causal, "causal");
    QCOMPARE(i.maskedLm, !i.causal);
    QVERIFY(!i.tokenizer.empty());
}

void TestModels::incrementalEqualsFull_data()
{
    QTest::addColumn<QVector<int>>("before");
    QTest::addColumn<QVector<int>>("after");
    QTest::addColumn<bool>("twoBack"); // the trace handed back is the one before last (double buffer)
    QTest::addColumn<bool>("everything"); // scores kept and every position's predictions
    // with twoBack: the newest trace (of `before` less its last token) is passed as prefixFrom; its
    // shared rows are copied where it shares more than the trace handed back
    QTest::addColumn<bool>("fromNewest");
    const QVector<int> text = {464, 5044, 1422, 470, 3272, 262, 4675, 780, 340, 373, 1165, 10032, 13};
    QTest::addRow("one token appended") << text.mid(0, 12) << text << false << false << false;
    QTest::addRow("last token changed") << text << (text.mid(0, 12) << 11) << false << false << false;
    QTest::addRow("middle changed") << text << (text.mid(0, 5) << 257 << text.mid(6)) << false << false << false;
    QTest::addRow("shortened") << text << text.mid(0, 7) << false << false << false;
    QTest::addRow("unrelated") << text << QVector<int>{50256, 40, 716} << false << false << false;
    QTest::addRow("double buffered") << text.mid(0, 10) << text << true << false << false;
    QTest::addRow("one token appended, everything kept") << text.mid(0, 12) << text << false << true << false;
    QTest::addRow("middle changed, everything kept")
        << text << (text.mid(0, 5) << 257 << text.mid(6)) << false << true << false;
    QTest::addRow("shortened, everything kept") << text << text.mid(0, 7) << false << true << false;
    // fromNewest: the trace handed back is of `before` less 3 tokens, the newest of `before` less 1
    QTest::addRow("double buffered, prefix from the newest") << text.mid(0, 13) << text << true << false << true;
    QTest::addRow("double buffered, prefix from the newest, everything kept")
        << text.mid(0, 13) << text << true << true << true;
    QTest::addRow("double buffered, the newest shares less")
        << text.mid(0, 13) << (text.mid(0, 3) << 11) << true << false << true;
    QTest::addRow("double buffered, the newest last token changed")
        << text << (text.mid(0, 12) << 11) << true << true << true;
}

void TestModels::incrementalEqualsFull()
{
    QFETCH(QVector<int>, before);
    QFETCH(QVector<int>, after);
    QFETCH(bool, twoBack);
    QFETCH(bool, everything);
    QFETCH(bool, fromNewest);
    std::unique_ptr<Model> m = open(QStringLiteral("gpt2-tiny"));
    QVERIFY(m);
    TraceRequest req;
    req.keepScores = everything;
    req.allPredictions = everything;
    req.ids = std::vector<int>(before.begin(), before.end());
    Trace<float> kept, other, full;
    if (fromNewest) // kept shares less with `after` than the newest does: it is of a text cut short
        req.ids.resize(req.ids.size() - 3);
    QVERIFY(m->trace(req, kept).ok());
    if (twoBack) { // kept is now two calls old
        req.ids = std::vector<int>(before.begin(), before.end());
        req.ids.pop_back();
        QVERIFY(m->trace(req, other).ok());
    }
    req.ids = std::vector<int>(after.begin(), after.end());
    if (fromNewest)
        req.prefixFrom = &other;
    const Trace<float> newest = other;
    QVERIFY(m->trace(req, kept).ok());
    req.prefixFrom = nullptr;
    QVERIFY(m->trace(req, full).ok());
    QCOMPARE(traceDifference(other, newest), 0.0); // only read
    QCOMPARE(kept.tokens.size(), size_t(after.size()));
    QCOMPARE(kept.layers[0].attention.batch[0].scores.size(), everything ? size_t(kept.numHeads()) : size_t(0));
    QCOMPARE(kept.predictions.next.front().empty(), !everything && after.size() > 1);
    QCOMPARE(kept.predictions.next.back().size(), size_t(10));
    for (size_t i = 0; i < full.predictions.next.size(); ++i) // every position a full trace has, and its logits' sum
        if (!full.predictions.next[i].empty()) {
            QCOMPARE(kept.predictions.next[i].size(), full.predictions.next[i].size());
            QVERIFY(std::abs(kept.predictions.logNormalizer[i] - full.predictions.logNormalizer[i]) < 1e-4);
        }
    const double diff = traceDifference(kept, full);
    QVERIFY2(diff < 1e-5, qPrintable(QString::number(diff))); // float rounding of other product shapes
    // float64 too, exactly the same arithmetic
    Trace<double> kd, fd;
    req.ids = std::vector<int>(before.begin(), before.end());
    QVERIFY(m->trace(req, kd).ok());
    req.ids = std::vector<int>(after.begin(), after.end());
    QVERIFY(m->trace(req, kd).ok());
    QVERIFY(m->trace(req, fd).ok());
    QVERIFY(traceDifference(kd, fd) < 1e-13);
    // a trace of another precision or model is never taken for this one's
    Trace<float> fresh;
    fresh.producer = kd.producer;
    QVERIFY(m->trace(req, fresh).ok());
    QVERIFY(traceDifference(fresh, full) < 1e-5);
}

void TestModels::predictAt()
{
    std::unique_ptr<Model> m = open(QStringLiteral("gpt2-tiny"));
    QVERIFY(m);
    TraceRequest req;
    req.ids = {464, 5044, 1422, 470, 3272, 262, 4675, 780};
    Trace<float> lazy, all;
    QVERIFY(m->trace(req, lazy).ok());
    req.allPredictions = true;
    QVERIFY(m->trace(req, all).ok());
    const int t = int(req.ids.size());
    QCOMPARE(int(lazy.predictions.next.size()), t);
    QCOMPARE(lazy.predictions.topK, 10);
    for (int i = 0; i + 1 < t; ++i) { // only the last position is computed by trace()
        QVERIFY(lazy.predictions.next[size_t(i)].empty());
        QVERIFY(std::isnan(lazy.predictions.actualNext[size_t(i)]));
        QCOMPARE(all.predictions.next[size_t(i)].size(), size_t(10));
        QVERIFY(!std::isnan(all.predictions.actualNext[size_t(i)]));
    }
    for (int i = t - 1; i >= 0; --i)
        QVERIFY(m->predictAt(lazy, i).ok());
    QVERIFY2(traceDifference(lazy, all) < 1e-6, qPrintable(QString::number(traceDifference(lazy, all))));
    for (int i = 0; i < t; ++i)
        for (size_t k = 0; k < 10; ++k) {
            QCOMPARE(lazy.predictions.next[size_t(i)][k].id, all.predictions.next[size_t(i)][k].id);
            QCOMPARE(lazy.predictions.next[size_t(i)][k].token, all.predictions.next[size_t(i)][k].token);
        }
    // an on-demand position survives an appended token (its next token is unchanged) ...
    Trace<float> fresh;
    req.allPredictions = false;
    QVERIFY(m->trace(req, fresh).ok());
    QVERIFY(m->predictAt(fresh, 2).ok());
    QVERIFY(m->predictAt(fresh, t - 2).ok());
    req.ids.push_back(340);
    QVERIFY(m->trace(req, fresh).ok());
    QCOMPARE(fresh.predictions.next[2].size(), size_t(10));
    QVERIFY(std::abs(fresh.predictions.actualNext[2] - all.predictions.actualNext[2]) < 1e-6);
    // ... and so does the one before the new token: its top tokens, and the probability of the token
    // that now follows it, from its kept normalizer (as a full trace with every position says)
    Trace<float> longer;
    req.allPredictions = true;
    QVERIFY(m->trace(req, longer).ok());
    req.allPredictions = false;
    QCOMPARE(fresh.predictions.next[size_t(t - 1)].size(), size_t(10));
    QVERIFY(std::abs(fresh.predictions.actualNext[size_t(t - 1)] - longer.predictions.actualNext[size_t(t - 1)]) <
            1e-6);
    QVERIFY(std::isnan(fresh.predictions.actualNext[size_t(t)]));
    // float64 as well
    Trace<double> d;
    QVERIFY(m->trace(req, d).ok());
    QVERIFY(m->predictAt(d, 0).ok());
    QVERIFY(std::abs(d.predictions.actualNext[0] - all.predictions.actualNext[0]) < 1e-5);
    // refused: a position outside the trace, a trace of another model or precision, a masked LM
    QCOMPARE(m->predictAt(fresh, t + 1).code, StatusCode::InvalidInput);
    QCOMPARE(m->predictAt(fresh, -1).code, StatusCode::InvalidInput);
    std::unique_ptr<Model> other = open(QStringLiteral("gpt2-tiny"));
    QCOMPARE(other->predictAt(fresh, 0).code, StatusCode::InvalidInput);
    Trace<double> notMine;
    QCOMPARE(m->predictAt(notMine, 0).code, StatusCode::InvalidInput);
    std::unique_ptr<Model> b = open(QStringLiteral("bert-tiny"));
    QCOMPARE(b->predictAt(fresh, 0).code, StatusCode::Unavailable);
}

void TestModels::cutAtPositions()
{
    std::unique_ptr<Model> m = open(QStringLiteral("gpt2-tiny"));
    QVERIFY(m);
    TraceRequest req;
    for (int i = 0; i < 40; ++i)
        req.ids.push_back(1000 + i);
    Trace<float> tr;
    QVERIFY(m->trace(req, tr).ok());
    QCOMPARE(int(tr.tokens.size()), 32);
    QCOMPARE(tr.totalTokens, 40);
    QVERIFY(tr.cut());
    QVERIFY(QString::fromStdString(tr.cutReason).contains(QStringLiteral("at most 32 tokens")));
    QCOMPARE(tr.layers[0].attention.batch[0].weights[0].rows(), 32);
    // a request's own limit
    req.maxTokens = 5;
    QVERIFY(m->trace(req, tr).ok());
    QCOMPARE(int(tr.tokens.size()), 5);
    // the first 5 equal a trace of those 5 alone
    Trace<float> five;
    req.ids.resize(5);
    req.maxTokens = 0;
    QVERIFY(m->trace(req, five).ok());
    QVERIFY(five.cutReason.empty());
    QVERIFY2(traceDifference(tr, five) < 1e-5, qPrintable(QString::number(traceDifference(tr, five))));
    // BERT keeps its closing [SEP] when cut
    std::unique_ptr<Model> b = open(QStringLiteral("bert-tiny"));
    QVERIFY(b);
    TraceRequest br;
    br.ids = {101, 1996, 3007, 1997, 2605, 2003, 103, 1012, 102};
    br.maxTokens = 4;
    Trace<float> bt;
    QVERIFY(b->trace(br, bt).ok());
    QCOMPARE(int(bt.tokens.size()), 4);
    QCOMPARE(bt.tokens.back().id, 102);
}

void TestModels::maskedKeys()
{
    std::unique_ptr<Model> b = open(QStringLiteral("bert-tiny"));
    QVERIFY(b);
    TraceRequest req;
    req.ids = {101, 1996, 3007, 1997, 2605, 2003, 103, 1012, 102};
    req.paddedKeys = {3};
    req.maskedCells = {{1, 2}};
    Trace<double> tr;
    QVERIFY(b->trace(req, tr).ok());
    for (int l = 0; l < tr.numLayers(); ++l)
        for (int h = 0; h < tr.numHeads(); ++h) {
            const Mat<double> &w = tr.weights(l, h);
            QCOMPARE(w.col(3).cwiseAbs().maxCoeff(), 0.0);
            QCOMPARE(w(1, 2), 0.0);
            QVERIFY((w.rowwise().sum().array() - 1.0).abs().maxCoeff() < 1e-12);
        }
    QCOMPARE(tr.paddedKeys, req.paddedKeys);
    QCOMPARE(int(tr.layers[0].attention.batch[0].mask(5, 3)), 1);
    // a causal model: the cell masks, and changing them recomputes everything
    std::unique_ptr<Model> g = open(QStringLiteral("gpt2-tiny"));
    QVERIFY(g);
    TraceRequest gr;
    gr.ids = {464, 5044, 1422, 470, 3272};
    Trace<double> a, fullA;
    QVERIFY(g->trace(gr, a).ok());
    gr.paddedKeys = {0};
    QVERIFY(g->trace(gr, a).ok());
    QVERIFY(g->trace(gr, fullA).ok());
    QVERIFY(traceDifference(a, fullA) < 1e-13);
    // query 0's only key is masked: its weights are all zero and it is listed
    QCOMPARE(a.weights(0, 0).row(0).cwiseAbs().maxCoeff(), 0.0);
    QCOMPARE(a.layers[0].attention.batch[0].fullyMaskedRows, std::vector<int>{0});
    QVERIFY(std::abs(a.weights(1, 2).row(3).sum() - 1.0) < 1e-12);
}

// GPT-2's family with 2 layers of 4 heads and a vocabulary of 1,000: a seeded model that runs fast.
static Architecture smallGpt2(int dModel, int dFeedForward, int maxPositions)
{
    Architecture c;
    seededShape("gpt2-small", c);
    c.layers = 2;
    c.window.assign(2, 0);
    c.dModel = dModel;
    c.heads = c.kvHeads = 4;
    c.dHead = dModel / 4;
    c.dFeedForward = dFeedForward;
    c.vocabulary = 1000;
    c.maxPositions = maxPositions;
    return c;
}

// Seeded weights' normal numbers are the same in every build (compiler, flags, standard library): a
// seed's first draws and its 100,000th, as any of g++ -O0 / -O3 and clang under the sanitizers drew
// them.
void TestModels::seededNormalsAreTheSameEverywhere()
{
    std::mt19937_64 g(7), h(7);
    SeededNormal<double> d(0.0, 0.02);
    SeededNormal<float> f(0.0f, 0.02f);
    const double wantD[] = {0.017453903338709491, -0.01945125755303749, 0.010946199852971031};
    const float wantF[] = {0.0174539033f, -0.0194512568f, 0.0109461984f};
    for (int i = 0; i < 3; ++i) {
        QCOMPARE(d(g), wantD[i]);
        QCOMPARE(f(h), wantF[i]);
    }
    double lastD = 0;
    float lastF = 0;
    for (int i = 3; i < 100000; ++i) {
        lastD = d(g);
        lastF = f(h);
    }
    QCOMPARE(lastD, -0.0079889630571334542);
    QCOMPARE(lastF, -0.00798896514f);
    std::mt19937_64 e(11);
    SeededNormal<double> wide(-1.5, 3.0);
    for (int i = 0; i < 99999; ++i)
        (void)wide(e);
    QCOMPARE(wide(e), -2.0653501923635917);
}

void TestModels::seededShapes()
{
    const Architecture c = smallGpt2(64, 256, 64);
    std::unique_ptr<Model> m;
    QVERIFY(seededPretrained(c, 7, m).ok());
    QCOMPARE(m->info().family, std::string("gpt2"));
    std::vector<TraceToken> toks;
    QCOMPARE(m->tokenize("no tokenizer", toks).code, StatusCode::Unavailable);
    TraceRequest req;
    req.ids = {1, 2, 3, 999};
    Trace<float> tr;
    QVERIFY(m->trace(req, tr).ok());
    QCOMPARE(tr.tokens[3].text, std::string("#999"));
    QCOMPARE(int(tr.predictions.next[3].size()), 10);
    req.ids = {1000};
    QCOMPARE(m->trace(req, tr).code, StatusCode::InvalidInput);
    // the same seed gives the same weights; float64 agrees with float32
    std::unique_ptr<Model> again;
    QVERIFY(seededPretrained(c, 7, again).ok());
    req.ids = {5, 6, 7};
    Trace<float> a, b;
    Trace<double> d;
    QVERIFY(m->trace(req, a).ok());
    QVERIFY(again->trace(req, b).ok());
    QVERIFY(again->trace(req, d).ok());
    QCOMPARE(traceDifference(a, b), 0.0);
    QVERIFY((a.final.cast<double>() - d.final).cwiseAbs().maxCoeff() < 1e-4);
}

// Where every (t, d) stage matrix of a trace keeps its numbers (the ones that grow with the text).
std::vector<const float *> stageData(const Trace<float> &tr)
{
    std::vector<const float *> r = {tr.embeddings.data(), tr.input.data(), tr.final.data()};
    for (const LayerTrace<float> &l : tr.layers) {
        const SequenceResult<float> &s = l.attention.batch.front();
        for (const Mat<float> *m : {&l.residualIn, &l.attentionIn, &l.afterAttention, &l.output, &s.q, &s.k, &s.v,
                                    &s.context, &s.output})
            r.push_back(m->data());
    }
    return r;
}

void TestModels::growsInPlace_data()
{
    QTest::addColumn<QVector<int>>("steps"); // tokens added (or, negative, taken back) at each keystroke
    QTest::addColumn<bool>("copies");        // each keystroke computes into a copy of the newest trace
    QTest::addRow("typing") << QVector<int>(90, 1) << false;
    QVector<int> back;
    for (int i = 0; i < 30; ++i)
        back << 1 << 2 << -1;
    QTest::addRow("typing, a token taken back now and then") << back << false;
    QTest::addRow("every trace on screen: copies") << QVector<int>(20, 1) << true;
}

// The window's typing: two traces computed in turn (the one handed back two keystrokes old, the
// newest passed as prefixFrom), each compared with a fresh trace of the same tokens. A width whose
// spare rows are worth holding (d 512: from 8 spare rows), so the stage matrices grow into the room
// their trace holds (glibc) instead of moving.
void TestModels::growsInPlace()
{
    QFETCH(QVector<int>, steps);
    QFETCH(bool, copies);
    // one thread: where the pool's helpers allocate their temporaries (their own malloc arenas or the
    // caller's, as the scheduler decides on a busy machine) is not what this measures
    struct OneThread {
        int was = coreThreads();
        OneThread() { setCoreThreads(1); }
        ~OneThread() { setCoreThreads(was); }
    } oneThread;
    const Architecture c = smallGpt2(512, 512, 256);
    std::unique_ptr<Model> m;
    QVERIFY(seededPretrained(c, 11, m).ok());
    TraceRequest req;
    req.ids = {1, 2, 3};
    Trace<float> traces[2];
    QVERIFY(m->trace(req, traces[0]).ok());
    int newest = 0, stayed = 0, grown = 0;
    size_t held = 0; // the most placeholders a trace held
    for (int k = 0; k < steps.size(); ++k) {
        for (int i = 0; i < steps[k]; ++i)
            req.ids.push_back(int(req.ids.size() * 37 % 997));
        for (int i = 0; i < -steps[k]; ++i)
            req.ids.pop_back();
        Trace<float> &out = traces[1 - newest];
        if (copies) {
            out = traces[newest];
            QCOMPARE(out.room.size(), size_t(0)); // the copy's matrices are elsewhere
        }
        req.prefixFrom = &traces[newest];
        const std::vector<const float *> before = stageData(out);
        const int had = int(out.tokens.size());
        QVERIFY(m->trace(req, out).ok());
        if (int(req.ids.size()) > had && had > 0 && !copies) {
            const std::vector<const float *> after = stageData(out);
            for (size_t i = 0; i < after.size(); ++i)
                stayed += after[i] == before[i] ? 1 : 0;
            grown += int(after.size());
        }
        held = std::max(held, out.room.size());
        newest = 1 - newest;
        Trace<float> fresh;
        req.prefixFrom = nullptr;
        QVERIFY(m->trace(req, fresh).ok());
        QCOMPARE(out.embeddings.rows(), Eigen::Index(req.ids.size()));
        const double diff = traceDifference(out, fresh);
        QVERIFY2(diff < 1e-5, qPrintable(QStringLiteral("keystroke %1: %2").arg(k).arg(diff)));
    }
    // a moved trace keeps its room (its matrices' memory moves with it)
    const size_t now = traces[newest].room.size();
    Trace<float> moved = std::move(traces[newest]);
    QCOMPARE(moved.room.size(), now);
    QCOMPARE(traces[newest].room.size(), size_t(0));
    // With glibc's malloc (not a sanitizer's, which holds no placeholders: same values), most growths
    // happen in place (without a placeholder after it, a matrix moves to grow); not those at a room's
    // end (a tail under 16 KiB is not held) nor a placeholder that landed elsewhere.
    if (GrowthRoom::heldInThisBuild() && !copies) {
        QVERIFY(held > 0);
        qInfo("%d of %d growths in place, up to %zu placeholders", stayed, grown, held);
        QVERIFY2(stayed * 2 >= grown, qPrintable(QStringLiteral("%1 of %2 in place").arg(stayed).arg(grown)));
    }
}

void TestModels::keepsWhatIsObserved_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("layer"); // the layer whose stages are observed; -1: no layer's (Observe::stages off)
    for (const char *m : {"gpt2-tiny", "llama-tiny", "qwen3-tiny", "mistral-tiny", "gemma3-tiny"}) {
        QTest::addRow("%s, layer 1", m) << QString::fromLatin1(m) << 1;
        QTest::addRow("%s, no layer's stages", m) << QString::fromLatin1(m) << -1;
    }
}

// The whole trace of `text` with what `o` leaves out emptied: what the CPU keeps for a request that
// observes `o` (the observed layers' weights and their mean; every layer's k, v and mask, k and v
// per key/value head in a layer whose stages are left out).
static Trace<float> observedPart(Model &m, const std::string &text, const Observe &o)
{
    TraceRequest req;
    req.text = text;
    Trace<float> t;
    if (!m.trace(req, t).ok() || !t.observed.everything())
        return {};
    for (int l = 0; l < t.numLayers(); ++l) {
        if (o.stages && o.layer(l))
            continue;
        LayerTrace<float> &lt = t.layers[size_t(l)];
        if (!o.layer(l)) {
            lt.attention.batch[0].weights.clear();
            lt.attention.batch[0].weightsAvg.resize(0, 0);
        }
        for (Mat<float> *s : {&lt.residualIn, &lt.attentionIn, &lt.afterAttention, &lt.output, &lt.attention.batch[0].q,
                              &lt.attention.batch[0].context, &lt.attention.batch[0].output,
                              &lt.attention.batch[0].qPre, &lt.attention.batch[0].kPre})
            s->resize(0, 0);
        const int kv = lt.attention.kvHeads, dh = lt.attention.dHead, group = lt.attention.numHeads / kv;
        if (group > 1)
            for (Mat<float> *s : {&lt.attention.batch[0].k, &lt.attention.batch[0].v}) {
                Mat<float> own(s->rows(), kv * dh); // the first query head's copy of each key/value head
                for (int g = 0; g < kv; ++g)
                    own.middleCols(g * dh, dh) = s->middleCols(g * group * dh, dh);
                *s = own;
            }
    }
    return t;
}

// A CPU trace asked to observe part of the model keeps the observed layers' weights, their mean and
// (where asked) stages, and every layer's k, v and mask; all equal to a whole trace's: fresh, typed
// on word by word (double buffered, the newest as prefixFrom: the prefix reused), and asked next for
// another layer (computed again) or for everything.
void TestModels::keepsWhatIsObserved()
{
    QFETCH(QString, model);
    QFETCH(int, layer);
    std::unique_ptr<Model> m = open(model);
    QVERIFY(m);
    QVERIFY(m->info().layers >= 2);
    Observe o;
    if (layer >= 0)
        o.layers = {layer};
    else
        o.stages = false;
    const std::vector<std::string> words = {"The", " cat", " sat", " on", " the", " mat", " because", " it", " was",
                                            " tired", ",", " and", " then"};
    TraceRequest req;
    req.observe = o;
    Trace<float> traces[2];
    int newest = -1;
    for (size_t k = 0; k < words.size(); ++k) {
        req.text += words[k];
        Trace<float> &out = traces[newest == 0 ? 1 : 0];
        req.prefixFrom = newest >= 0 ? &traces[newest] : nullptr;
        QVERIFY(m->trace(req, out).ok());
        newest = newest == 0 ? 1 : 0;
        QCOMPARE(out.observed.layers, o.layers);
        QCOMPARE(out.observed.stages, o.stages);
        const Trace<float> want = observedPart(*m, req.text, o);
        QVERIFY(want.numLayers() == m->info().layers);
        for (int l = 0; l < out.numLayers(); ++l) {
            const SequenceResult<float> &s = out.layers[size_t(l)].attention.batch[0];
            QCOMPARE(out.layers[size_t(l)].output.rows(), l == layer ? Eigen::Index(out.tokens.size()) : Eigen::Index(0));
            QCOMPARE(s.k.rows(), Eigen::Index(out.tokens.size()));
            QCOMPARE(s.weights.size(), o.layer(l) ? size_t(m->info().heads) : size_t(0));
            QCOMPARE(s.weightsAvg.rows(), o.layer(l) ? Eigen::Index(out.tokens.size()) : Eigen::Index(0));
        }
        const double diff = traceDifference(out, want);
        QVERIFY2(diff < 1e-5, qPrintable(QStringLiteral("after \"%1\": %2").arg(QString::fromStdString(req.text)).arg(diff)));
    }
    // another layer: the trace handed back does not hold it, so it is computed again
    Trace<float> &out = traces[1 - newest];
    req.prefixFrom = &traces[newest];
    Observe other;
    other.layers = {0};
    req.observe = other;
    QVERIFY(m->trace(req, out).ok());
    QCOMPARE(out.observed.layers, other.layers);
    double diff = traceDifference(out, observedPart(*m, req.text, other));
    QVERIFY2(diff < 1e-5, qPrintable(QString::number(diff)));
    // everything, from a trace that holds part: whole again
    req.observe = Observe();
    req.prefixFrom = nullptr;
    QVERIFY(m->trace(req, out).ok());
    QVERIFY(out.observed.everything());
    diff = traceDifference(out, observedPart(*m, req.text, Observe()));
    QVERIFY2(diff < 1e-5, qPrintable(QString::number(diff)));
    // part again, a word longer, continuing the whole trace (its k and v rows laid out per key/value
    // head where the stages are left out), then from it as prefixFrom into a fresh trace
    const Trace<float> whole = out;
    req.observe = o;
    req.text += " ran";
    QVERIFY(m->trace(req, out).ok());
    diff = traceDifference(out, observedPart(*m, req.text, o));
    QVERIFY2(diff < 1e-5, qPrintable(QStringLiteral("continued: %1").arg(diff)));
    // norm-weighted attention reads the values in either layout
    const Trace<float> all = observedPart(*m, req.text, Observe());
    for (int l = 0; l < out.numLayers(); ++l) {
        if (!o.layer(l))
            continue;
        Mat<float> got, want;
        QVERIFY(normWeighted(out, l, -1, got).ok());
        QVERIFY(normWeighted(all, l, -1, want).ok());
        QVERIFY2((got - want).cwiseAbs().maxCoeff() < 1e-5f, qPrintable(QStringLiteral("layer %1").arg(l)));
    }
    Trace<float> fresh;
    req.prefixFrom = &whole;
    QVERIFY(m->trace(req, fresh).ok());
    diff = traceDifference(fresh, observedPart(*m, req.text, o));
    QVERIFY2(diff < 1e-5, qPrintable(QStringLiteral("from a whole prefix: %1").arg(diff)));
    req.prefixFrom = nullptr;
    req.text.resize(req.text.size() - 4);
    // scores kept: every stage is (the kept rows' scores against new keys read their q)
    req.observe = o;
    req.keepScores = true;
    QVERIFY(m->trace(req, out).ok());
    QVERIFY(out.observed.everything());
    QCOMPARE(out.layers.back().output.rows(), Eigen::Index(out.tokens.size()));
}

void TestModels::storesCausalWeightsLower_data()
{
    QTest::addColumn<QString>("model");
    for (const char *m : {"gpt2-tiny", "llama-tiny", "mistral-tiny", "bert-tiny"})
        QTest::addRow("%s", m) << QString::fromLatin1(m);
}

// A causal model's trace stores each head's weights and their mean lower: what each query sees,
// t (t + 1) / 2 values, read as the whole matrix with 0 above the diagonal. A bidirectional model's
// are whole. (Their values are checked against the references in matchesReference.)
void TestModels::storesCausalWeightsLower()
{
    QFETCH(QString, model);
    std::unique_ptr<Model> m = open(model);
    QVERIFY(m);
    TraceRequest req;
    req.text = "The cat sat on the mat because it was warm and the dog was not";
    Trace<float> tr;
    QVERIFY(m->trace(req, tr).ok());
    const bool causal = m->info().causal;
    QCOMPARE(causal, !model.startsWith(QLatin1String("bert")));
    const Eigen::Index t = Eigen::Index(tr.tokens.size());
    QVERIFY(t > 10);
    for (int l = 0; l < tr.numLayers(); ++l)
        for (int h = -1; h < tr.numHeads(); ++h) {
            const WeightMatrix<float> &w = tr.weights(l, h);
            QCOMPARE(w.lower(), causal);
            QCOMPARE(w.rows(), t);
            QCOMPARE(w.cols(), t);
            QCOMPARE(w.storedSize(), causal ? t * (t + 1) / 2 : t * t);
            const Mat<float> d = w.toDense();
            for (Eigen::Index i = 0; i < t; ++i) {
                QVERIFY(std::abs(d.row(i).sum() - 1.0f) < 1e-5f);
                if (causal && i + 1 < t)
                    QCOMPARE(d.row(i).tail(t - i - 1).cwiseAbs().maxCoeff() + 0.0f, 0.0f);
            }
        }
}

QTEST_GUILESS_MAIN(TestModels)
#include "tst_models.moc"
