// SPDX-License-Identifier: GPL-3.0-or-later
// reads.h against the float64 references of tests/fixtures/reads/make_reads.py, computed from the
// same fixture folders: the logit lens (top 5, the actual token's probability and rank, entropy),
// norm-weighted attention ||a_ij v_j W_O^h|| (grouped-query heads included), direct logit
// attribution (each part, and the parts summing to the logit within 1e-5), generation (greedy ids,
// sampled ids for a seed, the cut at the model's positions, a request bounded up front by the
// positions and the memory, Stop), and the bad inputs.
#include "testpaths.h"
#include "attnviz/reads.h"
#include "attnviz/torchrng.h"
#include "modelchecks.h"


#include <map>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

// A model that counts the positions it is asked to compute, forwarding to the one it wraps, and
// refuses past `budget` of them: a generation bounded up front asks for none before its refusal.
class CountingModel final : public Model {
public:
    CountingModel(Model &inner, int64_t budget) : m_inner(inner), m_budget(budget) {}
    int64_t positions = 0; // summed over trace() calls: the ids each was handed
    int calls = 0;
    ModelInfo info() const override { return m_inner.info(); }
    Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override { return m_inner.tokenize(text, out); }
    Status trace(const TraceRequest &request, Trace<float> &out) override { return counted(request, out); }
    Status trace(const TraceRequest &request, Trace<double> &out) override { return counted(request, out); }
    std::shared_ptr<const ReadoutWeights> readout() const override { return m_inner.readout(); }
    std::string decode(const std::vector<int> &ids) const override { return m_inner.decode(ids); }

private:
    template <typename T>
    Status counted(const TraceRequest &request, Trace<T> &out)
    {
        ++calls;
        positions += int64_t(request.ids.size());
        if (positions > m_budget)
            return Status::error(StatusCode::Cancelled, "counting model: past its budget of positions");
        return m_inner.trace(request, out);
    }
    Model &m_inner;
    int64_t m_budget;
};

const char *const kModels[] = {"gpt2-tiny", "bert-tiny", "qwen2-tiny", "gemma2-tiny", "llama-tiny", "gemma3-tiny", "mistral-tiny"};

Model *opened(const QString &name)
{
    static std::map<QString, std::unique_ptr<Model>> models;
    std::unique_ptr<Model> &m = models[name];
    if (!m)
        m = open(name);
    return m.get();
}

const QJsonObject &reference()
{
    static const QJsonObject r = [] {
        QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/reads/reads-expected.json")));
        if (!f.open(QIODevice::ReadOnly))
            return QJsonObject();
        return QJsonDocument::fromJson(f.readAll()).object();
    }();
    return r;
}

QJsonObject ref(const QString &model) { return reference().value(QStringLiteral("models")).toObject().value(model).toObject(); }

std::vector<int> ints(const QJsonValue &v)
{
    std::vector<int> out;
    for (const QJsonValue &x : v.toArray())
        out.push_back(x.toInt());
    return out;
}

template <typename T>
bool traceOf(Model &m, const std::vector<int> &ids, Trace<T> &tr)
{
    TraceRequest req;
    req.ids = ids;
    const Status st = m.trace(req, tr);
    if (!st)
        qWarning("%s", st.message.c_str());
    return bool(st);
}

// One lens cell against the reference's: probabilities within tol, ids where not near-tied.
void compareCell(const LensCell &got, const QJsonObject &want, double tol, const QString &where)
{
    const QJsonArray ids = want.value(QStringLiteral("top")).toArray(), p = want.value(QStringLiteral("p")).toArray();
    QCOMPARE(int(got.top.size()), ids.size());
    for (int k = 0; k < ids.size(); ++k) {
        if (std::abs(got.top[size_t(k)].p - p[k].toDouble()) > tol)
            QFAIL(qPrintable(where + QStringLiteral(": top %1 p %2, expected %3").arg(k).arg(got.top[size_t(k)].p).arg(p[k].toDouble())));
        const double prev = k ? p[k - 1].toDouble() : 2.0, next = k + 1 < p.size() ? p[k + 1].toDouble() : -1.0;
        if (prev - p[k].toDouble() > tol && p[k].toDouble() - next > tol)
            QCOMPARE(got.top[size_t(k)].id, ids[k].toInt());
    }
    if (std::abs(got.entropy - want.value(QStringLiteral("entropy")).toDouble()) > tol * 10)
        QFAIL(qPrintable(where + QStringLiteral(": entropy %1, expected %2").arg(got.entropy).arg(want.value(QStringLiteral("entropy")).toDouble())));
    if (want.contains(QStringLiteral("actual_p"))) {
        QVERIFY2(std::abs(got.actualP - want.value(QStringLiteral("actual_p")).toDouble()) <= tol, qPrintable(where));
        if (tol < 1e-6) // float32 may move a rank among near-equal logits
            QCOMPARE(got.actualRank, want.value(QStringLiteral("actual_rank")).toInt());
    } else {
        QVERIFY(std::isnan(got.actualP));
        QCOMPARE(got.actualRank, 0);
    }
}

} // namespace

class TestReads : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QVERIFY2(!reference().isEmpty(), "tests/fixtures/reads/reads-expected.json missing"); }
    // TraceRequest::progress: once as each layer starts and once after the last, in order, on the
    // calling thread; a cancel between layers stops the trace there.
    void traceProgress()
    {
        Model *m = opened(QStringLiteral("gpt2-tiny"));
        const int layers = m->info().layers;
        QVERIFY(layers >= 2);
        TraceRequest r;
        r.text = "The animal did not cross the street";
        std::vector<std::pair<int, int>> calls;
        r.progress = [&](int done, int total) { calls.emplace_back(done, total); };
        Trace<float> tr;
        QVERIFY(m->trace(r, tr));
        QCOMPARE(int(calls.size()), layers + 1);
        for (int l = 0; l <= layers; ++l)
            QCOMPARE(calls[size_t(l)], std::make_pair(l, layers));
        std::atomic<bool> cancel{false};
        r.cancel = &cancel;
        calls.clear();
        r.progress = [&](int done, int) {
            calls.emplace_back(done, 0);
            if (done == 1)
                cancel.store(true);
        };
        QCOMPARE(m->trace(r, tr).code, StatusCode::Cancelled);
        QCOMPARE(int(calls.size()), 2); // layer 0 and layer 1 started; layer 2 never began
    }

    void lens_data()
    {
        QTest::addColumn<QString>("model");
        for (const char *m : kModels)
            QTest::newRow(m) << QString::fromLatin1(m);
    }

    // Every cell of the grid (float64 trace, 1e-9), each column alone equal to the grid's, and the
    // float32 trace within 2e-5; the last layer's row is the model's own prediction.
    void lens()
    {
        QFETCH(QString, model);
        Model *m = opened(model);
        QVERIFY(m);
        const QJsonObject r = ref(model);
        const std::vector<int> ids = ints(r.value(QStringLiteral("ids")));
        const QJsonArray want = r.value(QStringLiteral("lens")).toArray();
        Trace<double> tr;
        QVERIFY(traceOf(*m, ids, tr));
        LensGrid grid;
        int steps = 0;
        LensOptions opt;
        opt.chunk = 4;
        opt.progress = [&](const LensGrid &, int, int) { return ++steps > 0; };
        QVERIFY(lensGrid(*m, tr, opt, grid));
        QCOMPARE(steps, int((ids.size() + 3) / 4));
        QCOMPARE(grid.layers, want.size());
        for (int l = 0; l < grid.layers; ++l)
            for (int i = 0; i < grid.positions; ++i)
                compareCell(grid.at(l, i), want[l].toArray()[i].toObject(), 1e-9, QStringLiteral("layer %1 position %2").arg(l).arg(i));
        std::vector<LensCell> column;
        const int pos = int(ids.size()) / 2;
        QVERIFY(lensColumn(*m, tr, pos, 5, column));
        for (int l = 0; l < grid.layers; ++l)
            QCOMPARE(column[size_t(l)].top.front().p, grid.at(l, pos).top.front().p);

        Trace<float> tf;
        QVERIFY(traceOf(*m, ids, tf));
        for (int i = 0; i < int(ids.size()); ++i) {
            QVERIFY(lensColumn(*m, tf, i, 5, column));
            for (int l = 0; l < int(column.size()); ++l)
                compareCell(column[size_t(l)], want[l].toArray()[i].toObject(), 2e-5,
                            QStringLiteral("float32 layer %1 position %2").arg(l).arg(i));
        }
        if (m->info().causal) { // the last layer's lens is the model's prediction
            const NextTokens &n = tf.predictions.at(tf.tokens.size() - 1);
            QVERIFY(lensColumn(*m, tf, int(ids.size()) - 1, 5, column));
            QCOMPARE(column.back().top.front().id, n.top.front().id);
            QVERIFY(std::abs(column.back().top.front().p - n.top.front().p) < 1e-5);
        }
    }

    void lensCancel()
    {
        Model *m = opened(QStringLiteral("gpt2-tiny"));
        Trace<float> tr;
        QVERIFY(traceOf(*m, ints(ref(QStringLiteral("gpt2-tiny")).value(QStringLiteral("ids"))), tr));
        LensOptions opt;
        opt.chunk = 2;
        opt.progress = [](const LensGrid &, int first, int) { return first < 2; };
        LensGrid grid;
        const Status st = lensGrid(*m, tr, opt, grid);
        QCOMPARE(st.code, StatusCode::Cancelled);
        QVERIFY(grid.at(0, 3).computed());  // what was filled stays
        QVERIFY(!grid.at(0, 4).computed());
        std::vector<LensCell> column;
        QCOMPARE(lensColumn(*m, tr, 99, 5, column).code, StatusCode::InvalidInput);
    }

    void normWeighted_data() { lens_data(); }

    void normWeighted()
    {
        QFETCH(QString, model);
        Model *m = opened(model);
        const QJsonObject r = ref(model);
        const std::vector<int> ids = ints(r.value(QStringLiteral("ids")));
        const QJsonArray want = r.value(QStringLiteral("norm_weighted")).toArray();
        Trace<double> tr;
        Trace<float> tf;
        QVERIFY(traceOf(*m, ids, tr));
        QVERIFY(traceOf(*m, ids, tf));
        for (int l = 0; l < tr.numLayers(); ++l) {
            Mat<double> mean = Mat<double>::Zero(tr.weights(l, 0).rows(), tr.weights(l, 0).cols());
            for (int h = 0; h < tr.numHeads(); ++h) {
                Mat<double> nw;
                QVERIFY(attnviz::normWeighted(tr, l, h, nw));
                const QJsonArray rows = want[l].toArray()[h].toArray();
                QVERIFY2(deviation(nw, rows) < 1e-9, qPrintable(QStringLiteral("layer %1 head %2: %3").arg(l).arg(h).arg(deviation(nw, rows))));
                Mat<float> nf;
                QVERIFY(attnviz::normWeighted(tf, l, h, nf));
                QVERIFY2(deviation(nf, rows) < 1e-4, qPrintable(QStringLiteral("float32 layer %1 head %2").arg(l).arg(h)));
                mean += nw;
            }
            Mat<double> avg;
            QVERIFY(attnviz::normWeighted(tr, l, -1, avg));
            QVERIFY((avg - mean / tr.numHeads()).cwiseAbs().maxCoeff() < 1e-12);
            Mat<double> norms;
            QVERIFY(valueNorms(tr, l, norms));
            QCOMPARE(int(norms.rows()), int(ids.size()));
            QCOMPARE(int(norms.cols()), tr.numHeads());
        }
        Mat<double> nw;
        QCOMPARE(attnviz::normWeighted(tr, tr.numLayers(), 0, nw).code, StatusCode::InvalidInput);
        QCOMPARE(attnviz::normWeighted(tr, 0, tr.numHeads(), nw).code, StatusCode::InvalidInput);
    }

    void attribution_data()
    {
        QTest::addColumn<QString>("model");
        for (const char *m : kModels)
            if (QByteArray(m) != "bert-tiny")
                QTest::newRow(m) << QString::fromLatin1(m);
    }

    // Each part within 1e-9 of the reference's; the parts sum to the (pre-cap) logit within 1e-5
    // (float64 and float32 traces); Gemma 2's cap applied after.
    void attribution()
    {
        QFETCH(QString, model);
        Model *m = opened(model);
        const QJsonObject r = ref(model);
        const std::vector<int> ids = ints(r.value(QStringLiteral("ids")));
        Trace<double> tr;
        Trace<float> tf;
        QVERIFY(traceOf(*m, ids, tr));
        QVERIFY(traceOf(*m, ids, tf));
        for (const QJsonValue &v : r.value(QStringLiteral("dla")).toArray()) {
            const QJsonObject w = v.toObject();
            const int pos = w.value(QStringLiteral("position")).toInt(), target = w.value(QStringLiteral("target")).toInt();
            Attribution a;
            QVERIFY(attribute(*m, tr, pos, target, a));
            auto near = [](double got, const QJsonValue &want) { return std::abs(got - want.toDouble()) < 1e-9; };
            QVERIFY2(near(a.logit, w.value(QStringLiteral("logit"))), qPrintable(QString::number(a.logit)));
            QVERIFY(near(a.input, w.value(QStringLiteral("input"))));
            QVERIFY(near(a.normBias, w.value(QStringLiteral("norm_bias"))));
            for (int l = 0; l < a.layers; ++l) {
                QVERIFY2(near(a.mlp[size_t(l)], w.value(QStringLiteral("mlp"))[l]), qPrintable(QStringLiteral("mlp %1").arg(l)));
                QVERIFY(near(a.attnBias[size_t(l)], w.value(QStringLiteral("attn_bias"))[l]));
                for (int h = 0; h < a.heads; ++h)
                    QVERIFY2(near(a.headAt(l, h), w.value(QStringLiteral("head"))[l][h]), qPrintable(QStringLiteral("head %1.%2").arg(l).arg(h)));
            }
            QVERIFY2(std::abs(a.sum() - a.logit) < 1e-5, qPrintable(QStringLiteral("%1 vs %2").arg(a.sum()).arg(a.logit)));
            if (a.softcap > 0)
                QCOMPARE(a.cappedLogit, std::tanh(a.logit / a.softcap) * a.softcap);
            else
                QCOMPARE(a.cappedLogit, a.logit);
            Attribution af;
            QVERIFY(attribute(*m, tf, pos, target, af));
            QVERIFY2(std::abs(af.sum() - af.logit) < 1e-5, qPrintable(QStringLiteral("float32: %1 vs %2").arg(af.sum()).arg(af.logit)));
            QVERIFY(std::abs(af.logit - a.logit) < 1e-4);
        }
    }

    void attributionBadInput()
    {
        Model *gpt2 = opened(QStringLiteral("gpt2-tiny"));
        Trace<float> tr;
        QVERIFY(traceOf(*gpt2, {464, 5044, 1422}, tr));
        Attribution a;
        Status st = attribute(*gpt2, tr, 0, 50257, a);
        QCOMPARE(st.code, StatusCode::InvalidInput);
        QVERIFY2(st.message.find("50257 is not in the vocabulary (0..50256)") != std::string::npos, st.message.c_str());
        QCOMPARE(attribute(*gpt2, tr, 3, 0, a).code, StatusCode::InvalidInput);
        int id = -1;
        QVERIFY(vocabularyId(*gpt2, "Ġcat", id));
        QCOMPARE(id, 3797);
        QVERIFY(vocabularyId(*gpt2, " cat", id)); // the text's one token
        QCOMPARE(id, 3797);
        st = vocabularyId(*gpt2, " catapultingly", id);
        QCOMPARE(st.code, StatusCode::InvalidInput);
        QVERIFY2(st.message.find("is not in the vocabulary of gpt2-tiny") != std::string::npos, st.message.c_str());
        Model *bert = opened(QStringLiteral("bert-tiny"));
        Trace<float> tb;
        QVERIFY(traceOf(*bert, {101, 1996, 102}, tb));
        QCOMPARE(attribute(*bert, tb, 1, 1996, a).code, StatusCode::Unavailable);
        // a trace of another model
        QCOMPARE(attribute(*opened(QStringLiteral("qwen2-tiny")), tr, 0, 1, a).code, StatusCode::InvalidInput);
    }

    void torchDraws()
    {
        TorchGenerator g(7);
        const QJsonArray want = reference().value(QStringLiteral("torch_rand_seed_7")).toArray();
        for (const QJsonValue &v : want)
            QCOMPARE(float(g.uniformDouble()), float(v.toDouble()));
    }

    void sampling()
    {
        const std::vector<double> logits = {0.0, std::log(2.0), std::log(4.0), std::log(1.0)}; // p = 1/8 2/8 4/8 1/8
        QCOMPARE(sampleToken(logits, 0, 0, 1, 0.0), 2);
        QCOMPARE(sampleToken(logits, 1, 0, 1, 0.49), 2);  // order 2 (0.5), 1 (0.25), 0 (0.125), 3 (0.125)
        QCOMPARE(sampleToken(logits, 1, 0, 1, 0.51), 1);
        QCOMPARE(sampleToken(logits, 1, 0, 1, 0.80), 0);
        QCOMPARE(sampleToken(logits, 1, 0, 1, 0.95), 3);
        QCOMPARE(sampleToken(logits, 1, 2, 1, 0.95), 1);  // top-k 2: {2, 1}
        QCOMPARE(sampleToken(logits, 1, 0, 0.5, 0.99), 2); // top-p 0.5: {2}
    }

    void generation_data()
    {
        QTest::addColumn<QString>("model");
        for (const char *m : kModels)
            if (QByteArray(m) != "bert-tiny")
                QTest::newRow(m) << QString::fromLatin1(m);
    }

    // Greedy and sampled ids equal the reference's (float64 traces); float32 greedy too, and a seed
    // gives the same ids twice.
    void generation()
    {
        QFETCH(QString, model);
        Model *m = opened(model);
        const QJsonObject r = ref(model);
        const std::vector<int> ids = ints(r.value(QStringLiteral("ids")));
        GenerateOptions opt;
        opt.tokens = 6;
        GenerateResult res;
        Trace<double> tr;
        QVERIFY(generate(*m, std::string(), ids, opt, tr, res));
        QCOMPARE(res.generated, ints(r.value(QStringLiteral("greedy"))));
        QCOMPARE(int(tr.tokens.size()), int(ids.size()) + 6);
        QCOMPARE(res.promptTokens, int(ids.size()));
        Trace<float> tf;
        QVERIFY(generate(*m, std::string(), ids, opt, tf, res));
        QCOMPARE(res.generated, ints(r.value(QStringLiteral("greedy"))));
        for (const char *key : {"sampled", "sampled_hot"}) {
            const QJsonObject s = r.value(QLatin1String(key)).toObject();
            opt.temperature = s.value(QStringLiteral("temperature")).toDouble();
            opt.topK = s.value(QStringLiteral("top_k")).toInt();
            opt.topP = s.value(QStringLiteral("top_p")).toDouble();
            opt.seed = uint64_t(s.value(QStringLiteral("seed")).toInt());
            QVERIFY(generate(*m, std::string(), ids, opt, tr, res));
            QCOMPARE(res.generated, ints(s.value(QStringLiteral("ids"))));
            GenerateResult a, b;
            QVERIFY(generate(*m, std::string(), ids, opt, tf, a));
            QVERIFY(generate(*m, std::string(), ids, opt, tf, b));
            QCOMPARE(a.generated, b.generated);
        }
    }

    // gpt2-tiny reads 32 positions: asked for 40 after 13, it makes 19 and says so; Stop between
    // tokens keeps what was made; a masked LM does not generate.
    void generationLimits()
    {
        Model *m = opened(QStringLiteral("gpt2-tiny"));
        const std::vector<int> ids = ints(ref(QStringLiteral("gpt2-tiny")).value(QStringLiteral("ids")));
        QCOMPARE(int(ids.size()), 13);
        GenerateOptions opt;
        opt.tokens = 40;
        GenerateResult res;
        Trace<float> tr;
        QVERIFY(generate(*m, std::string(), ids, opt, tr, res));
        QCOMPARE(int(res.generated.size()), 19);
        QCOMPARE(int(tr.tokens.size()), 32);
        QCOMPARE(res.note, std::string("gpt2-tiny reads at most 32 positions: 19 of the 40 tokens asked for fit after the text's 13"));
        int seen = 0;
        opt.onToken = [&](int) { return ++seen < 2; };
        QVERIFY(generate(*m, std::string("The animal"), {}, opt, tr, res));
        QVERIFY(res.stopped);
        QCOMPARE(int(res.generated.size()), 2);
        QCOMPARE(int(tr.tokens.size()), 4);
        QVERIFY(!res.text.empty());
        std::atomic<bool> cancel{true};
        opt.onToken = nullptr;
        opt.cancel = &cancel;
        QVERIFY(generate(*m, std::string("The animal"), {}, opt, tr, res));
        QVERIFY(res.stopped);
        QVERIFY(res.generated.empty());
        QCOMPARE(int(tr.tokens.size()), 2);
        opt.cancel = nullptr;
        opt.tokens = -1;
        QCOMPARE(generate(*m, std::string("The"), {}, opt, tr, res).code, StatusCode::InvalidInput);
        opt.tokens = 2;
        QCOMPARE(generate(*opened(QStringLiteral("bert-tiny")), std::string("the"), {}, opt, tr, res).code, StatusCode::Unavailable);
    }

    // A count near INT_MAX is cut to the positions as any other (it once wrapped past the check and
    // ran on); a count whose last trace would not fit the memory one computation may use is refused
    // before the first token, in one line saying how many tokens fit.
    void generationBoundedUpFront()
    {
        Model *m = opened(QStringLiteral("gpt2-tiny"));
        const std::vector<int> ids = ints(ref(QStringLiteral("gpt2-tiny")).value(QStringLiteral("ids")));
        GenerateOptions opt;
        opt.tokens = 2147483645;
        GenerateResult res;
        Trace<float> tr;
        QVERIFY(generate(*m, std::string(), ids, opt, tr, res));
        QCOMPARE(int(res.generated.size()), 19);
        QCOMPARE(
            res.note,
            std::string(
                "gpt2-tiny reads at most 32 positions: 19 of the 2147483645 tokens asked for fit after the text's 13"));

        Architecture a; // Llama 3.2's shape with a tiny width and 131,072 positions
        QVERIFY(seededShape("llama3.2-1b", a));
        a.maxPositions = 131072;
        a.layers = 2;
        a.dModel = 32;
        a.heads = 4;
        a.kvHeads = 2;
        a.dHead = 8;
        a.rope.dims = 8;
        a.dFeedForward = 64;
        a.vocabulary = 50;
        a.window.assign(2, 0);
        std::unique_ptr<Model> big;
        QVERIFY(seededPretrained(a, 3, big).ok());
        opt.tokens = 1000000000;
        CountingModel counted(*big, 64);
        int tokensMade = 0;
        opt.onToken = [&](int) { return ++tokensMade < 64; };
        const Status st = generate(counted, std::string(), {1, 2, 3}, opt, tr, res);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("131,072 tokens") != std::string::npos, st.message.c_str());
        QVERIFY2(st.message.find("tokens fit)") != std::string::npos, st.message.c_str());
        QVERIFY2(st.message.find('\n') == std::string::npos, st.message.c_str());
        QVERIFY(res.generated.empty());
        // refused before any work: no position computed, no token made
        QCOMPARE(counted.calls, 0);
        QCOMPARE(counted.positions, int64_t(0));
        QCOMPARE(tokensMade, 0);
    }
};

QTEST_GUILESS_MAIN(TestReads)
#include "tst_reads.moc"
