// SPDX-License-Identifier: GPL-3.0-or-later
// Marian (core/src/models/families/marian.cpp, forward/seq2seq.cpp): a tiny random Hugging Face
// folder (tests/fixtures/models/make_marian.py) against the float64 reference of modeling_marian.py
// — every attention of every layer and head, each stack's input, each block's output, the final
// states, every logit, greedy ids — and each fact on its own: the sinusoidal table
// (MarianSinusoidalPositionalEmbedding: sines in the first half, cosines in the second, float32),
// computed and added from position 0 in each stack; embeddings times sqrt(d_model); the decoder
// started at the pad id; a stored table used only when it is that table; the config's defaults and
// what is not read, named.
#include "seq2seqchecks.h"

using namespace attnviz;
using namespace attnviz::testing;

class TestMarian : public QObject {
    Q_OBJECT

private slots:
    void config()
    {
        Architecture a;
        Status st = readArchitecture(fixture(QStringLiteral("marian-tiny")).toStdString(), a);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(a.family, std::string("marian"));
        QVERIFY(a.encoderDecoder);
        QCOMPARE(a.positions, PositionKind::Sinusoidal);
        QCOMPARE(a.seq2seq.positionOffset, 0);
        QCOMPARE(a.placement, NormPlacement::Post);
        QVERIFY(!a.embeddingNorm && !a.finalNorm);
        QCOMPARE(a.embeddingScale, 4.0);          // sqrt(16): scale_embedding
        QCOMPARE(a.activation, Activation::Silu); // "swish"
        QCOMPARE(a.scale(), 0.5);
        QVERIFY(a.seq2seq.logitsBias);
        QCOMPARE(a.seq2seq.decoderStartId, 63); // the pad id
        QCOMPARE(a.seq2seq.padId, 63);
        QCOMPARE(a.seq2seq.eosId, 0);
        QCOMPARE(a.seq2seq.bosId, -1); // MarianTokenizer puts nothing before a source
        // MarianConfig's defaults where the file is silent
        Architecture d;
        st = parseArchitecture(R"({"model_type": "marian"})", "config.json", d);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(d.vocabulary, 58101);
        QCOMPARE(d.dModel, 1024);
        QCOMPARE(d.seq2seq.padId, 58100);
        QCOMPARE(d.seq2seq.decoderStartId, 58100);
        QCOMPARE(d.seq2seq.eosId, 0);
        QCOMPARE(d.activation, Activation::GeluErf);
        QCOMPARE(d.embeddingScale, 1.0); // scale_embedding false
        // separate source and target vocabularies: not read yet, in one line
        const std::string got = configError(QStringLiteral("marian-tiny"), [](QJsonObject &o) {
            o[QStringLiteral("share_encoder_decoder_embeddings")] = false;
        });
        QVERIFY2(
            got.find(
                "config.json: share_encoder_decoder_embeddings: false: separate source and target vocabularies are not "
                "read yet") == 0,
            got.c_str());
    }

    // The table against the modeling file's formula, evaluated by make_marian.py: an even width and
    // an odd one (ceil(d / 2) sines, then floor(d / 2) cosines).
    void sinusoids_data()
    {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("d");
        QTest::newRow("16") << 20 << 16;
        QTest::newRow("7") << 5 << 7;
    }
    void sinusoids()
    {
        QFETCH(int, rows);
        QFETCH(int, d);
        const QJsonArray want = expected(QStringLiteral("marian-tiny"))
                                    .value(QStringLiteral("sinusoids"))
                                    .toObject()
                                    .value(QString::number(d))
                                    .toArray();
        QCOMPARE(want.size(), rows);
        const std::vector<float> got = marianPositions(rows, d);
        QCOMPARE(int(got.size()), rows * d);
        for (int p = 0; p < rows; ++p)
            for (int j = 0; j < d; ++j)
                QVERIFY2(got[size_t(p * d + j)] == float(want[p].toArray()[j].toDouble()),
                         qPrintable(QStringLiteral("row %1 column %2").arg(p).arg(j)));
        // the layout itself: row 0 is sin 0 = 0 in the first half and cos 0 = 1 in the second
        const int sines = (d + 1) / 2;
        for (int j = 0; j < d; ++j)
            QCOMPARE(got[size_t(j)], j < sines ? 0.0f : 1.0f);
        // column 0 is sin(p), column `sines` cos(p) (frequency 1)
        QCOMPARE(got[size_t(3 * d)], float(std::sin(3.0)));
        QCOMPARE(got[size_t(3 * d + sines)], float(std::cos(3.0)));
    }

    void trace_data()
    {
        QTest::addColumn<int>("index");
        QTest::addColumn<bool>("float64");
        for (int i = 0; i < 2; ++i)
            for (bool f64 : {true, false})
                QTest::addRow("case %d %s", i, f64 ? "float64" : "float32") << i << f64;
    }
    void trace()
    {
        QFETCH(int, index);
        QFETCH(bool, float64);
        if (float64)
            checkSeq2SeqTrace<double>(QStringLiteral("marian-tiny"), index, 1e-10);
        else
            checkSeq2SeqTrace<float>(QStringLiteral("marian-tiny"), index, 1e-5);
    }

    void greedy_data()
    {
        QTest::addColumn<int>("index");
        QTest::newRow("case 0") << 0;
        QTest::newRow("case 1") << 1;
    }
    void greedy()
    {
        QFETCH(int, index);
        checkGreedy(QStringLiteral("marian-tiny"), index);
    }

    // The decoder's input is shared * sqrt(d_model) + the sinusoid of its position, nothing else
    // (no layernorm_embedding, no offset); the first token is the pad id.
    void decoderInput()
    {
        Trace<double> t;
        std::string error;
        QVERIFY2(traceCase(QStringLiteral("marian-tiny"), 0, t, error), error.c_str());
        const int d = 16;
        QCOMPARE(t.tokens.front().id, 63);
        const std::vector<double> E = tensor(QStringLiteral("marian-tiny"), "model.shared.weight");
        const std::vector<float> table = marianPositions(20, d);
        for (int i = 0; i < int(t.tokens.size()); ++i)
            for (int j = 0; j < d; ++j) {
                QVERIFY(std::abs(t.embeddings(i, j) - 4.0 * E[size_t(t.tokens[size_t(i)].id) * d + size_t(j)]) < 1e-12);
                QVERIFY(std::abs(t.input(i, j) - t.embeddings(i, j) - double(table[size_t(i * d + j)])) < 1e-12);
            }
        QVERIFY(tensor(QStringLiteral("marian-tiny"), "model.encoder.embed_positions.weight").empty()); // not stored
    }

    // A file that stores embed_positions (older conversions): the sinusoid table is accepted, another
    // table refused, naming the tensor.
    void storedPositions()
    {
        // marian-tiny has no such tensor to overwrite: take bart-tiny's file (its tables are
        // 22 x 16) under a Marian config of 22 positions, with the sinusoids written in
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::vector<float> table = marianPositions(22, 16);
        auto asMarian = [](QJsonObject &o) {
            o[QStringLiteral("model_type")] = QStringLiteral("marian");
            o[QStringLiteral("max_position_embeddings")] = 22;
        };
        QVERIFY(copyFixture(
            QStringLiteral("bart-tiny"), dir, asMarian,
            {{"model.encoder.embed_positions.weight", table}, {"model.decoder.embed_positions.weight", table}}));
        std::unique_ptr<Model> m;
        Status st = openPretrained(dir.path().toStdString(), {}, m);
        QVERIFY2(st.ok(), st.message.c_str());
        QTemporaryDir other;
        QVERIFY(other.isValid());
        std::vector<float> wrong = table;
        wrong[5] += 0.5f;
        QVERIFY(copyFixture(
            QStringLiteral("bart-tiny"), other, asMarian,
            {{"model.encoder.embed_positions.weight", table}, {"model.decoder.embed_positions.weight", wrong}}));
        st = openPretrained(other.path().toStdString(), {}, m);
        QVERIFY(!st);
        QVERIFY2(st.message.find("model.decoder.embed_positions.weight: differs from the sinusoidal table by 0.5") !=
                     std::string::npos,
                 st.message.c_str());
    }

    // Text needs Marian's tokenizer files, which this folder lacks (tst_mariantokenizer reads them):
    // one line, ids trace.
    void tokenizerRefused()
    {
        std::vector<TraceToken> tokens;
        const Status st = opened(QStringLiteral("marian-tiny"))->tokenize("Hello", tokens);
        QVERIFY(!st);
        QVERIFY2(
            st.message.find(
                "marian-tiny/source.spm, target.spm and vocab.json: missing (Marian's tokenizer): only token ids trace") !=
                std::string::npos,
            st.message.c_str());
    }
};

QTEST_APPLESS_MAIN(TestMarian)
#include "tst_marian.moc"
