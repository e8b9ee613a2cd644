// SPDX-License-Identifier: GPL-3.0-or-later
// T5 GGUF files as models (tests/fixtures/gguf/t5.gguf, t5-v1_1.gguf, t5encoder.gguf, made by
// make_gguf_t5.py from the tiny T5 folders as llama.cpp's converter makes them): the same
// encoder-decoder model as the folder, with the one thing a file cannot say taken as llama.cpp takes
// it (the relative attention's max distance, 128); every attention of every layer and head, hidden
// states and logits against the folder's float64 reference and against the folder traced by
// attnviz; generated ids; the tokenizer from the metadata against the folder's spiece.model run by
// the SentencePiece library; t5encoder.gguf (the encoder alone) opened encoder-only, its attention
// that of t5.gguf's encoder; bad files refused with one line.
#include "testpaths.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/gguf.h"
#include "attnviz/pretrained.h"
#include "attnviz/subword.h"
#include "attnviz/tensorarchive.h"
#include "modelchecks.h"
#include "seq2seqchecks.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

QString gguf(const QString &name) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/")) + name; }

Model *openedGguf(const QString &name)
{
    static std::map<QString, std::unique_ptr<Model>> models;
    std::unique_ptr<Model> &m = models[name];
    if (!m) {
        const Status st = openPretrained(gguf(name).toStdString(), {}, m);
        if (!st)
            qWarning("%s", st.message.c_str());
    }
    return m.get();
}

// The folder `model` as the GGUF file means it: config.json's relative_attention_max_distance 128.
Model *folderAt128(const QString &model)
{
    static std::map<QString, std::pair<std::unique_ptr<QTemporaryDir>, std::unique_ptr<Model>>> copies;
    auto &[dir, m] = copies[model];
    if (!m) {
        dir = std::make_unique<QTemporaryDir>();
        if (!copyFixture(model, *dir, [](QJsonObject &o) { o[QStringLiteral("relative_attention_max_distance")] = 128; }) ||
            !QFile::copy(fixture(model) + QStringLiteral("/spiece.model"), dir->filePath(QStringLiteral("spiece.model"))))
            return nullptr;
        if (const Status st = openPretrained(dir->path().toStdString(), {}, m); !st)
            qWarning("%s", st.message.c_str());
    }
    return m.get();
}

// The largest difference over every stage of two encoder-decoder traces: both stacks' attentions
// (every head), q/k/v, block outputs, final states, every probability.
template <typename T> double seq2seqDifference(const Trace<T> &a, const Trace<T> &b)
{
    Trace<T> ea, eb;
    ea.layers = a.seq2seq.encoder;
    eb.layers = b.seq2seq.encoder;
    ea.final = a.seq2seq.encoderFinal;
    eb.final = b.seq2seq.encoderFinal;
    Trace<T> ca, cb;
    ca.layers = a.seq2seq.cross;
    cb.layers = b.seq2seq.cross;
    return std::max({traceDifference(a, b), traceDifference(ea, eb), traceDifference(ca, cb)});
}

template <typename T> Status traceOf(Model &m, const QJsonObject &c, Trace<T> &t)
{
    TraceRequest r;
    r.ids = intsOf(c.value(QStringLiteral("source")).toArray());
    r.targetIds = intsOf(c.value(QStringLiteral("target")).toArray());
    r.allPredictions = true;
    r.topK = m.info().vocabulary;
    return m.trace(r, t);
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The offset of metadata `key`'s value in `file` (after its name and type), -1 if absent.
qsizetype valueAt(const QByteArray &file, const QByteArray &key)
{
    const qsizetype at = file.indexOf(key);
    return at < 0 ? -1 : at + key.size() + 4;
}

} // namespace

class TestGgufSeq2Seq : public QObject {
    Q_OBJECT
private slots:
    void architecture()
    {
        for (const auto &[file, folder] : {std::pair{QStringLiteral("t5.gguf"), QStringLiteral("t5-tiny")},
                                           {QStringLiteral("t5-v1_1.gguf"), QStringLiteral("t5-v1_1-tiny")}}) {
            Model *g = openedGguf(file);
            Model *f = opened(folder);
            QVERIFY(g && f);
            const Architecture a = g->info().architecture, b = f->info().architecture;
            QVERIFY(a.encoderDecoder);
            QCOMPARE(a.family, std::string("t5"));
            QCOMPARE(a.seq2seq.encoderLayers, 2); // t5.block_count
            QCOMPARE(a.layers, 3);                // t5.decoder_block_count
            for (const auto &[x, y] : {std::pair{a.heads, b.heads}, {a.kvHeads, b.kvHeads}, {a.dHead, b.dHead},
                                       {a.dModel, b.dModel}, {a.dFeedForward, b.dFeedForward}, {a.vocabulary, b.vocabulary},
                                       {a.relative.buckets, b.relative.buckets}, {a.seq2seq.padId, b.seq2seq.padId},
                                       {a.seq2seq.eosId, b.seq2seq.eosId},
                                       {a.seq2seq.decoderStartId, b.seq2seq.decoderStartId}})
                QCOMPARE(x, y);
            QCOMPARE(a.gatedMlp, b.gatedMlp);
            QCOMPARE(int(a.activation), int(b.activation));
            QCOMPARE(a.tiedEmbeddings, b.tiedEmbeddings);
            QCOMPARE(a.outputScale, b.outputScale); // d_model^-0.5 when tied, as Hugging Face (not llama.cpp)
            QCOMPARE(a.normEps, b.normEps);
            QCOMPARE(a.attentionScale, 1.0);
            // not in the file: llama.cpp's hard-coded 128; the folders say 12
            QCOMPARE(a.relative.maxDistance, 128);
            QCOMPARE(b.relative.maxDistance, 12);
            QCOMPARE(g->info().name, file.toStdString());
            QVERIFY2(g->info().dtype.rfind("F32 (GGUF; ", 0) == 0, g->info().dtype.c_str());
            QCOMPARE(g->info().tokenizer, std::string("SentencePiece Unigram (GGUF metadata) (448)"));
            QCOMPARE(g->info().parameters, f->info().parameters);
        }
        QCOMPARE(int(openedGguf(QStringLiteral("t5-v1_1.gguf"))->info().architecture.activation), int(Activation::GeluTanh));
        QCOMPARE(int(openedGguf(QStringLiteral("t5.gguf"))->info().architecture.activation), int(Activation::Relu));
    }

    // The short case (4 source, 3 target tokens) puts no two tokens where max distance 12 and 128
    // bucket apart: the file reproduces the folder's float64 reference at every stage.
    void againstTheReference_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("folder");
        QTest::newRow("t5") << QStringLiteral("t5.gguf") << QStringLiteral("t5-tiny");
        QTest::newRow("t5-v1_1") << QStringLiteral("t5-v1_1.gguf") << QStringLiteral("t5-v1_1-tiny");
    }
    void againstTheReference()
    {
        QFETCH(QString, file);
        QFETCH(QString, folder);
        Model *g = openedGguf(file);
        QVERIFY(g);
        const QJsonObject c = expectedCase(folder, 1);
        QCOMPARE(c.value(QStringLiteral("source")).toArray().size(), 4);
        checkSeq2SeqTraceOf<float>(*g, c, 1e-5);
        checkSeq2SeqTraceOf<double>(*g, c, 1e-10);
    }

    // The long case (15 source tokens: every bucket in both directions): the file equals the folder
    // at max distance 128, value for value, and differs from the folder at its own 12.
    void sameAsTheFolder_data() { againstTheReference_data(); }
    void sameAsTheFolder()
    {
        QFETCH(QString, file);
        QFETCH(QString, folder);
        Model *g = openedGguf(file);
        Model *f = folderAt128(folder);
        QVERIFY(g && f);
        const QJsonObject c = expectedCase(folder, 0);
        Trace<float> a, b, original;
        Status st = traceOf(*g, c, a);
        QVERIFY2(st.ok(), st.message.c_str());
        QVERIFY2((st = traceOf(*f, c, b)).ok(), st.message.c_str());
        QCOMPARE(int(a.seq2seq.encoder.size()), 2);
        QCOMPARE(int(a.seq2seq.cross.size()), 3);
        QCOMPARE(int(a.layers.size()), 3);
        QVERIFY(seq2seqDifference(a, b) <= 1e-5);
        QCOMPARE(seq2seqDifference(a, b), 0.0); // the same float32 weights, the same arithmetic
        Trace<double> ad, bd;
        QVERIFY((st = traceOf(*g, c, ad)).ok());
        QVERIFY((st = traceOf(*f, c, bd)).ok());
        QCOMPARE(seq2seqDifference(ad, bd), 0.0);
        // the folder as it is (max distance 12) buckets distances 5.. apart: its encoder attends otherwise
        QVERIFY((st = traceOf(*opened(folder), c, original)).ok());
        QVERIFY(seq2seqDifference(a, original) > 1e-3);
    }

    // Greedy and beam-search generation from text: the file's ids, tokens and text are the folder's.
    void generation_data() { againstTheReference_data(); }
    void generation()
    {
        QFETCH(QString, file);
        QFETCH(QString, folder);
        Model *g = openedGguf(file);
        Model *f = folderAt128(folder);
        QVERIFY(g && f);
        bool padRows = false; // an id past the spiece.model's 400 pieces: a "[PAD<id>]" row, decoded as nothing
        for (const char *text : {"the cat sat on the mat", "Hello, world! 1998-03-03", "a"}) {
            for (int beams : {1, 3}) {
                TraceRequest r;
                r.text = text;
                Seq2SeqGenerateOptions o;
                o.beams = beams;
                o.maxNew = 12;
                Seq2SeqGeneration x, y;
                Status st = generateTarget(*g, r, o, x);
                QVERIFY2(st.ok(), st.message.c_str());
                QVERIFY2((st = generateTarget(*f, r, o, y)).ok(), st.message.c_str());
                QVERIFY(!x.ids.empty());
                QCOMPARE(x.ids, y.ids);
                QCOMPARE(x.text, y.text);
                QCOMPARE(x.source.size(), y.source.size());
                QCOMPARE(x.logProb, y.logProb);
                for (int id : x.ids)
                    padRows = padRows || id >= 400;
            }
        }
        if (file == QStringLiteral("t5-v1_1.gguf")) // its untied head reaches the padded rows
            QVERIFY(padRows);
        // the start token and the settings a file without generation_config.json has: transformers' defaults
        Seq2SeqGenerationSettings s;
        QVERIFY(generationSettings(*g, s).ok());
        QCOMPARE(s.numBeams, 1);
        QCOMPARE(s.maxLength, 20);
    }

    // tokenizer.ggml.* (pieces, scores, types, the precompiled charsmap) put back into a SentencePiece
    // model gives the ids spiece.model gives: NFKC (ligatures, full-width), accents, whitespace
    // runs, unknown characters (byte fallback), newlines and tabs, the empty text.
    void tokenizer()
    {
        Model *g = openedGguf(QStringLiteral("t5.gguf"));
        QVERIFY(g);
        std::unique_ptr<SubwordTokenizer> spm;
        const Status st = loadSentencePiece(fixture(QStringLiteral("t5-tiny")).toStdString() + "/spiece.model", true, spm);
        QVERIFY2(st.ok(), st.message.c_str());
        const char *corpus[] = {"the cat sat on the mat", "  leading and   inner   runs  ", "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9",
                                "cafe\xCC\x81 (combining accent)", "\xEF\xAC\x81nance \xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3 \xE2\x91\xA0",
                                "tabs\tand\nnewlines\r\n", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 \xE2\x82\xAC" "5",
                                "</s> <pad> <unk> as text", "", " ", "UPPER lower MiXeD 12345"};
        int unknownOrBytes = 0;
        for (const char *text : corpus) {
            std::vector<TraceToken> a, b;
            QVERIFY(g->tokenize(text, a).ok());
            QVERIFY(spm->encode(text, b).ok());
            QCOMPARE(a.size(), b.size());
            std::vector<int> ia, ib;
            for (size_t i = 0; i < a.size(); ++i) {
                ia.push_back(a[i].id);
                ib.push_back(b[i].id);
                QCOMPARE(a[i].text, b[i].text);
                QCOMPARE(a[i].begin, b[i].begin);
                QCOMPARE(a[i].end, b[i].end);
                unknownOrBytes += a[i].id >= 3 && a[i].id < 3 + 256;
            }
            QVERIFY2(ia == ib, text);
            QCOMPARE(ia.back(), 1); // </s> appended
            QCOMPARE(g->decode(ia), spm->decode(ib));
        }
        QVERIFY(unknownOrBytes > 0); // the corpus reached the byte pieces
    }

    // A tied T5 whose checkpoint stored lm_head.weight too: the converter writes it as `output`, the
    // same bytes as token_embd. Read as tied (scaled by d_model^-0.5, as Hugging Face's T5 with
    // tie_word_embeddings), not as an untied head: the file computes what the tied folder computes.
    void tiedOutputStoredToo()
    {
        const QString from = gguf(QStringLiteral("t5-v1_1.gguf"));
        QByteArray b = readAll(from);
        TensorArchive archive;
        QVERIFY(archive.openGguf(from.toStdString()).ok());
        const TensorEntry *out = archive.find("output.weight"), *tok = archive.find("token_embd.weight");
        QVERIFY(out && tok && out->bytes == tok->bytes);
        std::memcpy(b.data() + out->offset, b.constData() + tok->offset, tok->bytes);
        QTemporaryDir dir, folder;
        const QString path = dir.filePath(QStringLiteral("tied.gguf"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(b);
        f.close();
        std::unique_ptr<Model> g, h;
        Status st = openPretrained(path.toStdString(), {}, g);
        QVERIFY2(st.ok(), st.message.c_str());
        QVERIFY(g->info().architecture.tiedEmbeddings);
        QCOMPARE(g->info().architecture.outputScale, 0.25);
        QVERIFY(copyFixture(QStringLiteral("t5-v1_1-tiny"), folder, [](QJsonObject &o) {
            o[QStringLiteral("relative_attention_max_distance")] = 128;
            o[QStringLiteral("tie_word_embeddings")] = true;
        }));
        QVERIFY((st = openPretrained(folder.path().toStdString(), {}, h)).ok());
        const QJsonObject c = expectedCase(QStringLiteral("t5-v1_1-tiny"), 0);
        Trace<float> x, y;
        QVERIFY((st = traceOf(*g, c, x)).ok());
        QVERIFY((st = traceOf(*h, c, y)).ok());
        QCOMPARE(seq2seqDifference(x, y), 0.0);
        Trace<float> untied; // the file as it was: its own head, unscaled
        QVERIFY((st = traceOf(*openedGguf(QStringLiteral("t5-v1_1.gguf")), c, untied)).ok());
        QVERIFY(seq2seqDifference(x, untied) > 1e-3);
    }

    // t5encoder.gguf: t5-tiny's encoder alone, an encoder-only model whose layers are the encoder's
    // blocks; every layer's and head's weights, hidden states and scores (T5's bias in them) those of
    // t5.gguf's encoder on the same text, float32 and float64; nothing predicted; masks and edits
    // refused in one line.
    void encoderAlone()
    {
        std::unique_ptr<Model> m;
        Status st = openPretrained(gguf(QStringLiteral("t5encoder.gguf")).toStdString(), {}, m);
        QVERIFY2(st.ok(), st.message.c_str());
        Model *full = openedGguf(QStringLiteral("t5.gguf"));
        QVERIFY(full);
        const ModelInfo info = m->info(), fullInfo = full->info();
        QCOMPARE(info.family, std::string("t5encoder"));
        QVERIFY(!info.causal && !info.maskedLm && !info.architecture.encoderDecoder);
        QCOMPARE(info.layers, fullInfo.architecture.seq2seq.encoderLayers);
        QVERIFY(info.layers != fullInfo.layers); // t5-tiny: 2 encoder blocks, 3 decoder blocks
        QCOMPARE(info.heads, fullInfo.heads);
        QCOMPARE(info.architecture.positions, PositionKind::RelativeBuckets);
        TraceRequest req;
        req.text = "the 3rd of March, 1998";
        req.keepScores = true;
        Trace<float> enc, both;
        QVERIFY((st = m->trace(req, enc)).ok());
        QVERIFY((st = full->trace(req, both)).ok());
        QCOMPARE(enc.numLayers(), int(both.seq2seq.encoder.size()));
        QCOMPARE(enc.tokens.size(), both.seq2seq.sourceTokens.size());
        for (size_t i = 0; i < enc.tokens.size(); ++i)
            QCOMPARE(enc.tokens[i].id, both.seq2seq.sourceTokens[i].id);
        QVERIFY(enc.predictions.next.empty() && enc.predictions.masked.empty());
        QVERIFY(!enc.encoderDecoder());
        for (int l = 0; l < enc.numLayers(); ++l) {
            const SequenceResult<float> &a = enc.layers[size_t(l)].attention.batch.front();
            const SequenceResult<float> &b = both.seq2seq.encoder[size_t(l)].attention.batch.front();
            QCOMPARE(int(a.weights.size()), info.heads);
            QVERIFY(a.mask.size() == 0); // bidirectional
            for (int h = 0; h < info.heads; ++h) {
                QCOMPARE(Mat<float>(a.weights[size_t(h)].toDense()), Mat<float>(b.weights[size_t(h)].toDense()));
                QCOMPARE(a.scores[size_t(h)], b.scores[size_t(h)]);
            }
            QCOMPARE(enc.layers[size_t(l)].output, both.seq2seq.encoder[size_t(l)].output);
        }
        QCOMPARE(enc.final, both.seq2seq.encoderFinal);
        Trace<double> enc64, both64;
        QVERIFY((st = m->trace(req, enc64)).ok());
        QVERIFY((st = full->trace(req, both64)).ok());
        for (int l = 0; l < enc64.numLayers(); ++l)
            for (int h = 0; h < info.heads; ++h)
                QCOMPARE(Mat<double>(enc64.layers[size_t(l)].attention.batch.front().weights[size_t(h)].toDense()),
                         Mat<double>(both64.seq2seq.encoder[size_t(l)].attention.batch.front().weights[size_t(h)].toDense()));
        TraceRequest masked = req;
        masked.paddedKeys = {1};
        st = m->trace(masked, enc);
        QVERIFY(!st.ok());
        QCOMPARE(st.message, std::string("masks on a T5 encoder (t5encoder) are not computed yet"));
    }

    void refusals()
    {
        QTemporaryDir dir;
        const QByteArray good = readAll(gguf(QStringLiteral("t5.gguf")));
        QVERIFY(!good.isEmpty());
        auto tryOpen = [&](const QByteArray &bytes, const char *needle) {
            const QString path = dir.filePath(QStringLiteral("bad.gguf"));
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(bytes);
            f.close();
            std::unique_ptr<Model> bad;
            const Status s = openPretrained(path.toStdString(), {}, bad);
            QVERIFY(!s.ok());
            QVERIFY2(s.message.rfind(path.toStdString() + ": ", 0) == 0, s.message.c_str());
            QVERIFY2(s.message.find('\n') == std::string::npos, s.message.c_str());
            QVERIFY2(s.message.find(needle) != std::string::npos, s.message.c_str());
        };
        QByteArray b = good;
        b.replace("t5.attention.relative_buckets_count", "t5.attention.relative_buckets_counX");
        tryOpen(b, "metadata \"t5.attention.relative_buckets_count\": missing");
        b = good;
        b.replace("t5.attention.layer_norm_rms_epsilon", "t5.attention.layer_norm_rms_epsiloX");
        tryOpen(b, "metadata \"t5.attention.layer_norm_rms_epsilon\": missing");
        b = good; // UMT5: a bias in every layer
        b.replace("enc.blk.0.attn_rel_b.weight", "enc.blk.1.attn_rel_b.weight");
        tryOpen(b, "tensor \"enc.blk.1.attn_rel_b.weight\": a relative position bias in a layer other than 0");
        b = good;
        b.replace("dec.blk.2.cross_attn_k.weight", "dec.blk.2.cross_attn_X.weight");
        tryOpen(b, "dec.blk.2.cross_attn_k.weight: missing");
        b = good; // key_length 5: every q/k/v/o has the wrong shape
        const qsizetype kl = valueAt(b, "t5.attention.key_length"), vl = valueAt(b, "t5.attention.value_length");
        QVERIFY(kl > 0 && vl > 0);
        const uint32_t five = 5;
        std::memcpy(b.data() + kl, &five, 4);
        std::memcpy(b.data() + vl, &five, 4);
        tryOpen(b, "shape (24, 16), expected (20, 16)");
        b = good; // value_length alone
        std::memcpy(b.data() + vl, &five, 4);
        tryOpen(b, "metadata \"t5.attention.value_length\": 5 differs from key_length 6");
        b = good;
        b.replace("tokenizer.ggml.scores", "tokenizer.ggml.scoreX");
        tryOpen(b, "metadata \"tokenizer.ggml.scores\": missing (a Unigram vocabulary segments by its scores)");
        b = good; // an unknown vocabulary type
        const qsizetype tm = valueAt(b, "tokenizer.ggml.model");
        QVERIFY(tm > 0 && b.mid(tm + 8, 2) == "t5");
        b[tm + 9] = '6';
        tryOpen(b, "metadata \"tokenizer.ggml.model\": \"t6\" is not a tokenizer attnviz reads from GGUF (gpt2, llama, t5)");
        b = good; // the charsmap's elements as bool: llama.cpp asserts int8 / uint8
        const qsizetype cm = valueAt(b, "tokenizer.ggml.precompiled_charsmap");
        QVERIFY(cm > 0);
        const uint32_t boolType = uint32_t(GgufValueType::Bool);
        std::memcpy(b.data() + cm, &boolType, 4);
        tryOpen(b, "metadata \"tokenizer.ggml.precompiled_charsmap\": type array of bool, expected array of uint8");
    }
};

QTEST_GUILESS_MAIN(TestGgufSeq2Seq)
#include "tst_ggufseq2seq.moc"
