// SPDX-License-Identifier: GPL-3.0-or-later
// Head-role scores and attention rollout (headroles.h) on hand-made attention patterns whose scores
// are known, and on a real (tiny) model end to end; every score and long-context reading of a trace
// that keeps no weights (read through AttentionTiles) equals the same reading computed here from the
// full matrices of a trace that keeps them; the retrieval score (needleprobe.h) on a hand-built case
// and the needle probe on a tiny model.
#include "testpaths.h"
#include "attnviz/headroles.h"
#include "attnviz/needleprobe.h"
#include "attnviz/reads.h"
#include "attnviz/pretrained.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace attnviz;

namespace {

// A one-layer trace with the given per-head weights over tokens with the given ids.
Trace<double> traceOf(const std::vector<int> &ids, const std::vector<Mat<double>> &heads)
{
    Trace<double> t;
    for (int id : ids) {
        TraceToken tok;
        tok.id = id;
        t.tokens.push_back(tok);
    }
    LayerTrace<double> l;
    l.attention.numHeads = int(heads.size());
    l.attention.batch.resize(1);
    l.attention.batch[0].weights.assign(heads.begin(), heads.end());
    Mat<double> avg = Mat<double>::Zero(heads[0].rows(), heads[0].cols());
    for (const auto &h : heads)
        avg += h / double(heads.size());
    l.attention.batch[0].weightsAvg = avg;
    t.layers.push_back(l);
    return t;
}

Mat<double> previousHead(int n)
{
    Mat<double> m = Mat<double>::Zero(n, n);
    m(0, 0) = 1;
    for (int i = 1; i < n; ++i)
        m(i, i - 1) = 1;
    return m;
}

Mat<double> sinkHead(int n)
{
    Mat<double> m = Mat<double>::Zero(n, n);
    m.col(0).setOnes();
    return m;
}

} // namespace

class TestHeadRoles : public QObject {
    Q_OBJECT
private slots:
    void knownPatterns();
    void induction();
    void rollout();
    void onATinyModel();
    void overACorpus();
    void corpusRefusals();
    void longReadingsKnown();
    void readingsThroughTiles_data();
    void readingsThroughTiles();
    void retrievalScoreHandBuilt();
    void needleProbeOnATinyModel();
};

void TestHeadRoles::knownPatterns()
{
    const Trace<double> t = traceOf({5, 7, 5, 7}, {previousHead(4), sinkHead(4)});
    const Mat<double> prev = previousTokenScores(t), first = firstTokenScores(t), same = sameTokenScores(t);
    QCOMPARE(prev(0, 0), 1.0);
    QCOMPARE(prev(0, 1), 1.0 / 3);
    QCOMPARE(first(0, 0), 1.0 / 3);
    QCOMPARE(first(0, 1), 1.0);
    // queries 2 (id 5, seen at 0) and 3 (id 7, seen at 1): the previous-token head looks at 1 and 2
    QCOMPARE(same(0, 0), 0.0);
    QCOMPARE(same(0, 1), 0.5); // query 2 puts all on 0 (the same id); query 3 too (a different id)
    // no repeated token: NaN, not 0
    QVERIFY(std::isnan(sameTokenScores(traceOf({1, 2, 3}, {previousHead(3)}))(0, 0)));
    // self: the diagonal from query 1 on; a NaN cell (a fully masked row) is left out
    Mat<double> diag = 0.25 * Mat<double>::Identity(4, 4);
    diag(3, 3) = std::numeric_limits<double>::quiet_NaN();
    const Mat<double> self = selfScores(traceOf({1, 2, 3, 4}, {previousHead(4), sinkHead(4), diag}));
    QCOMPARE(self(0, 0), 0.0);
    QCOMPARE(self(0, 1), 0.0);
    QCOMPARE(self(0, 2), 0.25); // queries 1 and 2
    // one token: no query past 0, NaN
    QVERIFY(std::isnan(selfScores(traceOf({1}, {previousHead(1)}))(0, 0)));
}

void TestHeadRoles::induction()
{
    const int L = 6, off = 1, n = off + 2 * L;
    Mat<double> ind = Mat<double>::Zero(n, n);
    for (int i = 0; i < n; ++i)
        ind(i, i >= off + L ? i - L + 1 : 0) = 1;
    std::vector<int> ids = {50256};
    for (int r = 0; r < 2; ++r)
        for (int j = 0; j < L; ++j)
            ids.push_back(100 + j);
    const Trace<double> t = traceOf(ids, {ind, previousHead(n)});
    const Mat<double> s = inductionScores(t, off, L);
    QCOMPARE(s(0, 0), 1.0);
    QCOMPARE(s(0, 1), 0.0);
    // a sliding window (the forward's mask): L keys reach the first copy's successor, L - 1 do not
    // (no score: NaN, not 0)
    const auto windowOf = [&](int w) {
        Trace<double> windowed = t;
        BoolMat &mask = windowed.layers[0].attention.batch[0].mask;
        mask = BoolMat::Zero(n, n);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j)
                mask(i, j) = j > i || j <= i - w;
        windowed.layers[0].attention.window = w;
        windowed.layers[0].attention.causal = true;
        return windowed;
    };
    const Mat<double> reach = inductionScores(windowOf(L), off, L);
    QCOMPARE(reach(0, 0), 1.0);
    QCOMPARE(reach(0, 1), 0.0);
    const Mat<double> none = inductionScores(windowOf(L - 1), off, L);
    QVERIFY(std::isnan(none(0, 0)) && std::isnan(none(0, 1)));
    // Gemma 2's local layer (a 4-token window) against its global one, on the probe of 50 tokens
    std::unique_ptr<Model> m;
    QVERIFY(openPretrained(ATTNVIZ_FIXTURE("/models/gemma2-tiny"), {}, m).ok());
    TraceRequest req;
    req.text = "the cat sat";
    Trace<float> tr;
    QVERIFY(m->trace(req, tr).ok());
    QCOMPARE(tr.layers[0].attention.window, 4);
    QCOMPARE(tr.layers[1].attention.window, 0);
    HeadRoleScores roles;
    QVERIFY(headRoles(*m, tr, roles).ok());
    for (int h = 0; h < roles.induction.cols(); ++h) {
        QVERIFY(std::isnan(roles.induction(0, h)));
        QVERIFY(std::isfinite(roles.induction(1, h)) && roles.induction(1, h) > 0);
    }
}

void TestHeadRoles::rollout()
{
    // two layers over 2 tokens: A1 = [[1,0],[0.5,0.5]], A2 = [[1,0],[1,0]]
    Mat<double> a1(2, 2), a2(2, 2);
    a1 << 1, 0, 0.5, 0.5;
    a2 << 1, 0, 1, 0;
    Trace<double> t = traceOf({1, 2}, {a1});
    t.layers.push_back(traceOf({1, 2}, {a2}).layers[0]);
    const std::vector<Mat<double>> r = attentionRollout(t);
    QCOMPARE(int(r.size()), 2);
    Mat<double> h1(2, 2), h2(2, 2);
    h1 << 1, 0, 0.25, 0.75; // 0.5 A1 + 0.5 I
    h2 << 1, 0, 0.5, 0.5;   // 0.5 A2 + 0.5 I
    QVERIFY((r[0] - h1).cwiseAbs().maxCoeff() < 1e-15);
    QVERIFY((r[1] - h2 * h1).cwiseAbs().maxCoeff() < 1e-15);
    QVERIFY((r[1].rowwise().sum().array() - 1).abs().maxCoeff() < 1e-15);

    // rows summing to norms (a norm-weighted trace) are taken as shares: the same rollout
    Mat<double> n1 = a1, n2 = a2;
    n1.row(0) *= 3.0;
    n1.row(1) *= 0.2;
    n2 *= 7.5;
    Trace<double> tn = traceOf({1, 2}, {n1});
    tn.layers.push_back(traceOf({1, 2}, {n2}).layers[0]);
    const std::vector<Mat<double>> rn = attentionRollout(tn);
    QVERIFY((rn[0] - h1).cwiseAbs().maxCoeff() < 1e-15);
    QVERIFY((rn[1] - h2 * h1).cwiseAbs().maxCoeff() < 1e-15);
}

void TestHeadRoles::onATinyModel()
{
    std::unique_ptr<Model> m;
    const Status st = openPretrained(ATTNVIZ_FIXTURE("/models/gpt2-tiny"), {}, m);
    QVERIFY2(st.ok(), st.message.c_str());
    TraceRequest req;
    req.text = "the cat sat on the mat and the cat sat";
    Trace<float> tr;
    QVERIFY(m->trace(req, tr).ok());
    HeadRoleScores s;
    QVERIFY(headRoles(*m, tr, s).ok());
    for (const Mat<double> *x : {&s.previousToken, &s.firstToken, &s.sameToken, &s.induction}) {
        QCOMPARE(x->rows(), 2);
        QCOMPARE(x->cols(), 4);
        QVERIFY(x->allFinite());
        QVERIFY(x->minCoeff() >= 0 && x->maxCoeff() <= 1);
    }
    // the probe fits the 32 positions: <|endoftext|> + 15 tokens twice
    const InductionProbe p = inductionProbe(m->info(), *m, 15);
    QCOMPARE(int(p.ids.size()), 31);
    QCOMPARE(p.ids.front(), 50256);
    QCOMPARE(p.ids[1], p.ids[16]);
    // Qwen's vocabulary holds its specials (<|endoftext|> 151643, the chat tokens) and padding rows
    // after the ordinary tokens: the probe starts with <|endoftext|> and draws below it
    {
        std::unique_ptr<Model> qwen;
        QVERIFY(openPretrained(ATTNVIZ_FIXTURE("/models/qwen2-tiny"), {}, qwen).ok());
        const InductionProbe q = inductionProbe(qwen->info(), *qwen, 15);
        QCOMPARE(q.offset, 1);
        QCOMPARE(q.ids.front(), 151643);
        for (size_t i = 1; i < q.ids.size(); ++i)
            QVERIFY(q.ids[i] >= 1000 && q.ids[i] < 151643);
    }
    // layer 0's rollout is 0.5 (mean of the heads) + 0.5 I
    const std::vector<Mat<double>> r = attentionRollout(tr);
    Mat<double> want = 0.5 * tr.weights(0, -1).cast<double>();
    want.diagonal().array() += 0.5;
    QVERIFY((r[0] - want).cwiseAbs().maxCoeff() < 1e-6);
}

// The corpus scores are the per-prompt scores' mean and sample deviation, each prompt counted once,
// computed here from each prompt's own trace; same-token counts only the prompts where a token repeats.
void TestHeadRoles::overACorpus()
{
    std::unique_ptr<Model> m;
    QVERIFY(openPretrained(ATTNVIZ_FIXTURE("/models/gpt2-tiny"), {}, m).ok());
    CorpusRequest req;
    req.prompts = {"the cat sat on the mat", "", "a dog ran", "one two three one two three", "x"};
    std::vector<std::pair<int, int>> progress;
    req.progress = [&](int done, int total) { progress.emplace_back(done, total); };
    CorpusHeadScores c;
    const Status st = corpusHeadScores(*m, req, c);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(c.prompts, 4); // the empty line skipped
    QCOMPARE(int(progress.size()), 5);
    QCOMPARE(progress.back(), std::make_pair(5, 5));

    std::vector<Mat<double>> prev, first, same, self;
    long long tokens = 0;
    for (const std::string &text : req.prompts) {
        if (text.empty())
            continue;
        TraceRequest r;
        r.text = text;
        Trace<float> tr;
        QVERIFY(m->trace(r, tr).ok());
        tokens += (long long)tr.tokens.size();
        prev.push_back(previousTokenScores(tr));
        first.push_back(firstTokenScores(tr));
        same.push_back(sameTokenScores(tr));
        self.push_back(selfScores(tr));
    }
    QCOMPARE(c.tokens, tokens);
    auto check = [](const CorpusScore &got, const std::vector<Mat<double>> &each, const char *what) {
        for (int l = 0; l < 2; ++l)
            for (int h = 0; h < 4; ++h) {
                std::vector<double> v;
                for (const Mat<double> &x : each)
                    if (std::isfinite(x(l, h)))
                        v.push_back(x(l, h));
                QVERIFY2(got.count(l, h) == int(v.size()), what);
                double mean = 0;
                for (double x : v)
                    mean += x / double(v.size());
                double ss = 0;
                for (double x : v)
                    ss += (x - mean) * (x - mean);
                QVERIFY2(std::abs(got.mean(l, h) - mean) < 1e-12, what);
                if (v.size() < 2) // no spread from one prompt
                    QVERIFY2(std::isnan(got.spread(l, h)), what);
                else
                    QVERIFY2(std::abs(got.spread(l, h) - std::sqrt(ss / double(v.size() - 1))) < 1e-12, what);
            }
    };
    check(c.previousToken, prev, "previous");
    check(c.firstToken, first, "first");
    check(c.sameToken, same, "same");
    check(c.self, self, "self");
    // "x" is one token (no query past 0); only "one two three one two three" repeats a token (GPT-2
    // spells "the" and " the" apart)
    QCOMPARE(c.previousToken.count(0, 0), 3);
    QCOMPARE(c.sameToken.count(0, 0), 1);
    QCOMPARE(c.cut, 0);
    // induction: the probe's, as headRoles gives it
    TraceRequest r;
    r.text = req.prompts[0];
    Trace<float> tr;
    QVERIFY(m->trace(r, tr).ok());
    HeadRoleScores one;
    QVERIFY(headRoles(*m, tr, one).ok());
    QVERIFY(c.induction.isApprox(one.induction, 0) || (c.induction - one.induction).cwiseAbs().maxCoeff() == 0);
    // without it: none
    req.induction = false;
    req.progress = {};
    QVERIFY(corpusHeadScores(*m, req, c).ok());
    QCOMPARE(c.induction.size(), Eigen::Index(0));
}

void TestHeadRoles::corpusRefusals()
{
    std::unique_ptr<Model> m;
    QVERIFY(openPretrained(ATTNVIZ_FIXTURE("/models/gpt2-tiny"), {}, m).ok());
    CorpusHeadScores c;
    c.prompts = 7;
    CorpusRequest req;
    req.prompts = {"", ""};
    Status st = corpusHeadScores(*m, req, c);
    QCOMPARE(st.code, StatusCode::InvalidInput);
    QCOMPARE(c.prompts, 7); // untouched
    // a prompt past the model's 32 positions is scored on its first 32, and counted as cut
    std::string longText;
    for (int i = 0; i < 40; ++i)
        longText += " cat";
    req.prompts = {"the cat", longText, longText};
    QVERIFY(corpusHeadScores(*m, req, c).ok());
    QCOMPARE(c.cut, 2);
    QCOMPARE(c.tokens, 2 + 32 + 32);
    QVERIFY2(c.cutReason.find("reads at most 32 tokens") != std::string::npos, c.cutReason.c_str());
    c.prompts = 7;
    // cancelled before the second prompt
    std::atomic<bool> cancel{false};
    req.prompts = {"the cat", "the dog"};
    req.cancel = &cancel;
    req.progress = [&](int done, int) { cancel = done >= 1; };
    st = corpusHeadScores(*m, req, c);
    QCOMPARE(st.code, StatusCode::Cancelled);
    QCOMPARE(c.prompts, 7);
}

void TestHeadRoles::longReadingsKnown()
{
    const Trace<double> t = traceOf({1, 2, 3, 4, 5}, {previousHead(5), sinkHead(5)});
    // sink mass over queries i >= k: the sink head puts everything on key 0
    const Mat<double> sink1 = sinkMassScores(t, 1), sink2 = sinkMassScores(t, 2);
    QCOMPARE(sink1(0, 0), 0.25); // query 1 on key 0; 2, 3, 4 elsewhere
    QCOMPARE(sink1(0, 1), 1.0);
    QCOMPARE(sink2(0, 0), 1.0 / 3); // queries 2, 3, 4: only 2 reads key 1
    // recent window of w keys ending at the query, over queries i >= w
    const Mat<double> rec2 = recentMassScores(t, 2), rec1 = recentMassScores(t, 1);
    QCOMPARE(rec2(0, 0), 1.0); // i - 1 is in the window
    QCOMPARE(rec2(0, 1), 0.0); // key 0 is not, for queries 2 .. 4
    QCOMPARE(rec1(0, 0), 0.0);
    QVERIFY(std::isnan(recentMassScores(t, 5)(0, 0))); // no query past the window
    // entropy: one-hot rows 0 nats; a row spread evenly over n keys ln n
    Mat<double> even = Mat<double>::Zero(5, 5);
    for (int i = 0; i < 5; ++i)
        even.row(i).head(i + 1).setConstant(1.0 / (i + 1));
    const Mat<double> ent = entropyScores(traceOf({1, 2, 3, 4, 5}, {previousHead(5), even}));
    QCOMPARE(ent(0, 0), 0.0);
    QVERIFY(std::abs(ent(0, 1) - (std::log(2.0) + std::log(3.0) + std::log(4.0) + std::log(5.0)) / 4) < 1e-15);
    int read = 0;
    const Mat<double> ent2 = entropyScores(traceOf({1, 2, 3, 4, 5}, {previousHead(5), even}), 2, &read);
    QCOMPARE(read, 2); // rows 1 and 3
    QCOMPARE(entropyRows(5, 2), std::vector<int>({1, 3}));
    QVERIFY(std::abs(ent2(0, 1) - (std::log(2.0) + std::log(4.0)) / 2) < 1e-15);
    // span mass: queries after the span [1, 3), their weight on it
    const Mat<double> span = spanMassScores(t, 1, 3);
    QCOMPARE(span(0, 0), 1.0 / 2); // query 3 reads 2; query 4 reads 3
    QCOMPARE(span(0, 1), 0.0);
    QVERIFY(std::isnan(spanMassScores(t, 3, 5)(0, 0))); // no query after it
    QVERIFY(std::isnan(spanMassScores(t, 2, 2)(0, 0))); // empty
    // the grid's chooser reads the same
    ReadingOptions o;
    o.spanBegin = 1;
    o.spanEnd = 3;
    QVERIFY(headReading(t, HeadReading::SpanMass, o) == span);
    QVERIFY(headReading(t, HeadReading::PreviousToken) == previousTokenScores(t));
}

void TestHeadRoles::readingsThroughTiles_data()
{
    QTest::addColumn<QString>("model");
    for (const char *m : {"llama-tiny", "mistral-tiny", "gemma2-tiny", "bert-tiny"})
        QTest::addRow("%s", m) << QString::fromLatin1(m);
}

// Each score on a trace that keeps no weights (q, k and the log-sum-exp; the cells recomputed) and
// on one that keeps them equals the definition in headroles.h applied here to the full matrices.
void TestHeadRoles::readingsThroughTiles()
{
    QFETCH(QString, model);
    std::unique_ptr<Model> m;
    QVERIFY(openPretrained(ATTNVIZ_FIXTURE("/models/") + model.toStdString(), {}, m).ok());
    TraceRequest req;
    req.text = "the cat sat on the mat and the cat sat on the mat again";
    Trace<float> full, lean;
    QVERIFY(m->trace(req, full).ok());
    req.observe.weights = false;
    QVERIFY(m->trace(req, lean).ok());
    QVERIFY(lean.layers[0].attention.batch[0].weights.empty());
    const int t = int(full.tokens.size()), L = full.numLayers(), H = full.numHeads();
    QVERIFY(t >= 12);
    const int k = 2, w = 3, b = 2, e = 5, sampled = 4;
    const std::vector<int> sample = entropyRows(t, sampled);
    QCOMPARE(int(sample.size()), sampled);
    // the definitions over the full matrices, in double
    Mat<double> prev(L, H), first(L, H), same(L, H), self(L, H), sink(L, H), recent(L, H), ent(L, H), entS(L, H),
        span(L, H);
    for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h) {
            const Mat<double> A = full.weights(l, h).toDense().cast<double>();
            double p = 0, f = 0, sf = 0, sn = 0, rc = 0, sp = 0, sm = 0;
            int nSame = 0;
            for (int i = 1; i < t; ++i) {
                p += A(i, i - 1);
                f += A(i, 0);
                sf += A(i, i);
                double s = 0;
                bool rep = false;
                for (int j = 0; j < i; ++j)
                    if (full.tokens[size_t(j)].id == full.tokens[size_t(i)].id) {
                        s += A(i, j);
                        rep = true;
                    }
                if (rep) {
                    sm += s;
                    ++nSame;
                }
            }
            for (int i = k; i < t; ++i)
                sn += A.row(i).head(k).sum();
            for (int i = w; i < t; ++i)
                rc += A.row(i).segment(i - w + 1, w).sum();
            for (int i = e; i < t; ++i)
                sp += A.row(i).segment(b, e - b).sum();
            auto rowEntropy = [&](int i) {
                double x = 0;
                for (int j = 0; j < t; ++j)
                    if (A(i, j) > 0)
                        x -= A(i, j) * std::log(A(i, j));
                return x;
            };
            double en = 0, es = 0;
            for (int i = 1; i < t; ++i)
                en += rowEntropy(i);
            for (int i : sample)
                es += rowEntropy(i);
            prev(l, h) = p / (t - 1);
            first(l, h) = f / (t - 1);
            self(l, h) = sf / (t - 1);
            same(l, h) = sm / nSame;
            sink(l, h) = sn / (t - k);
            recent(l, h) = rc / (t - w);
            span(l, h) = sp / (t - e);
            ent(l, h) = en / (t - 1);
            entS(l, h) = es / sampled;
        }
    ReadingOptions o;
    o.sinkTokens = k;
    o.window = w;
    o.spanBegin = b;
    o.spanEnd = e;
    const std::pair<HeadReading, const Mat<double> *> want[] = {
        {HeadReading::PreviousToken, &prev}, {HeadReading::FirstToken, &first}, {HeadReading::SameToken, &same},
        {HeadReading::Self, &self},          {HeadReading::SinkMass, &sink},    {HeadReading::RecentMass, &recent},
        {HeadReading::Entropy, &ent},        {HeadReading::SpanMass, &span}};
    for (const Trace<float> *tr : {&full, &lean})
        for (const auto &[reading, ref] : want) {
            const Mat<double> got = headReading(*tr, reading, o);
            QCOMPARE(got.rows(), Eigen::Index(L));
            QCOMPARE(got.cols(), Eigen::Index(H));
            const double d = (got - *ref).cwiseAbs().maxCoeff();
            if (!(d <= 1e-6))
                QFAIL(qPrintable(QStringLiteral("%1 trace, reading %2: off by %3")
                                     .arg(tr == &full ? "full" : "lean").arg(int(reading)).arg(d)));
        }
    o.entropyRows = sampled;
    QVERIFY((headReading(lean, HeadReading::Entropy, o) - entS).cwiseAbs().maxCoeff() <= 1e-6);
    // entropy is in nats, within [0, ln t]
    QVERIFY(ent.minCoeff() >= 0 && ent.maxCoeff() <= std::log(double(t)));
}

// The retrieval score on a hand-built trace: prompt ids 1 [10 11 12] 2 3 (the needle at 1-3), the
// answer 10 10 12 (the trace holds its first two tokens). Answer token k is read on row 5 + k.
void TestHeadRoles::retrievalScoreHandBuilt()
{
    const std::vector<int> ids = {1, 10, 11, 12, 2, 3, 10, 10};
    const std::vector<int> answer = {10, 10, 12};
    const int n = int(ids.size());
    auto head = [&](const std::vector<std::vector<std::pair<int, double>>> &rows) {
        Mat<double> m = Mat<double>::Identity(n, n);
        for (int k = 0; k < 3; ++k) {
            m.row(5 + k).setZero();
            for (const auto &[j, w] : rows[size_t(k)])
                m(5 + k, j) = w;
        }
        return m;
    };
    // copies 10 from key 1, misses 10 at key 2 (11), copies 12 from key 3: 2 of 3 needle tokens
    const Mat<double> copier = head({{{1, 0.9}, {0, 0.1}}, {{2, 0.8}, {1, 0.2}}, {{3, 0.7}, {0, 0.3}}});
    // copies 10 from key 1 twice (counted once); on the last row most of its weight is on the answer
    // token at 7, outside the prompt: its most-attended prompt token is key 2 (11, not 12)
    const Mat<double> once = head({{{1, 1.0}}, {{1, 1.0}}, {{7, 0.6}, {2, 0.3}, {3, 0.1}}});
    // attends to key 0, outside the needle
    const Mat<double> sink = head({{{0, 1.0}}, {{0, 1.0}}, {{0, 1.0}}});
    // a tie between key 1 (10) and key 4 (2): the first, key 1, copies
    const Mat<double> tie = head({{{1, 0.5}, {4, 0.5}}, {{0, 1.0}}, {{0, 1.0}}});
    const Trace<double> t = traceOf(ids, {copier, once, sink, tie});
    const Mat<double> s = retrievalScores(t, 6, 1, 4, answer);
    QCOMPARE(s.rows(), Eigen::Index(1));
    QCOMPARE(s.cols(), Eigen::Index(4));
    QCOMPARE(s(0, 0), 2.0 / 3);
    QCOMPARE(s(0, 1), 1.0 / 3);
    QCOMPARE(s(0, 2), 0.0);
    QCOMPARE(s(0, 3), 1.0 / 3);
    // no needle: NaN
    QVERIFY(std::isnan(retrievalScores(t, 6, 2, 2, answer)(0, 0)));
}

// The probe end to end on a tiny model: the needle's tokens are its own in the text, the answer is
// greedy (each token the model's best after the ones before), and the scores, read through
// AttentionTiles on a trace that keeps no weights, equal retrievalScores on a trace that keeps them.
void TestHeadRoles::needleProbeOnATinyModel()
{
    std::unique_ptr<Model> m;
    QVERIFY(openPretrained(ATTNVIZ_FIXTURE("/models/llama-tiny"), {}, m).ok());
    NeedleRequest req;
    req.haystack = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
    req.needle = "The best thing to do in San Francisco is eat a sandwich.";
    req.question = "What is the best thing to do in San Francisco?";
    req.depth = 0.5;
    req.answerTokens = 5;
    NeedleProbe p;
    const Status st = needleProbe(*m, req, p);
    QVERIFY2(st.ok(), st.message.c_str());
    QVERIFY(p.needleBegin > 0 && p.needleEnd > p.needleBegin + 5 && p.needleEnd < p.promptTokens);
    QVERIFY(p.text.find(req.needle) != std::string::npos);
    QCOMPARE(int(p.answer.size()), 5);
    QCOMPARE(int(p.ids.size()), p.promptTokens + 5);
    // the needle's tokens decode to the needle
    const std::vector<int> needleIds(p.ids.begin() + p.needleBegin, p.ids.begin() + p.needleEnd);
    QVERIFY2(decodeIds(*m, needleIds).find("San Francisco is eat a sandwich.") != std::string::npos, decodeIds(*m, needleIds).c_str());
    // greedy, and the same scores from the full weights
    TraceRequest tr;
    tr.ids.assign(p.ids.begin(), p.ids.end() - 1);
    tr.allPredictions = true;
    Trace<float> full;
    QVERIFY(m->trace(tr, full).ok());
    QCOMPARE(int(full.predictions.next.size()), int(tr.ids.size()));
    for (int k = 0; k < 5; ++k)
        QCOMPARE(full.predictions.next[size_t(p.promptTokens - 1 + k)].front().id, p.answer[size_t(k)]);
    const Mat<double> want = retrievalScores(full, p.promptTokens, p.needleBegin, p.needleEnd, p.answer);
    QCOMPARE(p.retrieval.rows(), Eigen::Index(full.numLayers()));
    QVERIFY(p.retrieval == want);
    QVERIFY(p.retrieval.minCoeff() >= 0 && p.retrieval.maxCoeff() <= 1);
    // refusals: an empty needle, a depth outside [0, 1]
    req.needle = " ";
    QVERIFY(!needleProbe(*m, req, p).ok());
    req.needle = "x";
    req.depth = 1.5;
    QVERIFY(!needleProbe(*m, req, p).ok());
}

QTEST_GUILESS_MAIN(TestHeadRoles)
#include "tst_headroles.moc"
