// SPDX-License-Identifier: GPL-3.0-or-later
// Generation of encoder-decoder models (encoderdecoder.h: generateTarget, generationSettings; the
// forward's encodeSeq2Seq and nextLogProbs): greedy and beam search of the five tiny folders
// (t5-tiny, t5-v1_1-tiny, bart-tiny, mbart-tiny, marian-tiny) against the float64 reference of
// transformers' generate() in tests/fixtures/models/make_beams.py (expected-generate.json): the
// kept beam's ids equal, its log-probability and score, and every generated step's cross-attention
// row of every layer and head within 1e-5 in float32 (1e-12 in float64); the folder's settings read
// from config.json, generation_config.json in its place, and the beams refused past 4. The one-token
// decoder step (stepSeq2Seq: cached self- and cross-attention keys and values) against a re-run of
// the decoder over the whole target (nextLogProbs) at every step of every folder.
#include "seq2seqchecks.h"
#include "../../core/src/models/families/family.h"
#include "../../core/src/models/forward/seq2seq.h"

#include <cmath>
#include <random>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

QJsonObject generateDoc(const QString &model)
{
    static std::map<QString, QJsonObject> docs;
    QJsonObject &o = docs[model];
    if (o.isEmpty()) {
        QFile f(fixture(model) + QStringLiteral("/expected-generate.json"));
        if (f.open(QIODevice::ReadOnly))
            o = QJsonDocument::fromJson(f.readAll()).object();
    }
    return o;
}

} // namespace

class TestSeq2SeqGenerate : public QObject {
    Q_OBJECT

private slots:
    void matchesTheReference_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("run");
        QTest::addColumn<bool>("float64");
        for (const char *m : {"t5-tiny", "t5-v1_1-tiny", "bart-tiny", "mbart-tiny", "marian-tiny"}) {
            const int runs = int(generateDoc(QString::fromLatin1(m)).value(QStringLiteral("runs")).toArray().size());
            QVERIFY2(runs == 16, m);
            for (int r = 0; r < runs; ++r)
                for (bool f64 : {false, true})
                    QTest::addRow("%s run %d %s", m, r, f64 ? "float64" : "float32") << QString::fromLatin1(m) << r << f64;
        }
    }

    void matchesTheReference()
    {
        QFETCH(QString, model);
        QFETCH(int, run);
        QFETCH(bool, float64);
        Model *m = opened(model);
        QVERIFY(m);
        const QJsonObject e = generateDoc(model).value(QStringLiteral("runs")).toArray()[run].toObject();
        TraceRequest req;
        req.ids = intsOf(e.value(QStringLiteral("source")).toArray());
        Seq2SeqGenerateOptions opt;
        opt.beams = e.value(QStringLiteral("beams")).toInt();
        opt.maxNew = e.value(QStringLiteral("max_new")).toInt();
        opt.lengthPenalty = e.value(QStringLiteral("length_penalty")).toDouble();
        const QJsonValue early = e.value(QStringLiteral("early_stopping"));
        opt.earlyStopping = early.isString() ? 2 : early.toBool() ? 1 : 0;
        opt.noRepeatNgramSize = e.value(QStringLiteral("no_repeat_ngram_size")).toInt();
        opt.float64 = float64;
        Seq2SeqGeneration g;
        const Status st = generateTarget(*m, req, opt, g);
        QVERIFY2(st.ok(), st.message.c_str());
        const std::vector<int> want = intsOf(e.value(QStringLiteral("ids")).toArray());
        QCOMPARE(g.ids, want);
        QCOMPARE(g.settings.numBeams, opt.beams);
        QCOMPARE(g.settings.maxLength, opt.maxNew + 1);
        const double tol = float64 ? 1e-12 : 1e-5;
        const double logProb = e.value(QStringLiteral("log_prob")).toDouble(), score = e.value(QStringLiteral("score")).toDouble();
        QVERIFY2(std::abs(g.logProb - logProb) <= tol * std::max(1.0, std::abs(logProb)),
                 qPrintable(QStringLiteral("log-prob %1, expected %2").arg(g.logProb, 0, 'g', 17).arg(logProb, 0, 'g', 17)));
        QVERIFY2(std::abs(g.score - score) <= tol * std::max(1.0, std::abs(score)),
                 qPrintable(QStringLiteral("score %1, expected %2").arg(g.score, 0, 'g', 17).arg(score, 0, 'g', 17)));
        // one cross-attention row per generated id: (layers × heads, source)
        const QJsonArray cross = e.value(QStringLiteral("cross")).toArray();
        QCOMPARE(int(g.cross.size()), int(want.size()));
        QCOMPARE(int(cross.size()), int(want.size()));
        const ModelInfo info = m->info();
        double worst = 0;
        for (int s = 0; s < int(cross.size()); ++s) {
            const QJsonArray layers = cross[s].toArray();
            QCOMPARE(int(layers.size()), info.layers);
            QCOMPARE(int(g.cross[size_t(s)].rows()), info.layers * info.heads);
            QCOMPARE(int(g.cross[size_t(s)].cols()), int(req.ids.size()));
            for (int l = 0; l < info.layers; ++l)
                for (int h = 0; h < info.heads; ++h) {
                    const QJsonArray row = layers[l].toArray()[h].toArray();
                    for (int j = 0; j < int(row.size()); ++j)
                        worst = std::max(worst, std::abs(g.cross[size_t(s)](l * info.heads + h, j) - row[j].toDouble()));
                }
        }
        QVERIFY2(worst <= tol, qPrintable(QStringLiteral("cross-attention off by %1").arg(worst)));
    }

    // Each step's log-probabilities and cross-attention row from the cached keys and values equal a
    // re-run of the decoder over the start token and the target so far, at every step of a 12-token
    // target (ids drawn from the vocabulary), float32 and float64.
    void stepEqualsTheRerun_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("float64");
        for (const char *m : {"t5-tiny", "t5-v1_1-tiny", "bart-tiny", "mbart-tiny", "marian-tiny"})
            for (bool f64 : {false, true})
                QTest::addRow("%s %s", m, f64 ? "float64" : "float32") << QString::fromLatin1(m) << f64;
    }

    void stepEqualsTheRerun()
    {
        QFETCH(QString, model);
        QFETCH(bool, float64);
        const std::string dir = fixture(model).toStdString();
        Architecture a;
        Status st = readArchitecture(dir, a);
        QVERIFY2(st.ok(), st.message.c_str());
        TensorArchive archive;
        st = archive.openFolder(dir);
        QVERIFY2(st.ok(), st.message.c_str());
        Seq2SeqWeights<float> w;
        st = loadSeq2SeqWeights(archive, a, families::familyNamed(a.family)->names(a), w);
        QVERIFY2(st.ok(), st.message.c_str());
        const std::vector<int> source = intsOf(expectedCase(model, 0).value(QStringLiteral("source")).toArray());
        std::mt19937 g(7);
        std::uniform_int_distribution<int> pick(0, a.vocabulary - 1);
        std::vector<int> decoder{a.seq2seq.decoderStartId};
        for (int i = 0; i < 12; ++i)
            decoder.push_back(pick(g));
        auto check = [&](const auto &weights, double tol) {
            using T = typename std::decay_t<decltype(weights->tokens)>::Scalar;
            Seq2SeqSteps<T> steps;
            QVERIFY(startSeq2SeqSteps(a, *weights, source, steps).ok());
            Mat<T> memory;
            QVERIFY(encodeSeq2Seq(a, *weights, source, memory).ok());
            QCOMPARE(int(steps.cross->memory.rows()), int(source.size()));
            double worstLogProb = 0, worstCross = 0;
            for (size_t i = 0; i < decoder.size(); ++i) {
                std::vector<double> stepped, rerun;
                Mat<double> stepCross, rerunCross;
                Status s = stepSeq2Seq(a, *weights, steps, decoder[i], stepped, &stepCross);
                QVERIFY2(s.ok(), s.message.c_str());
                QCOMPARE(steps.length, int(i) + 1);
                const std::vector<int> sofar(decoder.begin(), decoder.begin() + long(i) + 1);
                s = nextLogProbs(a, *weights, memory, sofar, rerun, rerunCross);
                QVERIFY2(s.ok(), s.message.c_str());
                QCOMPARE(stepped.size(), size_t(a.vocabulary));
                for (size_t v = 0; v < rerun.size(); ++v)
                    worstLogProb = std::max(worstLogProb, std::abs(stepped[v] - rerun[v]) / std::max(1.0, std::abs(rerun[v])));
                QCOMPARE(stepCross.rows(), rerunCross.rows());
                QCOMPARE(stepCross.cols(), Eigen::Index(source.size()));
                worstCross = std::max(worstCross, (stepCross - rerunCross).cwiseAbs().maxCoeff());
            }
            QVERIFY2(worstLogProb <= tol, qPrintable(QStringLiteral("log-probs off by %1").arg(worstLogProb)));
            QVERIFY2(worstCross <= tol, qPrintable(QStringLiteral("cross-attention off by %1").arg(worstCross)));
            // the steps' product: a row per decoder position in every layer's self-attention cache
            for (const Mat<T> &k : steps.selfK)
                QVERIFY(k.rows() >= Eigen::Index(decoder.size()));
        };
        if (float64) {
            check(castSeq2SeqWeights<double>(w), 1e-10);
        } else {
            check(std::make_shared<const Seq2SeqWeights<float>>(w), 1e-5);
        }
    }

    // Greedy generation with the folder's settings gives greedyTarget's ids where no logits
    // processor applies (T5's config names none): the two greedy paths agree.
    void greedyAgreesWithGreedyTarget()
    {
        Model *m = opened(QStringLiteral("t5-v1_1-tiny"));
        QVERIFY(m);
        TraceRequest req;
        req.ids = intsOf(expectedCase(QStringLiteral("t5-v1_1-tiny"), 0).value(QStringLiteral("source")).toArray());
        std::vector<int> viaTraces;
        Status st = greedyTarget(*m, req, 10, viaTraces);
        QVERIFY2(st.ok(), st.message.c_str());
        Seq2SeqGenerateOptions opt;
        opt.beams = 1;
        opt.maxNew = 10;
        opt.float64 = true;
        Seq2SeqGeneration g;
        st = generateTarget(*m, req, opt, g);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(g.ids, viaTraces);
        QCOMPARE(g.ids, intsOf(expectedCase(QStringLiteral("t5-v1_1-tiny"), 0).value(QStringLiteral("greedy")).toArray()));
    }

    // A step's cross-attention row is the teacher-forced trace's row of the same position (to float32's
    // rounding: the products there have more rows, which Eigen may block differently).
    void crossRowsAreTheTracesRows()
    {
        Model *m = opened(QStringLiteral("bart-tiny"));
        QVERIFY(m);
        TraceRequest req;
        req.ids = intsOf(expectedCase(QStringLiteral("bart-tiny"), 0).value(QStringLiteral("source")).toArray());
        Seq2SeqGenerateOptions opt;
        opt.beams = 3;
        opt.maxNew = 6;
        opt.noRepeatNgramSize = 1;
        Seq2SeqGeneration g;
        Status st = generateTarget(*m, req, opt, g);
        QVERIFY2(st.ok(), st.message.c_str());
        QVERIFY(g.ids.size() >= 3);
        req.targetIds = g.ids;
        Trace<float> t;
        st = m->trace(req, t);
        QVERIFY2(st.ok(), st.message.c_str());
        const int H = m->info().heads;
        QCOMPARE(t.seq2seq.cross.size(), size_t(m->info().layers));
        double worst = 0;
        for (size_t s = 0; s < g.ids.size(); ++s)
            for (int l = 0; l < m->info().layers; ++l)
                for (int h = 0; h < H; ++h)
                    worst = std::max(worst, (g.cross[s].row(l * H + h) -
                                             t.seq2seq.cross[size_t(l)].attention.batch[0].weights[size_t(h)].row(Eigen::Index(s)).cast<double>())
                                                .cwiseAbs()
                                                .maxCoeff());
        QVERIFY2(worst <= 1e-6, qPrintable(QString::number(worst)));
    }

    // The settings: config.json's fields (Marian's forced_eos_token_id) over transformers'
    // defaults; generation_config.json read instead of config.json where there is one; beams refused
    // past 4 and a malformed field named.
    void settings()
    {
        Seq2SeqGenerationSettings g;
        Status st = generationSettings(*opened(QStringLiteral("marian-tiny")), g);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(g.forcedEosId, 0);
        QCOMPARE(g.numBeams, 1);
        QCOMPARE(g.maxLength, 20);
        QCOMPARE(g.lengthPenalty, 1.0);
        QCOMPARE(g.earlyStopping, 0);
        QCOMPARE(g.forcedBosId, -1);

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        for (const QString &f : QDir(fixture(QStringLiteral("marian-tiny"))).entryList(QDir::Files))
            QVERIFY(QFile::copy(fixture(QStringLiteral("marian-tiny")) + QLatin1Char('/') + f, dir.filePath(f)));
        QFile gc(dir.filePath(QStringLiteral("generation_config.json")));
        QVERIFY(gc.open(QIODevice::WriteOnly));
        gc.write(R"({"num_beams": 4, "max_length": 9, "length_penalty": 0.6, "early_stopping": "never",
                     "bad_words_ids": [[63]], "no_repeat_ngram_size": 3, "decoder_start_token_id": 63})");
        gc.close();
        std::unique_ptr<Model> m;
        st = openPretrained(dir.path().toStdString(), {}, m);
        QVERIFY2(st.ok(), st.message.c_str());
        st = generationSettings(*m, g);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(g.numBeams, 4);
        QCOMPARE(g.maxLength, 9);
        QCOMPARE(g.lengthPenalty, 0.6);
        QCOMPARE(g.earlyStopping, 2);
        QCOMPARE(g.noRepeatNgramSize, 3);
        QCOMPARE(g.forcedEosId, -1); // config.json's is not read beside generation_config.json
        QCOMPARE(g.badWordsIds, (std::vector<std::vector<int>>{{63}}));
        TraceRequest req;
        req.ids = {5, 6, 0};
        Seq2SeqGeneration out;
        st = generateTarget(*m, req, {}, out);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(out.settings.numBeams, 4);
        QVERIFY(out.ids.size() <= 8);
        for (int id : out.ids)
            QVERIFY(id != 63); // bad_words_ids

        for (int beams : {1, 3}) { // --max-new 0: nothing generated, greedy or beams
            Seq2SeqGenerateOptions none;
            none.beams = beams;
            none.maxNew = 0;
            st = generateTarget(*m, req, none, out);
            QVERIFY2(st.ok(), st.message.c_str());
            QVERIFY(out.ids.empty() && out.cross.empty());
            QCOMPARE(out.settings.maxLength, 1);
        }

        Seq2SeqGenerateOptions five;
        five.beams = 5;
        st = generateTarget(*m, req, five, out);
        QVERIFY(!st.ok());
        QCOMPARE(st.message, std::string("beam search of 5 beams: 1 (greedy) to 4 are computed"));

        QVERIFY(gc.open(QIODevice::WriteOnly | QIODevice::Truncate));
        gc.write(R"({"early_stopping": "sometimes"})");
        gc.close();
        st = openPretrained(dir.path().toStdString(), {}, m);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("generation_config.json: early_stopping: true, false or \"never\"") != std::string::npos,
                 st.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestSeq2SeqGenerate)
#include "tst_seq2seqgenerate.moc"
