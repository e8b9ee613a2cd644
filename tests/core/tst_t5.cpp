// SPDX-License-Identifier: GPL-3.0-or-later
// T5, the encoder-decoder family (core/src/models/families/t5.cpp, forward/seq2seq.cpp): tiny
// random Hugging Face folders of T5 v1.0 (ReLU, tied head scaled by d_model^-0.5) and T5 v1.1
// (gated gelu_new, untied head) against the float64 reference transcribed from modeling_t5.py
// (tests/fixtures/models/make_t5.py): the encoder's, the decoder's and the cross attentions of
// every layer and head, each block's output, both stacks' final states, every logit, greedy
// decoding's ids, the relative position buckets in both directions; config facts and bad input.
#include "testpaths.h"
#include "attnviz/architecture.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/pretrained.h"
#include "modelchecks.h"
#include "seq2seqchecks.h"

#include <QDir>
#include <QTemporaryDir>

#include <map>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

template <typename T>
void checkTrace(const QString &model, int index, double tol)
{
    Model *m = opened(model);
    QVERIFY(m);
    const QJsonObject c = expected(model).value(QStringLiteral("cases")).toArray()[index].toObject();
    TraceRequest r;
    r.ids = intsOf(c.value(QStringLiteral("source")).toArray());
    r.targetIds = intsOf(c.value(QStringLiteral("target")).toArray());
    r.allPredictions = true;
    r.topK = m->info().vocabulary; // every logit comes back: log p + the log normalizer
    Trace<T> t;
    const Status st = m->trace(r, t);
    QVERIFY2(st.ok(), st.message.c_str());
    QVERIFY(t.encoderDecoder());
    // tokens: the encoder reads the source; the decoder its start token (the pad id) and the target
    const std::vector<int> decoder = intsOf(c.value(QStringLiteral("decoder")).toArray());
    QCOMPARE(int(t.seq2seq.sourceTokens.size()), int(r.ids.size()));
    QCOMPARE(int(t.tokens.size()), int(decoder.size()));
    for (size_t i = 0; i < decoder.size(); ++i)
        QCOMPARE(t.tokens[i].id, decoder[i]);
    QCOMPARE(t.tokens.front().id, 0);
    // the three attentions as a view selects them: queries and keys of each
    QCOMPARE(&t.attentions(AttentionKind::Encoder), &t.seq2seq.encoder);
    QCOMPARE(&t.attentions(AttentionKind::Cross), &t.seq2seq.cross);
    QCOMPARE(&t.attentions(AttentionKind::Self), &t.layers);
    QCOMPARE(t.keysOf(AttentionKind::Cross).size(), r.ids.size());
    QCOMPARE(t.queriesOf(AttentionKind::Cross).size(), decoder.size());
    QCOMPARE(t.keysOf(AttentionKind::Self).size(), decoder.size());
    QCOMPARE(t.queriesOf(AttentionKind::Encoder).size(), r.ids.size());
    struct Stage {
        const char *name;
        double dev;
    };
    std::vector<Stage> stages{
        {"encoder attentions", attentionDeviation(t.seq2seq.encoder, c.value(QStringLiteral("encoder_attentions")).toArray())},
        {"decoder attentions", attentionDeviation(t.layers, c.value(QStringLiteral("decoder_attentions")).toArray())},
        {"cross attentions", attentionDeviation(t.seq2seq.cross, c.value(QStringLiteral("cross_attentions")).toArray())},
        {"encoder final", deviation(t.seq2seq.encoderFinal, c.value(QStringLiteral("encoder_final")).toArray())},
        {"decoder final", deviation(t.final, c.value(QStringLiteral("decoder_final")).toArray())},
    };
    const QJsonArray encBlocks = c.value(QStringLiteral("encoder_blocks")).toArray();
    const QJsonArray decBlocks = c.value(QStringLiteral("decoder_blocks")).toArray();
    QCOMPARE(int(t.seq2seq.encoder.size()), encBlocks.size());
    QCOMPARE(int(t.layers.size()), decBlocks.size());
    for (int l = 0; l < encBlocks.size(); ++l)
        stages.push_back({"encoder block", deviation(t.seq2seq.encoder[size_t(l)].output, encBlocks[l].toArray())});
    for (int l = 0; l < decBlocks.size(); ++l)
        stages.push_back({"decoder block", deviation(t.layers[size_t(l)].output, decBlocks[l].toArray())});
    // the logits: every one from its probability and the row's normalizer
    const QJsonArray logits = c.value(QStringLiteral("logits")).toArray();
    Mat<double> got(logits.size(), m->info().vocabulary);
    got.setConstant(NAN);
    QCOMPARE(int(t.predictions.next.size()), logits.size());
    for (int i = 0; i < logits.size(); ++i)
        for (const TokenProb &p : t.predictions.next[size_t(i)])
            got(i, p.id) = std::log(p.p) + t.predictions.logNormalizer[size_t(i)];
    stages.push_back({"logits", deviation(got, logits)});
    for (const Stage &s : stages)
        QVERIFY2(s.dev <= tol, qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(s.name)).arg(s.dev)));
    // the probability of each next target token
    for (int i = 0; i + 1 < logits.size(); ++i) {
        const QJsonArray row = logits[i].toArray();
        double mx = -INFINITY, sum = 0;
        for (const QJsonValue &v : row)
            mx = std::max(mx, v.toDouble());
        for (const QJsonValue &v : row)
            sum += std::exp(v.toDouble() - mx);
        const double p = std::exp(row[decoder[size_t(i + 1)]].toDouble() - mx) / sum;
        QVERIFY(std::abs(t.predictions.actualNext[size_t(i)] - p) <= tol);
    }
}

} // namespace

class TestT5 : public QObject {
    Q_OBJECT

private slots:
    void config_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("gated");
        QTest::addColumn<int>("activation");
        QTest::addColumn<bool>("tied");
        QTest::addColumn<double>("outputScale");
        QTest::newRow("v1.0") << "t5-tiny" << false << int(Activation::Relu) << true << 0.25;
        QTest::newRow("v1.1") << "t5-v1_1-tiny" << true << int(Activation::GeluTanh) << false << 1.0;
    }
    void config()
    {
        QFETCH(QString, model);
        Architecture a;
        const Status st = readArchitecture(fixture(model).toStdString(), a);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(a.family, std::string("t5"));
        QVERIFY(a.encoderDecoder);
        QCOMPARE(a.seq2seq.encoderLayers, 2); // num_layers
        QCOMPARE(a.layers, 3);                // num_decoder_layers
        QCOMPARE(a.heads, 4);
        QCOMPARE(a.dHead, 6); // d_kv: 4 x 6 = 24 wide attention in a 16 wide model
        QCOMPARE(a.dModel, 16);
        QCOMPARE(a.dFeedForward, 20);
        QCOMPARE(a.norm, NormKind::RmsNorm);
        QCOMPARE(a.normEps, 1e-6);
        QCOMPARE(a.scale(), 1.0); // no 1/sqrt(d_kv)
        QCOMPARE(a.positions, PositionKind::RelativeBuckets);
        QCOMPARE(a.relative.buckets, 8);
        QCOMPARE(a.relative.maxDistance, 12);
        QVERIFY(!a.qkvBias && !a.outBias && !a.mlpBias);
        QCOMPARE(a.seq2seq.decoderStartId, 0);
        QCOMPARE(a.seq2seq.eosId, 1);
        QTEST(a.gatedMlp, "gated");
        QTEST(int(a.activation), "activation");
        QTEST(a.tiedEmbeddings, "tied");
        QTEST(a.outputScale, "outputScale");
        // T5Config's defaults where the file is silent
        Architecture d;
        QVERIFY(parseArchitecture(R"({"model_type": "t5", "vocab_size": 100, "d_model": 8, "d_kv": 4, "d_ff": 16,
                                     "num_layers": 2, "num_heads": 2, "pad_token_id": 5})",
                                  "config.json", d)
                    .ok());
        QCOMPARE(d.layers, 2); // num_decoder_layers = num_layers
        QCOMPARE(d.relative.buckets, 32);
        QCOMPARE(d.relative.maxDistance, 128);
        QCOMPARE(d.normEps, 1e-6);
        QCOMPARE(d.activation, Activation::Relu);
        QVERIFY(!d.gatedMlp);
        QVERIFY(d.tiedEmbeddings);
        QCOMPARE(d.seq2seq.decoderStartId, 5); // the pad id
    }

    void buckets_data()
    {
        QTest::addColumn<bool>("bidirectional");
        QTest::newRow("encoder") << true;
        QTest::newRow("decoder") << false;
    }
    void buckets()
    {
        QFETCH(bool, bidirectional);
        Architecture a;
        QVERIFY(readArchitecture(fixture(QStringLiteral("t5-tiny")).toStdString(), a).ok());
        const QJsonObject e = expected(QStringLiteral("t5-tiny"));
        const std::vector<int> rel = intsOf(e.value(QStringLiteral("relative_positions")).toArray());
        const std::vector<int> want = intsOf(
            e.value(QStringLiteral("buckets")).toObject().value(bidirectional ? QStringLiteral("bidirectional") : QStringLiteral("unidirectional")).toArray());
        QCOMPARE(rel.size(), want.size());
        for (size_t i = 0; i < rel.size(); ++i)
            QVERIFY2(a.relative.bucket(rel[i], bidirectional) == want[i], qPrintable(QString::number(rel[i])));
        // t5-small's shape (32 buckets, 128): the buckets of its own code at a few distances
        RelativeBuckets b;
        QCOMPARE(b.bucket(-1, true), 1);
        QCOMPARE(b.bucket(1, true), 17);
        QCOMPARE(b.bucket(-7, true), 7);
        QCOMPARE(b.bucket(-8, true), 8);
        QCOMPARE(b.bucket(-127, true), 15);
        QCOMPARE(b.bucket(500, true), 31);
        QCOMPARE(b.bucket(5, false), 0);
        QCOMPARE(b.bucket(-15, false), 15);
        QCOMPARE(b.bucket(-16, false), 16);
        QCOMPARE(b.bucket(-1000, false), 31);
    }

    void trace_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("index");
        QTest::addColumn<bool>("float64");
        for (const char *m : {"t5-tiny", "t5-v1_1-tiny"})
            for (int i = 0; i < 2; ++i)
                for (bool f64 : {true, false})
                    QTest::addRow("%s case %d %s", m, i, f64 ? "float64" : "float32") << QString::fromLatin1(m) << i << f64;
    }
    void trace()
    {
        QFETCH(QString, model);
        QFETCH(int, index);
        QFETCH(bool, float64);
        if (float64)
            checkTrace<double>(model, index, 1e-10);
        else
            checkTrace<float>(model, index, 1e-5);
    }

    void greedy_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("index");
        for (const char *m : {"t5-tiny", "t5-v1_1-tiny"})
            for (int i = 0; i < 2; ++i)
                QTest::addRow("%s case %d", m, i) << QString::fromLatin1(m) << i;
    }
    void greedy()
    {
        QFETCH(QString, model);
        QFETCH(int, index);
        Model *m = opened(model);
        QVERIFY(m);
        const QJsonObject c = expected(model).value(QStringLiteral("cases")).toArray()[index].toObject();
        TraceRequest r;
        r.ids = intsOf(c.value(QStringLiteral("source")).toArray());
        std::vector<int> ids;
        const Status st = greedyTarget(*m, r, 10, ids);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(ids, intsOf(c.value(QStringLiteral("greedy")).toArray()));
    }

    void badConfig_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("three parts") << "feed_forward_proj" << QJsonValue("gated-gelu-new")
                                     << "config.json: feed_forward_proj: \"gated-gelu-new\" is not ACT or gated-ACT";
        QTest::newRow("not gated") << "feed_forward_proj" << QJsonValue("relu-gelu")
                                   << "config.json: feed_forward_proj: \"relu-gelu\" is not ACT or gated-ACT";
        QTest::newRow("unknown activation") << "feed_forward_proj" << QJsonValue("gated-tanh")
                                            << "config.json: feed_forward_proj: \"gated-tanh\": tanh is not an activation";
        QTest::newRow("max distance") << "relative_attention_max_distance" << QJsonValue(4)
                                      << "config.json: relative_attention_max_distance: 4 must exceed half of "
                                         "relative_attention_num_buckets (8)";
        QTest::newRow("start id") << "decoder_start_token_id" << QJsonValue(448)
                                  << "config.json: decoder_start_token_id: 448 is not below vocab_size 448";
        QTest::newRow("no layers") << "num_layers" << QJsonValue(QJsonValue::Null) << "config.json: num_layers: missing";
    }
    void badConfig()
    {
        QFETCH(QString, field);
        QFETCH(QJsonValue, value);
        QFETCH(QString, message);
        const std::string got = configError(QStringLiteral("t5-tiny"), [&](QJsonObject &o) { o[field] = value; });
        QVERIFY2(got.find(message.toStdString()) == 0, got.c_str());
    }

    // A config whose d_kv does not fit the tensors: the message names the file, the tensor, both shapes.
    void wrongShape()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString from = fixture(QStringLiteral("t5-tiny"));
        QVERIFY(QFile::copy(from + QStringLiteral("/model.safetensors"), dir.filePath(QStringLiteral("model.safetensors"))));
        QFile f(from + QStringLiteral("/config.json"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        o[QStringLiteral("d_kv")] = 5;
        QFile out(dir.filePath(QStringLiteral("config.json")));
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(o).toJson());
        out.close();
        std::unique_ptr<Model> m;
        const Status st = openPretrained(dir.path().toStdString(), {}, m);
        QVERIFY(!st);
        QVERIFY2(st.message.find("model.safetensors: encoder.block.0.layer.0.SelfAttention.q.weight: shape (24, 16), "
                                 "expected (20, 16)") != std::string::npos,
                 st.message.c_str());
        QVERIFY(!m);
    }

    // Ids outside the vocabulary are refused with a message, not read out of bounds.
    void badIds()
    {
        Model *m = opened(QStringLiteral("t5-tiny"));
        QVERIFY(m);
        TraceRequest r;
        r.ids = {5, 448};
        Trace<float> t;
        const Status st = m->trace(r, t);
        QVERIFY(!st);
        QVERIFY2(st.message.find("token id 448 is outside the vocabulary (448)") != std::string::npos, st.message.c_str());
    }
};

QTEST_APPLESS_MAIN(TestT5)
#include "tst_t5.moc"
