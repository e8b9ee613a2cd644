// SPDX-License-Identifier: GPL-3.0-or-later
// BART and mBART (core/src/models/families/bart.cpp, forward/seq2seq.cpp): tiny random Hugging Face
// folders (tests/fixtures/models/make_bart.py) against the float64 reference transcribed from
// modeling_bart.py / modeling_mbart.py — the encoder's, the decoder's and the cross attentions of
// every layer and head, each stack's input, each block's output, the final states, every logit,
// greedy ids — and each fact of those files on its own: learned positions read at row i + 2,
// final_logits_bias added to the tied head's logits (zeros where the file has none), the embedding
// scale, post-LN blocks (BART) against pre-LN blocks with final norms (mBART), the config's
// defaults; bad configs and tensors named.
#include "seq2seqchecks.h"

using namespace attnviz;
using namespace attnviz::testing;

namespace {

// nn.LayerNorm of one row, float64.
std::vector<double> layerNorm(const std::vector<double> &x, const std::vector<double> &w, const std::vector<double> &b)
{
    double m = 0, v = 0;
    for (double e : x)
        m += e;
    m /= double(x.size());
    for (double e : x)
        v += (e - m) * (e - m);
    v /= double(x.size());
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i)
        y[i] = (x[i] - m) / std::sqrt(v + 1e-5) * w[i] + b[i];
    return y;
}

} // namespace

class TestBart : public QObject {
    Q_OBJECT

private slots:
    void config()
    {
        Architecture a;
        Status st = readArchitecture(fixture(QStringLiteral("bart-tiny")).toStdString(), a);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(a.family, std::string("bart"));
        QVERIFY(a.encoderDecoder);
        QCOMPARE(a.seq2seq.encoderLayers, 2);
        QCOMPARE(a.layers, 3);
        QCOMPARE(a.heads, 4);
        QCOMPARE(a.dHead, 4); // d_model / heads
        QCOMPARE(a.dFeedForward, 20);
        QCOMPARE(a.maxPositions, 20);
        QCOMPARE(a.norm, NormKind::LayerNorm);
        QCOMPARE(a.normEps, 1e-5); // nn.LayerNorm's default
        QCOMPARE(a.placement, NormPlacement::Post);
        QVERIFY(a.embeddingNorm); // layernorm_embedding
        QVERIFY(!a.finalNorm);
        QCOMPARE(a.positions, PositionKind::Learned);
        QCOMPARE(a.seq2seq.positionOffset, 2); // BartLearnedPositionalEmbedding.offset
        QVERIFY(a.seq2seq.logitsBias);
        QCOMPARE(a.scale(), 0.5); // head_dim^-0.5
        QVERIFY(a.qkvBias && a.outBias && a.mlpBias);
        QCOMPARE(a.activation, Activation::GeluErf);
        QCOMPARE(a.embeddingScale, 1.0);
        QVERIFY(a.tiedEmbeddings);
        QCOMPARE(a.seq2seq.decoderStartId, 2);
        QCOMPARE(a.seq2seq.eosId, 2);
        QCOMPARE(a.seq2seq.padId, 1);
        QCOMPARE(a.seq2seq.bosId, 0);
        // BartConfig's defaults where the file is silent
        Architecture d;
        st = parseArchitecture(R"({"model_type": "bart"})", "config.json", d);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(d.vocabulary, 50265);
        QCOMPARE(d.dModel, 1024);
        QCOMPARE(d.maxPositions, 1024);
        QCOMPARE(d.seq2seq.encoderLayers, 12);
        QCOMPARE(d.layers, 12);
        QCOMPARE(d.heads, 16);
        QCOMPARE(d.dFeedForward, 4096);
        QCOMPARE(d.activation, Activation::GeluErf); // "gelu"
        QCOMPARE(d.embeddingScale, 1.0);             // scale_embedding false
        QCOMPARE(d.seq2seq.decoderStartId, 2);
        QCOMPARE(d.seq2seq.padId, 1);
        QCOMPARE(d.seq2seq.eosId, 2);
        QVERIFY(d.tiedEmbeddings);
        // scale_embedding: sqrt(d_model)
        QVERIFY(parseArchitecture(
                    R"({"model_type": "bart", "d_model": 64, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
                                     "scale_embedding": true})",
                    "config.json", d)
                    .ok());
        QCOMPARE(d.embeddingScale, 8.0);
        // mBART: pre-LN, final norms, scale_embedding from the file
        Architecture m;
        st = readArchitecture(fixture(QStringLiteral("mbart-tiny")).toStdString(), m);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(m.family, std::string("mbart"));
        QCOMPARE(m.placement, NormPlacement::Pre);
        QVERIFY(m.finalNorm && m.embeddingNorm);
        QCOMPARE(m.embeddingScale, 4.0);
        QCOMPARE(m.seq2seq.positionOffset, 2);
        QCOMPARE(m.seq2seq.decoderStartId, 60);
    }

    void trace_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("index");
        QTest::addColumn<bool>("float64");
        for (const char *m : {"bart-tiny", "mbart-tiny"})
            for (int i = 0; i < 2; ++i)
                for (bool f64 : {true, false})
                    QTest::addRow("%s case %d %s", m, i, f64 ? "float64" : "float32")
                        << QString::fromLatin1(m) << i << f64;
    }
    void trace()
    {
        QFETCH(QString, model);
        QFETCH(int, index);
        QFETCH(bool, float64);
        if (float64)
            checkSeq2SeqTrace<double>(model, index, 1e-10);
        else
            checkSeq2SeqTrace<float>(model, index, 1e-5);
    }

    void greedy_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("index");
        for (const char *m : {"bart-tiny", "mbart-tiny"})
            for (int i = 0; i < 2; ++i)
                QTest::addRow("%s case %d", m, i) << QString::fromLatin1(m) << i;
    }
    void greedy()
    {
        QFETCH(QString, model);
        QFETCH(int, index);
        checkGreedy(model, index);
    }

    // Each stack's input is layernorm_embedding(tokens * scale + positions[i + 2]): recomputed here
    // from the file's tensors; the rows at the position itself (no offset) give something else.
    // Rows 0 and 1 of the table are never read: overwritten, the trace does not change.
    void positionOffset_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("prefix");
        QTest::addColumn<double>("scale");
        QTest::newRow("bart") << "bart-tiny"
                              << "model." << 1.0;
        QTest::newRow("mbart") << "mbart-tiny"
                               << "" << 4.0;
    }
    void positionOffset()
    {
        QFETCH(QString, model);
        QFETCH(QString, prefix);
        QFETCH(double, scale);
        const std::string p = prefix.toStdString();
        Trace<double> t;
        std::string error;
        QVERIFY2(traceCase(model, 0, t, error), error.c_str());
        const int d = 16;
        std::vector<int64_t> shape;
        const std::vector<double> E = tensor(model, p + "shared.weight");
        const std::vector<double> P = tensor(model, p + "decoder.embed_positions.weight", &shape);
        const std::vector<double> w = tensor(model, p + "decoder.layernorm_embedding.weight");
        const std::vector<double> b = tensor(model, p + "decoder.layernorm_embedding.bias");
        QCOMPARE(shape, (std::vector<int64_t>{20 + 2, d})); // max_position_embeddings + 2 rows
        double withOffset = 0, without = 0;
        for (int i = 0; i < int(t.tokens.size()); ++i) {
            std::vector<double> x(d), y(d);
            for (int j = 0; j < d; ++j) {
                const double token = E[size_t(t.tokens[size_t(i)].id) * d + size_t(j)] * scale;
                QVERIFY(std::abs(t.embeddings(i, j) - token) < 1e-12); // the embedding scale
                x[size_t(j)] = token + P[size_t(i + 2) * d + size_t(j)];
                y[size_t(j)] = token + P[size_t(i) * d + size_t(j)];
            }
            const std::vector<double> nx = layerNorm(x, w, b), ny = layerNorm(y, w, b);
            for (int j = 0; j < d; ++j) {
                withOffset = std::max(withOffset, std::abs(t.input(i, j) - nx[size_t(j)]));
                without = std::max(without, std::abs(t.input(i, j) - ny[size_t(j)]));
            }
        }
        QVERIFY2(withOffset < 1e-10, qPrintable(QString::number(withOffset)));
        QVERIFY2(without > 1e-2, qPrintable(QString::number(without)));
        // rows 0 and 1 overwritten in both tables: the same trace
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        std::map<std::string, std::vector<float>> edits;
        for (const char *stack : {"encoder", "decoder"}) {
            const std::string name = p + stack + ".embed_positions.weight";
            std::vector<double> table = tensor(model, name);
            std::vector<float> f(table.begin(), table.end());
            for (int j = 0; j < 2 * d; ++j)
                f[size_t(j)] = 1000.0f;
            edits[name] = f;
        }
        QVERIFY(copyFixture(
            model, dir, [](QJsonObject &) {}, edits));
        std::unique_ptr<Model> m;
        const Status st = openPretrained(dir.path().toStdString(), {}, m);
        QVERIFY2(st.ok(), st.message.c_str());
        const QJsonObject c = expectedCase(model, 0);
        TraceRequest r;
        r.ids = intsOf(c.value(QStringLiteral("source")).toArray());
        r.targetIds = intsOf(c.value(QStringLiteral("target")).toArray());
        Trace<double> u;
        QVERIFY(m->trace(r, u).ok());
        QCOMPARE(u.final, t.final);
        QCOMPARE(u.seq2seq.encoderFinal, t.seq2seq.encoderFinal);
    }

    // logits = final · sharedᵀ + final_logits_bias: bart-tiny's random bias; mbart-tiny has none
    // in its file (a BartModel-style save), so the model's zeros.
    void finalLogitsBias_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("prefix");
        QTest::addColumn<bool>("stored");
        QTest::newRow("bart") << "bart-tiny"
                              << "model." << true;
        QTest::newRow("mbart") << "mbart-tiny"
                               << "" << false;
    }
    void finalLogitsBias()
    {
        QFETCH(QString, model);
        QFETCH(QString, prefix);
        QFETCH(bool, stored);
        Trace<double> t;
        std::string error;
        QVERIFY2(traceCase(model, 1, t, error), error.c_str());
        const int V = opened(model)->info().vocabulary, d = 16;
        const std::vector<double> E = tensor(model, prefix.toStdString() + "shared.weight");
        std::vector<double> bias = tensor(model, "final_logits_bias");
        QCOMPARE(bias.empty(), !stored);
        if (!stored)
            bias.assign(size_t(V), 0.0);
        else
            QVERIFY(*std::max_element(bias.begin(), bias.end()) > 0.1); // a real bias, not zeros
        const Mat<double> logits = logitsOf(t, V);
        double worst = 0;
        for (Eigen::Index i = 0; i < logits.rows(); ++i)
            for (int v = 0; v < V; ++v) {
                double dot = 0;
                for (int j = 0; j < d; ++j)
                    dot += t.final(i, j) * E[size_t(v) * d + size_t(j)];
                worst = std::max(worst, std::abs(logits(i, v) - (dot + bias[size_t(v)])));
            }
        QVERIFY2(worst < 1e-10, qPrintable(QString::number(worst)));
    }

    // Post-LN (BART): every block's output is its final_layer_norm's output, each row normalized
    // (mean 0, variance var / (var + eps) after undoing the norm's weight and bias). Pre-LN (mBART):
    // block outputs are raw residual streams, and the stacks end in their own layer_norm.
    void normPlacement_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("prefix");
        QTest::addColumn<bool>("post");
        QTest::newRow("bart post-LN") << "bart-tiny"
                                      << "model." << true;
        QTest::newRow("mbart pre-LN") << "mbart-tiny"
                                      << "" << false;
    }
    void normPlacement()
    {
        QFETCH(QString, model);
        QFETCH(QString, prefix);
        QFETCH(bool, post);
        Trace<double> t;
        std::string error;
        QVERIFY2(traceCase(model, 0, t, error), error.c_str());
        const std::string p = prefix.toStdString();
        auto worstNormalized = [&](const Mat<double> &x, const std::string &norm) {
            const std::vector<double> w = tensor(model, norm + ".weight"), b = tensor(model, norm + ".bias");
            double worst = 0;
            for (Eigen::Index i = 0; i < x.rows(); ++i) {
                double m = 0, v = 0;
                for (Eigen::Index j = 0; j < x.cols(); ++j)
                    m += (x(i, j) - b[size_t(j)]) / w[size_t(j)];
                m /= double(x.cols());
                for (Eigen::Index j = 0; j < x.cols(); ++j)
                    v += std::pow((x(i, j) - b[size_t(j)]) / w[size_t(j)] - m, 2);
                v /= double(x.cols());
                worst = std::max({worst, std::abs(m), std::abs(v - 1.0) > 1e-3 ? std::abs(v - 1.0) : 0.0});
            }
            return worst;
        };
        for (int l = 0; l < 2; ++l) {
            const std::string at = p + "encoder.layers." + std::to_string(l) + ".";
            const double self =
                worstNormalized(t.seq2seq.encoder[size_t(l)].afterAttention, at + "self_attn_layer_norm");
            const double out = worstNormalized(t.seq2seq.encoder[size_t(l)].output, at + "final_layer_norm");
            if (post) {
                QVERIFY2(self < 1e-9 && out < 1e-9, qPrintable(QStringLiteral("%1 %2").arg(self).arg(out)));
            } else {
                QVERIFY(self > 1e-3 && out > 1e-3);
            }
        }
        for (int l = 0; l < 3; ++l) {
            const std::string at = p + "decoder.layers." + std::to_string(l) + ".";
            const double cross = worstNormalized(t.seq2seq.cross[size_t(l)].output, at + "encoder_attn_layer_norm");
            const double out = worstNormalized(t.layers[size_t(l)].output, at + "final_layer_norm");
            if (post)
                QVERIFY2(cross < 1e-9 && out < 1e-9, qPrintable(QStringLiteral("%1 %2").arg(cross).arg(out)));
            else
                QVERIFY(cross > 1e-3 && out > 1e-3);
        }
        if (!post) {
            QVERIFY(worstNormalized(t.seq2seq.encoderFinal, "encoder.layer_norm") < 1e-9);
            QVERIFY(worstNormalized(t.final, "decoder.layer_norm") < 1e-9);
        } else {
            QCOMPARE(t.final, t.layers.back().output); // no final norm
        }
    }

    void badConfig_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("field");
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("heads") << "bart-tiny"
                               << "decoder_attention_heads" << QJsonValue(2)
                               << "config.json: decoder_attention_heads: 2 differs from encoder_attention_heads 4";
        QTest::newRow("ffn") << "bart-tiny"
                             << "encoder_ffn_dim" << QJsonValue(24)
                             << "config.json: decoder_ffn_dim: 20 differs from encoder_ffn_dim 24";
        QTest::newRow("divide") << "bart-tiny"
                                << "d_model" << QJsonValue(18)
                                << "config.json: encoder_attention_heads: 4 does not divide d_model 18";
        QTest::newRow("untied") << "bart-tiny"
                                << "tie_word_embeddings" << QJsonValue(false)
                                << "config.json: tie_word_embeddings: false: an untied lm_head is not read yet";
        QTest::newRow("activation") << "bart-tiny"
                                    << "activation_function" << QJsonValue("tanh")
                                    << "config.json: activation_function: \"tanh\" is not an activation";
        QTest::newRow("start id") << "bart-tiny"
                                  << "decoder_start_token_id" << QJsonValue(288)
                                  << "config.json: decoder_start_token_id: 288 is not below vocab_size 288";
        QTest::newRow("mbart start")
            << "mbart-tiny"
            << "decoder_start_token_id" << QJsonValue(QJsonValue::Null)
            << "config.json: decoder_start_token_id: missing: mBART starts the decoder with the target "
               "language's code";
        QTest::newRow("layers") << "bart-tiny"
                                << "encoder_layers" << QJsonValue(0)
                                << "config.json: encoder_layers: must be an integer in [1, 1,024], got 0";
    }
    void badConfig()
    {
        QFETCH(QString, model);
        QFETCH(QString, field);
        QFETCH(QJsonValue, value);
        QFETCH(QString, message);
        const std::string got = configError(model, [&](QJsonObject &o) {
            if (value.isNull())
                o.remove(field);
            else
                o[field] = value;
        });
        QVERIFY2(got.find(message.toStdString()) == 0, got.c_str());
    }

    // A config whose max_position_embeddings does not fit the tables: the message names the file,
    // the tensor and both shapes (rows = max_position_embeddings + 2).
    void wrongShape()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QVERIFY(copyFixture(QStringLiteral("bart-tiny"), dir,
                            [](QJsonObject &o) { o[QStringLiteral("max_position_embeddings")] = 21; }));
        std::unique_ptr<Model> m;
        const Status st = openPretrained(dir.path().toStdString(), {}, m);
        QVERIFY(!st);
        QVERIFY2(st.message.find(
                     "model.safetensors: model.encoder.embed_positions.weight: shape (22, 16), expected (23, 16)") !=
                     std::string::npos,
                 st.message.c_str());
        QVERIFY(!m);
    }

    // bart-tiny's vocab.json + merges.txt (a byte-level BPE laid out as BartTokenizer's): the source
    // as BartTokenizer encodes it, <s> ... </s>, against make_bart.py's merges by rank.
    void tokenize()
    {
        Model *m = opened(QStringLiteral("bart-tiny"));
        QVERIFY(m);
        QCOMPARE(m->info().tokenizer, std::string("byte-level BPE (278)"));
        QCOMPARE(m->info().maxPositions, 20); // max_position_embeddings
        for (const QJsonValue &v : expected(QStringLiteral("bart-tiny")).value(QStringLiteral("tokenized")).toArray()) {
            const QJsonObject c = v.toObject();
            std::vector<TraceToken> tokens;
            const Status st = m->tokenize(c.value(QStringLiteral("text")).toString().toStdString(), tokens);
            QVERIFY2(st.ok(), st.message.c_str());
            std::vector<int> ids;
            for (const TraceToken &t : tokens)
                ids.push_back(t.id);
            QCOMPARE(ids, intsOf(c.value(QStringLiteral("ids")).toArray()));
            QVERIFY(tokens.front().special && tokens.back().special);
            QCOMPARE(tokens.front().text, std::string("<s>"));
        }
        // a typed target: the decoder reads </s> (the start), then <s> and the words, no final </s>
        TraceRequest r;
        r.text = "the end";
        r.target = "the way";
        Trace<float> t;
        const Status st = m->trace(r, t);
        QVERIFY2(st.ok(), st.message.c_str());
        std::vector<int> decoder;
        for (const TraceToken &x : t.tokens)
            decoder.push_back(x.id);
        QCOMPARE(decoder, (std::vector<int>{2, 0, 271, 276}));
        QCOMPARE(t.tokens[2].display, std::string("the"));
        QCOMPARE(t.tokens[3].display, std::string("\xE2\x90\xA3way")); // Ġ as a visible space
    }

    // More tokens than positions: refused, naming the field; ids outside the vocabulary too.
    void badInput()
    {
        Model *m = opened(QStringLiteral("bart-tiny"));
        QVERIFY(m);
        TraceRequest r;
        r.ids.assign(21, 5);
        Trace<float> t;
        Status st = m->trace(r, t);
        QVERIFY(!st);
        QVERIFY2(st.message.find(
                     "the source: 21 tokens, more than the 20 positions the model has (max_position_embeddings)") !=
                     std::string::npos,
                 st.message.c_str());
        r.ids = {0, 288, 2};
        st = m->trace(r, t);
        QVERIFY(!st);
        QVERIFY2(st.message.find("token id 288 is outside the vocabulary (288)") != std::string::npos,
                 st.message.c_str());
        // no tokenizer file in mbart-tiny: text is refused in one line, ids trace
        std::vector<TraceToken> tokens;
        st = opened(QStringLiteral("mbart-tiny"))->tokenize("hello", tokens);
        QVERIFY(!st);
        QVERIFY2(st.message.find("mbart-tiny/sentencepiece.bpe.model: missing (mBART's tokenizer): only token ids trace") !=
                     std::string::npos,
                 st.message.c_str());
    }
};

QTEST_APPLESS_MAIN(TestBart)
#include "tst_bart.moc"
